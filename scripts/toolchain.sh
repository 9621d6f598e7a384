#!/usr/bin/env bash
# Make sure a Rust toolchain (1.95 or newer) with rustfmt and clippy is on PATH.
set -euo pipefail
if [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "installing the Rust toolchain with rustup ..." >&2
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal \
    --component rustfmt,clippy
fi
