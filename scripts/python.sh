#!/usr/bin/env bash
# Build the Python package (python/) into a venv of its own and run its tests:
#   bash scripts/python.sh            # build, then pytest python/tests
#   bash scripts/python.sh --no-test  # build only; then: . target/python-venv/bin/activate
# The venv ($FRAMECULL_VENV, default target/python-venv) gets maturin, numpy, pyarrow, pytest,
# PyAV (the reference decoder of the corpus test), Ray (framecull.ray and its cluster test)
# and PyYAML (the Kubernetes manifests' test). torch is not installed: the torch adapter's
# tests run when it is (`target/python-venv/bin/pip install torch`). scripts/test.sh also
# installs moto's S3 server into it for tests/storage.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${FRAMECULL_VENV:-target/python-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
venv="$(cd "$venv" && pwd)"
"$venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.8,<2" numpy pyarrow pytest av ray pyyaml
# A development build (the dev profile, like the tests), installed editable into the venv.
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" \
  "$venv/bin/maturin" develop --quiet --manifest-path python/Cargo.toml
if [ "${1:-}" = "--no-test" ]; then
  exit 0
fi
# The tests scan and export with this checkout's command line.
export FRAMECULL_BIN="${FRAMECULL_BIN:-$PWD/target/debug/framecull}"
if [ ! -x "$FRAMECULL_BIN" ]; then
  cargo build --bin framecull
fi
cd python
exec "$venv/bin/python" -m pytest -q tests
