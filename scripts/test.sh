#!/usr/bin/env bash
# Run the test suite from a fresh Debian/Ubuntu checkout: installs what it needs, then tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/toolchain.sh
bash packaging/deps.sh
cargo test --all-targets
# The Python package: built into a venv, then its pytest suite.
bash scripts/python.sh
