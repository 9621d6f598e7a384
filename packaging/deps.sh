#!/usr/bin/env bash
# Installs the system packages framecull needs to build, test and run.
#
# Debian 12 / Ubuntu 22.04+: run as root or with sudo available.
# macOS (Homebrew), for reference:
#   brew install pkg-config ffmpeg llvm
#   export LIBCLANG_PATH="$(brew --prefix llvm)/lib"
set -euo pipefail

packages=(
  # build: ffmpeg-next links the system FFmpeg; bindgen needs libclang
  pkg-config libclang-dev clang
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev
  libswresample-dev libavfilter-dev libavdevice-dev
  # the ffmpeg/ffprobe CLIs: peer benchmarks and corpus checks
  ffmpeg
  # the Python package (python/): a venv to build it into and test it
  python3 python3-venv python3-pip
  # packaging: the desktop entry's check; the .deb's library dependencies, the AppImage's
  # file system and library paths (packaging/build.sh); the clean root of packaging/smoke.sh
  desktop-file-utils man-db dpkg-dev squashfs-tools patchelf debootstrap
  # software GPU (lavapipe) for wgpu and headless UI tests; window screenshots
  mesa-vulkan-drivers libvulkan1 libgl1-mesa-dri libegl1
  xvfb xauth imagemagick xdotool
  # GUI runtime libraries used by winit/eframe
  libxkbcommon-x11-0 libx11-xcb1 libxcursor1 libxrandr2 libxi6
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps.sh: apt-get not found; install these packages by hand: ${missing[*]}" >&2
  exit 2
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
