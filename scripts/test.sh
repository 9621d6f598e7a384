#!/usr/bin/env bash
# Run the test suite from a fresh Debian/Ubuntu checkout: installs what it needs, then tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/toolchain.sh
bash packaging/deps.sh
bash scripts/test-tools.sh
venv="${FRAMECULL_VENV:-target/python-venv}"
FRAMECULL_MOTO_SERVER="$(cd "$venv" && pwd)/bin/moto_server"
FRAMECULL_WSGIDAV="$(cd "$venv" && pwd)/bin/wsgidav"
export FRAMECULL_MOTO_SERVER FRAMECULL_WSGIDAV
azurite_dir=target/azurite
FRAMECULL_AZURITE="$(cd "$azurite_dir" && pwd)/node_modules/.bin/azurite-blob"
export FRAMECULL_AZURITE
# Every crate of the workspace (the library's crates' own tests too) but the Python extension,
# which scripts/python.sh builds and tests.
cargo test --workspace --exclude framecull-python --all-targets --features framecull/fault-injection
# The Python package: built into a venv, then its pytest suite.
bash scripts/python.sh
