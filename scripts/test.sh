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
# the tests by its path; it also answers GCS's XML API for the gs:// test. WsgiDAV, a WebDAV
# server, serves a folder for the https:// test.
venv="${FRAMECULL_VENV:-target/python-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check "moto[server]>=5,<6" \
  "azure-storage-blob>=12,<13" "wsgidav>=4,<5" "cheroot>=10,<12"
FRAMECULL_MOTO_SERVER="$(cd "$venv" && pwd)/bin/moto_server"
FRAMECULL_WSGIDAV="$(cd "$venv" && pwd)/bin/wsgidav"
export FRAMECULL_MOTO_SERVER FRAMECULL_WSGIDAV
# Azurite, Microsoft's Azure Storage emulator, for the az:// test in tests/storage.rs (blobs
# uploaded with azure-storage-blob from the venv above). npm comes with Node.js; Debian packs
# it apart.
if ! command -v npm >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    nodejs npm >/dev/null
fi
azurite_dir=target/azurite
if [ ! -x "$azurite_dir/node_modules/.bin/azurite-blob" ]; then
  mkdir -p "$azurite_dir"
  npm install --prefix "$azurite_dir" --no-audit --no-fund --silent "azurite@3"
fi
FRAMECULL_AZURITE="$(cd "$azurite_dir" && pwd)/node_modules/.bin/azurite-blob"
export FRAMECULL_AZURITE
cargo test --all-targets --features fault-injection
# The Python package: built into a venv, then its pytest suite.
bash scripts/python.sh
