#!/usr/bin/env bash
# What the tests need besides the build, installed once (each step is skipped or quick when
# done): Slurm and munge (apt), the Python venv with the servers and packages the tests use,
# and Azurite (npm). scripts/test.sh runs it; CI runs it beside the lints, as it is mostly
# downloads.
set -euo pipefail
cd "$(dirname "$0")/.."
# Slurm and munge for the cluster test (python/tests/test_cluster.py starts its own cluster).
bash scripts/slurm.sh install
# An S3-compatible server for the object-storage tests (tests/it/storage/, one in
# tests/it/gui/): moto's, installed into the Python venv scripts/python.sh uses; it also
# answers GCS's XML API for the gs:// test. WsgiDAV, a WebDAV server, serves a folder for the
# https:// test. The rest is what scripts/python.sh builds and tests the package with.
venv="${FRAMECULL_VENV:-target/python-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check "moto[server]>=5,<6" \
  "azure-storage-blob>=12,<13" "wsgidav>=4,<5" "cheroot>=10,<12" \
  -r python/requirements-test.txt
# Azurite, Microsoft's Azure Storage emulator, for the az:// test in tests/it/storage/ (blobs
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
