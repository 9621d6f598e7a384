#!/usr/bin/env bash
# Run framecull from a fresh Debian/Ubuntu checkout: installs system packages, builds, installs
# the binary as `framecull` on PATH, runs it. Without arguments it opens the demo dataset; any
# arguments are passed to `framecull`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/toolchain.sh
if [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
bash packaging/deps.sh
# The dev profile (as the tests; a release build takes ~15 minutes on 2 cores), installed into
# cargo's bin folder (~/.cargo/bin, which rustup puts on PATH), so that the commands framecull
# prints as next steps work when typed.
cargo install --quiet --locked --debug --force --path . --target-dir "${CARGO_TARGET_DIR:-target}"
bin="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin/framecull"
if [ "$(command -v framecull || true)" != "$bin" ]; then
  echo "note: framecull is installed as $bin; add $(dirname "$bin") to PATH (rustup's ~/.cargo/env does) to type its commands" >&2
fi
if (($# == 0)); then set -- demo; fi
exec "$bin" "$@"
