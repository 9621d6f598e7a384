#!/usr/bin/env bash
# Assemble framecull's AppImage from a staged install tree (packaging/build.sh calls this):
#   bash packaging/appimage/build.sh STAGE OUT.AppImage [mksquashfs compression options]
# STAGE holds usr/ as the .deb installs it. The AppDir gets that tree, the shared libraries the
# binary loads (FFmpeg and everything it links, as this system has them) except those every
# desktop Linux provides and that must match its drivers (glibc, the GL/Vulkan/X11/Wayland
# stack, fonts; see `host_provided`), their copyright files, and a list of the Debian
# packages they came from, for their sources. The binary and the libraries find each other by
# RUNPATH ($ORIGIN), not LD_LIBRARY_PATH, so nothing leaks into the programs framecull starts.
# The runtime at the head of the file is packaging/appimage/src/main.rs (extract once into the
# user's cache, then run: no FUSE needed).
set -euo pipefail
cd "$(dirname "$0")/../.."
stage="$1"
out="$2"
shift 2
compress=("$@")
if ((${#compress[@]} == 0)); then compress=(-comp zstd -Xcompression-level 19); fi

# Libraries the host provides: the C library and loader, the compiler runtime, and the
# graphics, windowing and font stack, which must be the host's own to match its drivers.
# (The hardware-decoding front ends FFmpeg links, libva, libvdpau, libmfx and libOpenCL, are
# bundled: they load the host's drivers themselves and few hosts have all four.)
host_provided() {
  case "$1" in
    ld-linux* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libresolv.so* | \
      libutil.so* | libanl.so* | libmvec.so* | libnss_* | libBrokenLocale.so* | libthread_db.so*) return 0 ;;
    libgcc_s.so* | libstdc++.so*) return 0 ;;
    libGL.so* | libGLX.so* | libEGL.so* | libGLdispatch.so* | libOpenGL.so* | libglapi.so* | \
      libvulkan.so* | libdrm.so* | libgbm.so*) return 0 ;;
    libX*.so* | libxcb*.so* | libwayland-*.so* | libxkbcommon*.so*) return 0 ;;
    libfontconfig.so* | libfreetype.so* | libharfbuzz.so* | libexpat.so* | libz.so.1) return 0 ;;
    *) return 1 ;;
  esac
}

runtime_target="${CARGO_TARGET_DIR:-$PWD/target}/appimage-runtime"
CARGO_TARGET_DIR="$runtime_target" cargo build --quiet --release \
  --manifest-path packaging/appimage/Cargo.toml --locked
runtime="$runtime_target/release/framecull-appimage-runtime"

appdir="$(dirname "$out")/stage/framecull.AppDir"
rm -rf "$appdir"
mkdir -p "$appdir/usr/lib"
cp -a "$stage/usr/." "$appdir/usr/"
bin="$appdir/usr/bin/framecull"
doc="$appdir/usr/share/doc/framecull"

# The libraries, resolved as this system's loader resolves them (ldd lists the whole closure).
: > "$doc/bundled-libraries.txt.tmp"
while read -r name path; do
  if host_provided "$name"; then continue; fi
  install -m644 "$(readlink -f "$path")" "$appdir/usr/lib/$name"
  # shellcheck disable=SC2016 # $ORIGIN is the loader's, not the shell's
  patchelf --set-rpath '$ORIGIN' "$appdir/usr/lib/$name"
  package="$(dpkg-query -S "$path" 2>/dev/null | sed -n 1p | cut -d: -f1 || true)"
  if [ -z "$package" ]; then
    package="$(dpkg-query -S "$(readlink -f "$path")" 2>/dev/null | sed -n 1p | cut -d: -f1 || true)"
  fi
  if [ -n "$package" ]; then
    version="$(dpkg-query -W -f='${Version}' "$package")"
    printf '%s\t%s\t%s\n' "$name" "$package" "$version" >> "$doc/bundled-libraries.txt.tmp"
    if [ -f "/usr/share/doc/$package/copyright" ]; then
      install -Dm644 "/usr/share/doc/$package/copyright" "$doc/third-party/$package/copyright"
    fi
  else
    printf '%s\t(not from a Debian package)\t-\n' "$name" >> "$doc/bundled-libraries.txt.tmp"
  fi
done < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
{
  echo "Shared libraries bundled in this AppImage (usr/lib), as built by Debian."
  echo "Library, the Debian package it came from, that package's version. Sources:"
  echo "'apt-get source PACKAGE=VERSION' or https://snapshot.debian.org/; licences in third-party/."
  echo "FFmpeg's libraries as Debian builds them are under the GPL (version 2 or later)."
  echo
  sort "$doc/bundled-libraries.txt.tmp"
} > "$doc/bundled-libraries.txt"
rm "$doc/bundled-libraries.txt.tmp"
printf 'The AppImage bundles FFmpeg and the libraries it links: see bundled-libraries.txt.\n' \
  >> "$doc/copyright"
# shellcheck disable=SC2016
patchelf --set-rpath '$ORIGIN/../lib' "$bin"

# The AppDir's own entries: AppRun, the desktop entry and the icon at its top.
ln -s usr/bin/framecull "$appdir/AppRun"
cp packaging/framecull.desktop "$appdir/framecull.desktop"
cp assets/icons/framecull-256.png "$appdir/framecull.png"
ln -s framecull.png "$appdir/.DirIcon"

squashfs="$(dirname "$out")/stage/framecull.squashfs"
rm -f "$squashfs"
mksquashfs "$appdir" "$squashfs" -root-owned -noappend -quiet -no-progress "${compress[@]}" >/dev/null
# The type 2 AppImage magic, "AI" and 2, at byte 8 of the runtime.
cp "$runtime" "$out.tmp"
printf 'AI\002' | dd of="$out.tmp" bs=1 seek=8 conv=notrunc status=none
cat "$squashfs" >> "$out.tmp"
chmod 755 "$out.tmp"
mv "$out.tmp" "$out"
rm -rf "$appdir" "$squashfs"
