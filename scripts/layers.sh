#!/usr/bin/env bash
# The library's layers, as Cargo sees them: each crate of crates/ may depend (directly) on the
# framecull crates listed for it and on no other, and neither it nor the Python extension
# pulls in a GUI crate. Cargo already refuses cycles; this refuses an edge that runs across or
# back up the layers without making one (docs/ARCHITECTURE.md draws the same graph).
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A allowed=(
  [model]=""
  [storage]=""
  [analysis]="model"
  [media]="model storage"
  [catalog]="analysis model"
  [manifest]="analysis catalog model"
  [scan]="analysis catalog media model storage"
  [loader]="manifest media model storage"
)
status=0
for dir in crates/framecull-*/; do
  crate=${dir#crates/framecull-}
  crate=${crate%/}
  if [[ ! -v allowed[$crate] ]]; then
    echo "layers: crates/framecull-$crate has no entry in scripts/layers.sh" >&2
    status=1
    continue
  fi
  uses=$(cargo tree -p "framecull-$crate" -e normal --depth 1 --prefix none --offline \
    | tail -n +2 | sed -n 's/^framecull-\([a-z]*\) .*/\1/p' | sort -u | tr '\n' ' ')
  for used in $uses; do
    if [[ " ${allowed[$crate]} " != *" $used "* ]]; then
      echo "layers: framecull-$crate depends on framecull-$used (allowed: ${allowed[$crate]:-none})" >&2
      status=1
    fi
  done
done
for crate in "${!allowed[@]}" python; do
  if cargo tree -p "framecull-$crate" -e normal --prefix none --offline \
    | grep -E '^(egui|eframe|winit|egui-wgpu|rfd|clap)[ @]'; then
    echo "layers: framecull-$crate pulls in a GUI or command-line crate" >&2
    status=1
  fi
done
exit $status
