#!/usr/bin/env bash
# Install smoke test: the packages as a user gets them, on a clean system.
#   bash packaging/smoke.sh [--profile release|dev]   # default release; CI uses dev
# 1. Builds dist/ with packaging/build.sh (the arguments are its).
# 2. Makes a clean Debian 12 root with debootstrap (minbase: no FFmpeg, no X, no Vulkan),
#    installs the .deb there with apt (which pulls its Depends and Recommends from Debian), and
#    in that root runs `framecull --version`, `scan --deep` and `list` over a sample of
#    ../shared/media (or of generated media when it is absent), then the window for 10 seconds
#    on this host's Xvfb (the screenshot is kept as target/smoke/deb-window.png).
# 3. Runs the AppImage on this host the same way (target/smoke/appimage-window.png), and checks
#    that both list the same rows.
# Needs root (debootstrap, chroot, mounting /proc) and a Debian mirror ($DEBIAN_MIRROR).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "smoke.sh: needs root (debootstrap, chroot); run it with sudo" >&2
  exit 2
fi
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
smoke="$PWD/target/smoke"
root="$smoke/root"

log() { printf '[smoke %s] %s\n' "$(date +%T)" "$*"; }
seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(seconds)" 'BEGIN { printf "%.1f", b - a }'; }

cleanup() {
  if [ -n "${bootstrap:-}" ] && kill "$bootstrap" 2>/dev/null; then wait "$bootstrap" || true; fi
  if mountpoint -q "$root/proc" 2>/dev/null; then umount "$root/proc" || umount -l "$root/proc"; fi
  rm -rf "$root"
}
trap cleanup EXIT
cleanup
rm -rf "$smoke"
mkdir -p "$smoke"

# The clean root is mostly downloads: made while the packages build.
log "clean Debian 12 root (debootstrap --variant=minbase bookworm), beside the build"
start_root="$(seconds)"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$smoke/debootstrap.log" 2>&1 &
bootstrap=$!

log "packages (packaging/build.sh $*)"
start="$(seconds)"
bash packaging/build.sh "$@" >"$smoke/build.log" 2>&1 || {
  tail -n 30 "$smoke/build.log" >&2
  exit 1
}
log "  $(elapsed "$start") s"
deb="$(ls dist/framecull_*.deb)"
appimage="$(ls dist/framecull-*.AppImage)"

# The sample: 18 files of the corpus (images, videos, broken files), or generated ones.
data="$smoke/data"
bash packaging/sample-media.sh "$data"
files="$(find "$data" -type f | wc -l)"

bootstrap_rc=0
wait "$bootstrap" || bootstrap_rc=$?
# Waited for: its pid may be another process's from here on.
unset bootstrap
if ((bootstrap_rc != 0)); then
  tail -n 30 "$smoke/debootstrap.log" >&2
  exit 1
fi
log "clean root ready $(elapsed "$start_root") s after it was begun"
mount -t proc proc "$root/proc"
echo "deb $mirror bookworm main" >"$root/etc/apt/sources.list"
cp "$deb" "$root/tmp/framecull.deb"
cp -r "$data" "$root/data"

in_root() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8 "$@"; }

log "apt-get install ./framecull.deb (its dependencies from Debian)"
start="$(seconds)"
in_root sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/framecull.deb' \
  >"$smoke/install.log" 2>&1 || {
  tail -n 30 "$smoke/install.log" >&2
  exit 1
}
log "  $(elapsed "$start") s"

# One check per way of installing: version, a deep scan, the listing, the window.
check() {
  local name="$1" project="$2" dataset="$3"
  shift 3
  local run=("$@")
  local version
  version="$("${run[@]}" --version)"
  case "$version" in
    "framecull "*) log "$name: $version" ;;
    *) echo "smoke.sh: $name --version printed: $version" >&2; exit 1 ;;
  esac
  local rc=0
  "${run[@]}" scan "$dataset" --deep --project "$project" >"$smoke/$name-scan.log" 2>&1 || rc=$?
  if ((rc > 1)); then
    cat "$smoke/$name-scan.log" >&2
    echo "smoke.sh: $name: scan --deep exited $rc" >&2
    exit 1
  fi
  log "$name: $(grep -m1 'files:' "$smoke/$name-scan.log")"
  "${run[@]}" list --format jsonl --project "$project" >"$smoke/$name-list.jsonl"
  local rows
  rows="$(wc -l <"$smoke/$name-list.jsonl")"
  if [ "$rows" -ne "$files" ]; then
    echo "smoke.sh: $name: list has $rows rows for $files files" >&2
    exit 1
  fi
  # The window on the scanned project for 10 seconds; scripts/screenshot.sh fails when it
  # exits before the shot.
  local wrapper="$smoke/$name-framecull"
  printf '#!/bin/sh\nexec %s "$@"\n' "$(printf '%q ' "${run[@]}")" >"$wrapper"
  chmod +x "$wrapper"
  FRAMECULL_BIN="$wrapper" WAIT_SECS=10 DISPLAY_NUM=93 \
    bash scripts/screenshot.sh "$smoke/$name-window.png" "$project" >/dev/null
  local spread
  spread="$(convert "$smoke/$name-window.png" -colorspace gray -format '%[fx:standard_deviation]' info:)"
  if awk -v s="$spread" 'BEGIN { exit !(s < 0.02) }'; then
    echo "smoke.sh: $name: the window's screenshot is blank" >&2
    exit 1
  fi
  log "$name: window ran 10 s; screenshot $smoke/$name-window.png"
}

# The window in the root connects to this host's Xvfb by its abstract socket.
install -d -m 0700 "$root/tmp/xdg"
check deb /root/project /data chroot "$root" /usr/bin/env -i HOME=/root \
  PATH=/usr/bin:/bin LANG=C.UTF-8 XDG_RUNTIME_DIR=/tmp/xdg DISPLAY=:93 framecull

export XDG_CACHE_HOME="$smoke/cache"
start="$(seconds)"
"$appimage" --appimage-cache >/dev/null
log "AppImage: first start (extraction) $(elapsed "$start") s, size $(du -m "$appimage" | cut -f1) MiB"
check appimage "$smoke/appimage-project" "$data" "$PWD/$appimage"

# The same binary on the same files: the same rows. Duplicate groups are named by an item id,
# which depends on the order files were recorded in: compare them by their members.
normalise() { python3 -c 'import collections, json, sys
rows = [json.loads(line) for line in sys.stdin]
for key in ("dup_group", "dup_exact_group"):
    members = collections.defaultdict(list)
    for row in rows:
        members[row.get(key)].append(row["path"])
    for row in rows:
        if row.get(key) is not None:
            row[key] = sorted(members[row[key]])
for row in sorted(json.dumps(row, sort_keys=True) for row in rows):
    print(row)'; }
if ! diff <(normalise <"$smoke/deb-list.jsonl") <(normalise <"$smoke/appimage-list.jsonl") >"$smoke/list.diff"; then
  head -n 20 "$smoke/list.diff" >&2
  echo "smoke.sh: the .deb and the AppImage list different rows" >&2
  exit 1
fi
log "ok: $files files; the .deb in a clean root and the AppImage on this host agree"
