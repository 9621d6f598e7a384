#!/usr/bin/env bash
# Release artefacts into dist/: a Debian package, an AppImage and a tarball.
#   bash packaging/build.sh                # release build, then into dist/:
#     framecull_VERSION_ARCH.deb           #   FFmpeg from the system (dependencies computed)
#     framecull-VERSION-ARCH.AppImage      #   FFmpeg and its libraries bundled (Debian 12's)
#     framecull-VERSION-ARCH-linux.tar.gz  #   the .deb's tree, for systems with the same libraries
#   bash packaging/build.sh --profile dev  # the same from the dev profile, compressed fast
#                                          # (what CI's install smoke test uses: see smoke.sh)
#   ... --binary target/debug/framecull    # packs that binary, built before, with no build
#                                          # (CI: the one its tests ran)
# All hold the binary, the desktop entry, the icons, the man page and the shell completions
# (generated from the command-line definition).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
binary=""
while (($#)); do
  case "$1" in
    --profile) profile="$2"; shift 2 ;;
    --binary) binary="${2:?--binary needs the path of a built framecull}"; shift 2 ;;
    *) echo "usage: bash packaging/build.sh [--profile release|dev] [--binary PATH]" >&2; exit 2 ;;
  esac
done
case "$profile" in
  release) profile_dir=release; deb_compress=(-Zxz); squash_compress=(-comp zstd -Xcompression-level 19) ;;
  dev) profile_dir=debug; deb_compress=(-Zgzip -z1); squash_compress=(-comp zstd -Xcompression-level 3) ;;
  *) echo "build.sh: --profile is release or dev" >&2; exit 2 ;;
esac
bash scripts/toolchain.sh
if [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
bash packaging/deps.sh

if [ -n "$binary" ]; then
  bin="$binary"
else
  cargo build --profile "$profile" --bin framecull
  bin="${CARGO_TARGET_DIR:-target}/$profile_dir/framecull"
fi
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | sed -n 1p)"
arch="$(dpkg --print-architecture 2>/dev/null || uname -m)"

rm -rf dist/stage dist/shlibs
root="dist/stage/framecull_${version}_${arch}"
install -Dm755 "$bin" "$root/usr/bin/framecull"
strip --strip-debug "$root/usr/bin/framecull" 2>/dev/null || true
install -Dm644 packaging/framecull.desktop "$root/usr/share/applications/framecull.desktop"
for size in 16 32 48 64 128 256; do
  install -Dm644 "assets/icons/framecull-$size.png" \
    "$root/usr/share/icons/hicolor/${size}x${size}/apps/framecull.png"
done
install -Dm644 assets/framecull.svg "$root/usr/share/icons/hicolor/scalable/apps/framecull.svg"
mkdir -p "$root/usr/share/man/man1" "$root/usr/share/bash-completion/completions" \
  "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
"$bin" man | gzip -9n > "$root/usr/share/man/man1/framecull.1.gz"
"$bin" completions bash > "$root/usr/share/bash-completion/completions/framecull"
"$bin" completions zsh > "$root/usr/share/zsh/vendor-completions/_framecull"
"$bin" completions fish > "$root/usr/share/fish/vendor_completions.d/framecull.fish"
install -Dm644 README.md "$root/usr/share/doc/framecull/README.md"
printf 'framecull %s\nLicense: MIT OR Apache-2.0\nFFmpeg: the system'"'"'s shared libraries (LGPL/GPL as Debian builds them), not bundled.\n' \
  "$version" > "$root/usr/share/doc/framecull/copyright"

tarball="dist/framecull-${version}-${arch}-linux.tar.gz"
tar -C "$root" --owner=0 --group=0 -czf "$tarball" usr

# The libraries the binary links (FFmpeg, libc, ...), as Debian names their packages.
mkdir -p dist/shlibs/debian
printf 'Source: framecull\n\nPackage: framecull\nArchitecture: any\n' > dist/shlibs/debian/control
depends="$(cd dist/shlibs && dpkg-shlibdeps -O "-e../../$root/usr/bin/framecull" 2>/dev/null \
  | sed -n 's/^shlibs:Depends=//p')"
# Loaded at run time with dlopen, so not in the binary's links: Vulkan for the GPU paths
# (a software driver is enough), the X11/Wayland libraries the window opens.
recommends="libvulkan1, mesa-vulkan-drivers, libxkbcommon-x11-0, libx11-xcb1, libxcursor1, libxrandr2, libxi6, libwayland-client0, libegl1"
size_kb="$(du -sk "$root/usr" | cut -f1)"
mkdir -p "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<EOF
Package: framecull
Version: $version
Architecture: $arch
Maintainer: framecull developers <framecull@localhost>
Installed-Size: $size_kb
Depends: $depends
Recommends: $recommends
Section: graphics
Priority: optional
Homepage: https://github.com/framecull/framecull
Description: see, filter, trim and ship image and video datasets before training
 A desktop app and command line for computer-vision datasets: scans images and videos,
 analyses motion, scene cuts, decode errors and quality, flags broken files and outliers,
 exports versioned manifests, and loads frame-exact training batches.
EOF
deb="dist/framecull_${version}_${arch}.deb"
dpkg-deb --root-owner-group "${deb_compress[@]}" --build "$root" "$deb" >/dev/null
rm -rf dist/shlibs "$root/DEBIAN"

appimage="dist/framecull-${version}-${arch}.AppImage"
bash packaging/appimage/build.sh "$root" "$appimage" "${squash_compress[@]}"
rm -rf dist/stage
ls -l "$deb" "$appimage" "$tarball"
