#!/usr/bin/env bash
# The wheel as a user gets it, on clean systems with no compiler and no FFmpeg:
#   bash packaging/wheel-smoke.sh [--profile release|dev]   # default release; CI uses dev
#   bash packaging/wheel-smoke.sh --wheel dist/framecull-*.whl  # a wheel built before
#   bash packaging/wheel-smoke.sh --profile dev --binary target/debug/framecull
#                                  # the wheel around that executable (CI: the tests' one)
# 1. Builds dist/framecull-*.whl with packaging/wheel.sh (the arguments are its) and checks it
#    with `auditwheel show`: no library outside the manylinux policy that it does not carry.
# 2. Makes clean Debian 12 and Debian 13 roots with debootstrap (minbase) holding only
#    python3, python3-venv and the window's runtime libraries, and in each:
#    `python3 -m venv v && v/bin/pip install framecull-*.whl numpy pyarrow`, then
#    - `ldd` of the extension and of the executable: every libav* from the wheel;
#    - `python -m framecull --version` (the FFmpeg the wheel carries);
#    - `framecull scan --deep` and `list` on a sample of ../shared/media (or generated media);
#    - `framecull export`, and `framecull.Loader` iterating the manifest in worker processes,
#      its frames' checksum equal to that of this checkout's source build (scripts/python.sh);
#    - the window for 10 seconds on this host's Xvfb, its screenshot not blank
#      (target/wheel-smoke/ROOT-window.png).
# Needs root (debootstrap, chroot, mounting /proc), a Debian mirror ($DEBIAN_MIRROR) and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "wheel-smoke.sh: needs root (debootstrap, chroot); run it with sudo" >&2
  exit 2
fi
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
smoke="$PWD/target/wheel-smoke"
# The executable the source build's frames are read with at the end: the one given to wheel.sh,
# else a build here.
binary=""
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
  if [ "${args[i]}" = "--binary" ]; then binary="${args[i + 1]}"; fi
done
suites=(bookworm trixie)
# What a user's system has: Python with venv, and the libraries the window loads (X11 and
# Wayland clients, a Vulkan loader with a software driver, fonts are not needed).
packages=python3,python3-venv,libxkbcommon-x11-0,libx11-xcb1,libxcursor1,libxrandr2,libxi6,libwayland-client0,libegl1,libvulkan1,mesa-vulkan-drivers

log() { printf '[wheel-smoke %s] %s\n' "$(date +%T)" "$*"; }

declare -A bootstrap=()
cleanup() {
  for suite in "${!bootstrap[@]}"; do
    kill "${bootstrap[$suite]}" 2>/dev/null && wait "${bootstrap[$suite]}" || true
  done
  for suite in "${suites[@]}"; do
    local root="$smoke/$suite"
    if mountpoint -q "$root/proc" 2>/dev/null; then umount "$root/proc" || umount -l "$root/proc"; fi
    if mountpoint -q "$root/dev" 2>/dev/null; then umount "$root/dev" || umount -l "$root/dev"; fi
    rm -rf "$root"
  done
}
trap cleanup EXIT
cleanup
rm -rf "$smoke"
mkdir -p "$smoke"

# The clean roots are mostly downloads: made while the wheel builds.
for suite in "${suites[@]}"; do
  log "clean Debian root ($suite, minbase + $packages), beside the build"
  debootstrap --variant=minbase --include="$packages" "$suite" "$smoke/$suite" "$mirror" \
    >"$smoke/$suite-debootstrap.log" 2>&1 &
  bootstrap[$suite]=$!
done

if [ "${1:-}" = "--wheel" ]; then
  wheel="$(realpath "${2:?--wheel needs a file}")"
  # auditwheel, from wheel.sh's tools.
  bash packaging/wheel.sh --tools-only
else
  log "wheel (packaging/wheel.sh $*)"
  bash packaging/wheel.sh "$@" >"$smoke/wheel.log" 2>&1 || {
    tail -n 30 "$smoke/wheel.log" >&2
    exit 1
  }
  wheel="$(ls dist/framecull-*.whl)"
fi
log "  $(basename "$wheel"): $(du -m "$wheel" | cut -f1) MiB"
# The policy check: auditwheel finds the wheel consistent with the tag it carries and names no
# library the wheel needs from outside the policy (it would list them: "The following external
# shared libraries are required by the wheel"). The roots below check the rest with ldd.
tools=target/wheel/tools/bin
"$tools/auditwheel" show "$wheel" >"$smoke/auditwheel.txt" 2>&1
python3 - "$wheel" "$smoke/auditwheel.txt" <<'EOF'
import re, sys
wheel, report = sys.argv[1], open(sys.argv[2]).read()
text = " ".join(report.split())
tag = re.search(r'is consistent with the following platform tag: "([^"]+)"', text)
assert tag, report
assert wheel.endswith(f"-{tag.group(1)}.whl"), (wheel, tag.group(1))
assert "external shared libraries are required" not in text, report
print(f"auditwheel: {tag.group(1)}, nothing required from outside the policy")
EOF

# The sample: 18 files of the corpus (images, videos, broken files), or generated ones.
data="$smoke/data"
bash packaging/sample-media.sh "$data"
files="$(find "$data" -type f | wc -l)"

# The frames the loader gives, as a checksum: the same script in the roots and here.
cat >"$smoke/frames.py" <<'EOF'
import hashlib, json, sys
import numpy
import framecull
manifest, root = sys.argv[1], sys.argv[2]
loader = framecull.Loader(manifest, root=root, split=None, clip_len=4, size=(64, 64), dtype="uint8",
                          batch_size=2, shuffle=False, workers=1, device="cpu", mode="uniform")
digest, batches = hashlib.sha256(), 0
for batch in loader:
    digest.update(numpy.asarray(batch.frames).tobytes())
    batches += 1
print(json.dumps({"sha256": digest.hexdigest(), "batches": batches,
                  "worker_processes": loader.stats()["worker_processes"]}))
EOF

for suite in "${suites[@]}"; do
  root="$smoke/$suite"
  rc=0
  wait "${bootstrap[$suite]}" || rc=$?
  unset "bootstrap[$suite]"
  if ((rc != 0)); then
    tail -n 30 "$smoke/$suite-debootstrap.log" >&2
    exit 1
  fi
  log "$suite: clean root ready"
  for forbidden in gcc cc clang ffmpeg ffprobe; do
    if chroot "$root" sh -c "command -v $forbidden" >/dev/null 2>&1; then
      echo "wheel-smoke.sh: $suite: the clean root has $forbidden" >&2
      exit 1
    fi
  done
  if chroot "$root" sh -c 'ls /usr/lib/*/libavcodec.so* /lib/*/libavcodec.so*' >/dev/null 2>&1; then
    echo "wheel-smoke.sh: $suite: the clean root has a system FFmpeg" >&2
    exit 1
  fi
  mount -t proc proc "$root/proc"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # This host's certificate authorities, for pip (a network whose proxy has its own).
  cp /etc/ssl/certs/ca-certificates.crt "$root/tmp/host-ca.crt"
  cp "$wheel" "$root/tmp/"
  cp -r "$data" "$root/data"
  cp "$smoke/frames.py" "$root/tmp/frames.py"
  install -d -m 0700 "$root/tmp/xdg"
  # A proxy, where this host has one, for pip.
  proxy=()
  for name in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_INDEX_URL; do
    if [ -n "${!name:-}" ]; then proxy+=("$name=${!name}"); fi
  done
  in_root() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/v/bin:/usr/bin:/bin LANG=C.UTF-8 "${proxy[@]}" "$@"; }
  log "$suite: python3 -m venv /v && /v/bin/pip install $(basename "$wheel") numpy pyarrow"
  in_root sh -c "python3 -m venv /v && /v/bin/pip install -q --disable-pip-version-check --cert /tmp/host-ca.crt /tmp/$(basename "$wheel") numpy pyarrow" \
    >"$smoke/$suite-pip.log" 2>&1 || {
    tail -n 30 "$smoke/$suite-pip.log" >&2
    exit 1
  }
  # Every FFmpeg library from the wheel, for the extension and for the executable.
  mapfile -t elves < <(in_root sh -c 'ls /v/lib/python3*/site-packages/framecull/_framecull*.so /v/lib/python3*/site-packages/framecull/bin/framecull')
  if ((${#elves[@]} != 2)); then
    echo "wheel-smoke.sh: $suite: the installed wheel's extension and executable: ${elves[*]}" >&2
    exit 1
  fi
  for elf in "${elves[@]}"; do
    in_root ldd "$elf" >"$smoke/$suite-ldd.txt"
    if grep -q "not found" "$smoke/$suite-ldd.txt"; then
      grep "not found" "$smoke/$suite-ldd.txt" >&2
      echo "wheel-smoke.sh: $suite: $elf misses libraries" >&2
      exit 1
    fi
    # From the system only the C library and the compiler's runtime; FFmpeg and the rest from
    # the wheel.
    outside="$(grep '=> /' "$smoke/$suite-ldd.txt" | grep -v '/framecull\.libs/' \
      | grep -v -E '^\s*(libc|libm|libgcc_s|libstdc\+\+|libresolv|libpthread|libdl|librt)\.so' || true)"
    if [ -n "$outside" ] \
      || ! grep -q -E '^\s*libavcodec-[0-9a-f]{8}\.so.* => .*/framecull\.libs/' "$smoke/$suite-ldd.txt"; then
      cat "$smoke/$suite-ldd.txt" >&2
      echo "wheel-smoke.sh: $suite: $elf loads libraries from outside the wheel: $outside" >&2
      exit 1
    fi
  done
  version="$(in_root python -m framecull --version)"
  log "$suite: $(echo "$version" | sed -n 2p)"
  case "$version" in
    "framecull "*"FFmpeg "*) ;;
    *) echo "wheel-smoke.sh: $suite: python -m framecull --version printed: $version" >&2; exit 1 ;;
  esac
  rc=0
  in_root framecull scan /data --deep --project /root/project >"$smoke/$suite-scan.log" 2>&1 || rc=$?
  if ((rc > 1)); then
    cat "$smoke/$suite-scan.log" >&2
    echo "wheel-smoke.sh: $suite: scan --deep exited $rc" >&2
    exit 1
  fi
  in_root framecull list --format jsonl --project /root/project >"$smoke/$suite-list.jsonl"
  rows="$(wc -l <"$smoke/$suite-list.jsonl")"
  if [ "$rows" -ne "$files" ]; then
    echo "wheel-smoke.sh: $suite: list has $rows rows for $files files" >&2
    exit 1
  fi
  in_root framecull export --name smoke --project /root/project \
    >"$smoke/$suite-export.log" 2>&1 || {
    cat "$smoke/$suite-export.log" >&2
    exit 1
  }
  in_root python /tmp/frames.py /root/project/manifests/smoke /data >"$smoke/$suite-frames.json"
  log "$suite: loader $(cat "$smoke/$suite-frames.json")"
  # The window, through the installed `framecull` script, on this host's Xvfb.
  wrapper="$smoke/$suite-framecull"
  printf '#!/bin/sh\nexec chroot %q /usr/bin/env -i HOME=/root PATH=/v/bin:/usr/bin:/bin LANG=C.UTF-8 XDG_RUNTIME_DIR=/tmp/xdg DISPLAY=:94 framecull "$@"\n' \
    "$root" >"$wrapper"
  chmod +x "$wrapper"
  FRAMECULL_BIN="$wrapper" WAIT_SECS=10 DISPLAY_NUM=94 \
    bash scripts/screenshot.sh "$smoke/$suite-window.png" /root/project >/dev/null
  spread="$(convert "$smoke/$suite-window.png" -colorspace gray -format '%[fx:standard_deviation]' info:)"
  if awk -v s="$spread" 'BEGIN { exit !(s < 0.02) }'; then
    echo "wheel-smoke.sh: $suite: the window's screenshot is blank" >&2
    exit 1
  fi
  log "$suite: window ran 10 s; screenshot $smoke/$suite-window.png"
done

# The same frames from this checkout's source build (scripts/python.sh's venv), read from the
# first root's manifest and files.
venv="${FRAMECULL_VENV:-target/python-venv}"
bash scripts/python.sh --no-test
if [ -z "$binary" ]; then
  cargo build --bin framecull
  binary=target/debug/framecull
fi
FRAMECULL_WORKER_EXE="$(realpath "$binary")" "$venv/bin/python" "$smoke/frames.py" \
  "$smoke/${suites[0]}/root/project/manifests/smoke" "$smoke/${suites[0]}/data" >"$smoke/source-frames.json"
log "source build: loader $(cat "$smoke/source-frames.json")"
python3 - "$smoke" "${suites[@]}" <<'EOF'
import json, sys
smoke, suites = sys.argv[1], sys.argv[2:]
source = json.load(open(f"{smoke}/source-frames.json"))
assert source["batches"] > 0 and source["worker_processes"] >= 1, source
for suite in suites:
    got = json.load(open(f"{smoke}/{suite}-frames.json"))
    assert got["worker_processes"] >= 1, (suite, got)
    assert (got["sha256"], got["batches"]) == (source["sha256"], source["batches"]), (suite, got, source)
print("the wheel's frames equal the source build's in every root")
EOF
log "ok: $files files; the wheel in clean Debian 12 and 13 roots"
