#!/usr/bin/env bash
# Screenshot of the real window under Xvfb (software Vulkan), for docs and review.
# usage: scripts/screenshot.sh OUT.png [framecull args...]   (default: the demo project)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/screenshot.png}; shift || true
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/framecull-xdg-$(id -u)}"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 0700 "$XDG_RUNTIME_DIR"
bin=${FRAMECULL_BIN:-target/debug/framecull}
display=:${DISPLAY_NUM:-77}
Xvfb "$display" -screen 0 1440x900x24 >/dev/null 2>&1 &
xvfb=$!
trap 'kill $app $xvfb 2>/dev/null || true' EXIT
sleep 1
DISPLAY=$display WAYLAND_DISPLAY= "$bin" "$@" >/tmp/framecull-screenshot.log 2>&1 &
app=$!
sleep "${WAIT_SECS:-8}"
DISPLAY=$display import -window root "$out"
echo "$out"
