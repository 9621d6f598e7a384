#!/usr/bin/env bash
# Build the Python package (python/) into a venv of its own and run its tests:
#   bash scripts/python.sh            # build, then pytest python/tests
#   bash scripts/python.sh --no-test  # build only; then: . target/python-venv/bin/activate
# The venv ($FRAMECULL_VENV, default target/python-venv) gets python/requirements-test.txt
# (maturin, the package's dependencies, pytest, PyAV, Ray, PyYAML). torch is not installed:
# the torch adapter's tests run when it is (`target/python-venv/bin/pip install torch`).
# scripts/test-tools.sh also installs the storage servers the Rust tests start into it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${FRAMECULL_VENV:-target/python-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
venv="$(cd "$venv" && pwd)"
"$venv/bin/pip" install -q --disable-pip-version-check -r python/requirements-test.txt
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
# The loader decodes in worker processes of that binary (its default when it finds one).
export FRAMECULL_WORKER_EXE="${FRAMECULL_WORKER_EXE:-$FRAMECULL_BIN}"
cd python
exec "$venv/bin/python" -m pytest -q --durations=12 tests
