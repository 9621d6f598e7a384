#!/usr/bin/env bash
# Screenshot of the real window under Xvfb (software Vulkan), for docs and review.
# usage: [ACTIONS="click X Y; move X Y; drag X1 Y1 X2 Y2; key Right Right i"] scripts/screenshot.sh OUT.png [framecull args...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/screenshot.png}; shift || true
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/framecull-xdg-$(id -u)}"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 0700 "$XDG_RUNTIME_DIR"
bin=${FRAMECULL_BIN:-target/debug/framecull}
display=:${DISPLAY_NUM:-77}
Xvfb "$display" -screen 0 1440x900x24 >/tmp/framecull-xvfb.log 2>&1 &
xvfb=$!
app=
trap 'kill $app $xvfb 2>/dev/null || true' EXIT
# Xvfb takes from a few milliseconds to seconds (a busy machine) before it accepts
# connections: wait until it answers, not a fixed time.
for _ in $(seq 300); do
  if DISPLAY=$display xdotool getdisplaygeometry >/dev/null 2>&1; then break; fi
  if ! kill -0 "$xvfb" 2>/dev/null; then
    echo "screenshot.sh: Xvfb $display exited; its log:" >&2
    cat /tmp/framecull-xvfb.log >&2
    exit 1
  fi
  sleep 0.1
done
if ! DISPLAY=$display xdotool getdisplaygeometry >/dev/null 2>&1; then
  echo "screenshot.sh: Xvfb $display did not accept connections in 30 s" >&2
  exit 1
fi
DISPLAY=$display WAYLAND_DISPLAY='' "$bin" "$@" >/tmp/framecull-screenshot.log 2>&1 &
app=$!
sleep "${WAIT_SECS:-8}"
# Optional interactions before the shot, e.g. ACTIONS="click 357 335; drag 415 124 539 124".
IFS=';' read -ra steps <<< "${ACTIONS:-}"
for step in "${steps[@]}"; do
  read -ra a <<< "$step"
  case "${a[0]:-}" in
    click) DISPLAY=$display xdotool mousemove "${a[1]}" "${a[2]}" click 1 ;;
    move) DISPLAY=$display xdotool mousemove "${a[1]}" "${a[2]}" ;;
    key)
      # Without a window manager nothing gives the window keyboard focus: give it first.
      DISPLAY=$display xdotool search --name framecull windowfocus 2>/dev/null || true
      DISPLAY=$display xdotool key --delay 60 "${a[@]:1}" ;;
    drag)
      DISPLAY=$display xdotool mousemove "${a[1]}" "${a[2]}" mousedown 1
      for part in 1 2 3 4 5 6 7 8; do
        sleep 0.15
        DISPLAY=$display xdotool mousemove "$(( ${a[1]} + (${a[3]} - ${a[1]}) * part / 8 ))" "${a[4]}"
      done
      sleep 0.3
      DISPLAY=$display xdotool mouseup 1 ;;
  esac
  sleep 1
done
sleep 2
if ! kill -0 "$app" 2>/dev/null; then
  echo "screenshot.sh: the window exited before the screenshot; its log:" >&2
  cat /tmp/framecull-screenshot.log >&2
  exit 1
fi
DISPLAY=$display import -window root "$out"
echo "$out"
