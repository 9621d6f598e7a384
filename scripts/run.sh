#!/usr/bin/env bash
# Run framecull from a fresh Debian/Ubuntu checkout: installs system packages, builds, runs.
# Without arguments it opens the demo dataset; any arguments are passed to `framecull`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/toolchain.sh
bash packaging/deps.sh
if (($# == 0)); then set -- demo; fi
exec cargo run --quiet -- "$@"
