#!/usr/bin/env bash
# Run the test suite from a fresh Debian/Ubuntu checkout: installs what it needs, then tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/toolchain.sh
bash packaging/deps.sh
# Slurm and munge for the cluster test (python/tests/test_cluster.py starts its own cluster).
bash scripts/slurm.sh install
cargo test --all-targets
# The Python package: built into a venv, then its pytest suite.
bash scripts/python.sh
