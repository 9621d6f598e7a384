#!/usr/bin/env bash
# Run the test suite from a fresh Debian/Ubuntu checkout: installs what it needs, then tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/toolchain.sh
bash packaging/deps.sh
# Slurm and munge for the cluster test (python/tests/test_cluster.py starts its own cluster).
bash scripts/slurm.sh install
# An S3-compatible server for the object-storage tests (tests/storage.rs, one in
# tests/gui.rs): moto's, installed into the Python venv scripts/python.sh uses, and named to
# the tests by its path.
venv="${FRAMECULL_VENV:-target/python-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check "moto[server]>=5,<6"
FRAMECULL_MOTO_SERVER="$(cd "$venv" && pwd)/bin/moto_server"
export FRAMECULL_MOTO_SERVER
cargo test --all-targets --features fault-injection
# The Python package: built into a venv, then its pytest suite.
bash scripts/python.sh
