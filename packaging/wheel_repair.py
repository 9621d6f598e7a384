#!/usr/bin/env python3
"""Make an unpacked wheel self-contained, and pack it (packaging/wheel.sh calls this).

    python3 packaging/wheel_repair.py UNPACKED_WHEEL_DIR
    python3 packaging/wheel_repair.py --pack UNPACKED_WHEEL_DIR PLATFORM_TAG LEVEL OUT_DIR

Every ELF file of the wheel (the extension module and the `framecull` executable) gets the
shared libraries it loads, resolved as this system's loader resolves them (ldd gives the whole
closure), copied into `framecull.libs/` under names of their own (`libavcodec-1a2b3c4d.so.59`,
the hash of the file), with their sonames and every reference to them renamed, and run paths
relative to `$ORIGIN`. That is what `auditwheel repair` does, with one difference: auditwheel
leaves out the libraries the manylinux policy assumes on every system (X11, GLib, zlib, expat),
which a headless training container does not have, and without which the extension would not
even import (Debian's FFmpeg links libva-x11, which links libX11). Left to the system here are
only the C library and the compiler's runtime (libgcc_s, libstdc++), which every Python has.

The private names let the wheel's FFmpeg live beside another in the same process (PyAV's,
torchvision's or the system's): the loader matches libraries by soname.

It also writes `framecull/licenses/`: for each library, the Debian package it came from, its
version and that package's copyright file. Debian builds FFmpeg under the GPL.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

# Left to the system: the C library, its loader and companions, and the compiler's runtime.
HOST = re.compile(
    r"^(ld-linux.*|linux-vdso.*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|"
    r"libmvec|libnsl|libBrokenLocale|libthread_db|libnss_.*|libgcc_s|libstdc\+\+)(\.so.*)?$"
)
LIBS = "framecull.libs"


def is_elf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"


def closure(elf: Path) -> dict[str, Path]:
    """The libraries `elf` loads, by the name it (or a library) asks for, as ldd resolves them."""
    out = subprocess.run(["ldd", str(elf)], check=True, capture_output=True, text=True).stdout
    found: dict[str, Path] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>":
            if parts[2] == "not":
                sys.exit(f"wheel_repair: {elf}: {parts[0]} not found on this system")
            if not HOST.match(parts[0]):
                found[parts[0]] = Path(parts[2])
    return found


def private_name(soname: str, path: Path) -> str:
    """`libavcodec.so.59` -> `libavcodec-1a2b3c4d.so.59`: the first 8 hex digits of the file's hash."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
    stem, dot, rest = soname.partition(".so")
    return f"{stem}-{digest}{dot}{rest}"


def needed(elf: Path) -> list[str]:
    out = subprocess.run(["patchelf", "--print-needed", str(elf)], check=True, capture_output=True, text=True)
    return out.stdout.split()


def patch(elf: Path, renamed: dict[str, str], rpath: str, soname: str | None = None) -> None:
    args = ["patchelf", "--set-rpath", rpath]
    if soname is not None:
        args += ["--set-soname", soname]
    for name in needed(elf):
        if name in renamed:
            args += ["--replace-needed", name, renamed[name]]
    subprocess.run([*args, str(elf)], check=True)


def package_of(path: Path) -> str | None:
    """The Debian package that installed `path` (with its architecture, `libfoo1:amd64`), by
    the path as found, as resolved, or under /usr (a merged /usr lists /lib's files there)."""
    resolved = path.resolve()
    candidates = [path, resolved]
    for p in (path, resolved):
        if str(p).startswith("/lib"):
            candidates.append(Path("/usr" + str(p)))
    for candidate in candidates:
        out = subprocess.run(["dpkg-query", "-S", str(candidate)], capture_output=True, text=True)
        for line in out.stdout.splitlines() if out.returncode == 0 else []:
            if not line.startswith("diversion by"):
                return line.split(": ", 1)[0].split(", ")[0]
    return None


def write_licences(root: Path, bundled: dict[str, tuple[Path, str]]) -> None:
    """Every bundled library's package, version and copyright file, or an error: a library
    whose licence cannot be named is not shipped."""
    licences = root / "framecull" / "licenses"
    rows = []
    for soname, (path, private) in sorted(bundled.items()):
        package = package_of(path)
        if package is None:
            sys.exit(f"wheel_repair: {path} ({soname}) is not from a Debian package: no licence to ship")
        version = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package], check=True, capture_output=True, text=True
        ).stdout
        rows.append(f"{soname}\t{private}\t{package}\t{version}")
        copyright_file = Path("/usr/share/doc") / package.split(":")[0] / "copyright"
        if not copyright_file.is_file():
            sys.exit(f"wheel_repair: {package} has no {copyright_file}: no licence to ship for {soname}")
        target = licences / "third-party" / package.split(":")[0] / "copyright"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(copyright_file, target)
    text = [
        "Shared libraries bundled in this wheel (framecull.libs), as built by Debian.",
        "Library, its name in the wheel, the Debian package it came from, that package's version.",
        "Sources: 'apt-get source PACKAGE=VERSION' or https://snapshot.debian.org/; licences in",
        "third-party/. FFmpeg's libraries as Debian builds them are under the GPL (version 2 or",
        "later), so this wheel as a whole is distributed under the GPL.",
        "",
        *rows,
    ]
    licences.mkdir(parents=True, exist_ok=True)
    (licences / "bundled-libraries.txt").write_text("\n".join(text) + "\n")


def pack(root: Path, platform: str, level: int, out: Path) -> Path:
    """The wheel of `root` for `platform` (its WHEEL's tags keep their Python and ABI parts),
    with a new RECORD, compressed at zlib `level` (0: stored). Modes are kept (the executable's)."""
    name_version = root.name
    dist_info = root / f"{name_version}.dist-info"
    # The wheel as a whole is the GPL's: it carries FFmpeg as Debian builds it.
    metadata = dist_info / "METADATA"
    meta = [line for line in metadata.read_text().split("\n") if not line.startswith(("License:", "License-Expression:"))]
    meta.insert(next(i for i, line in enumerate(meta) if line.startswith("Version:")) + 1,
                "License: GPL-2.0-or-later (framecull's own code: MIT OR Apache-2.0; FFmpeg and the "
                "libraries in framecull.libs as Debian builds them: framecull/licenses/)")
    metadata.write_text("\n".join(meta))
    wheel_file = dist_info / "WHEEL"
    lines = wheel_file.read_text().splitlines()
    tags = [line.split(": ", 1)[1] for line in lines if line.startswith("Tag: ")]
    interpreters = sorted({tag.rsplit("-", 1)[0] for tag in tags})
    lines = [line for line in lines if not line.startswith("Tag: ")]
    wheel_file.write_text("\n".join(lines + [f"Tag: {i}-{platform}" for i in interpreters]) + "\n")
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "RECORD")
    # The .dist-info folder last, as the wheel format asks.
    files.sort(key=lambda p: p.relative_to(root).parts[0] == dist_info.name)
    record = []
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"{name_version}-{interpreters[0]}-{platform}.whl"
    compression = zipfile.ZIP_DEFLATED if level > 0 else zipfile.ZIP_STORED
    with zipfile.ZipFile(wheel, "w", compression, compresslevel=level or None) as zf:
        for path in files:
            arcname = path.relative_to(root).as_posix()
            data = path.read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arcname},sha256={digest},{len(data)}")
            zf.write(path, arcname)
        record_name = f"{dist_info.name}/RECORD"
        zf.writestr(record_name, "\n".join([*record, f"{record_name},,"]) + "\n")
    return wheel


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--pack":
        print(pack(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), Path(sys.argv[5])))
        return
    if len(sys.argv) != 2:
        sys.exit("usage: wheel_repair.py UNPACKED_WHEEL_DIR | --pack UNPACKED_WHEEL_DIR PLATFORM_TAG LEVEL OUT_DIR")
    root = Path(sys.argv[1])
    tops = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and is_elf(p))
    if not tops:
        sys.exit(f"wheel_repair: no ELF file under {root}")
    wanted: dict[str, Path] = {}
    for elf in tops:
        wanted.update(closure(elf))
    libs = root / LIBS
    libs.mkdir(exist_ok=True)
    renamed: dict[str, str] = {}
    bundled: dict[str, tuple[Path, str]] = {}
    for soname, path in sorted(wanted.items()):
        private = private_name(soname, path.resolve())
        shutil.copyfile(path.resolve(), libs / private)
        os.chmod(libs / private, 0o755)
        renamed[soname] = private
        bundled[soname] = (path, private)
    for soname, private in renamed.items():
        patch(libs / private, renamed, "$ORIGIN", soname=private)
    for elf in tops:
        relative = os.path.relpath(libs, elf.parent)
        patch(elf, renamed, f"$ORIGIN/{relative}")
    # Every name any file of the wheel asks for is now one of the wheel's or the system's C
    # library and compiler runtime: a second soname of one file (ldd lists a file once) would
    # otherwise be left to the system.
    for elf in [*tops, *(libs / p for p in renamed.values())]:
        stray = [n for n in needed(elf) if n not in renamed.values() and not HOST.match(n)]
        if stray:
            sys.exit(f"wheel_repair: {elf} still asks the system for {stray}")
    write_licences(root, bundled)
    size = sum(p.stat().st_size for p in libs.iterdir())
    print(f"wheel_repair: {len(renamed)} libraries bundled ({size / 2**20:.1f} MiB) for {len(tops)} ELF files")


if __name__ == "__main__":
    main()
