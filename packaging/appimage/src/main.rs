//! The runtime at the head of framecull's AppImage (type 2 layout: this ELF file, the magic
//! `AI\x02` at byte 8, then a SquashFS image of the AppDir).
//!
//! The usual AppImage runtime mounts the image with FUSE on every start. This one extracts it
//! once into the user's cache and runs it from there, so it also works where FUSE is absent
//! (containers, CI runners, locked-down hosts) and later starts cost one `stat`:
//!
//! - `framecull.AppImage ARGS...`: extract into `$XDG_CACHE_HOME/framecull/appimage/KEY` (KEY
//!   identifies this image's contents) unless it is there already, then run `AppRun ARGS...`
//!   with `APPIMAGE`, `APPDIR`, `ARGV0` and `OWD` set as other runtimes set them.
//! - `--appimage-extract`: extract into `./squashfs-root` (as every AppImage does).
//! - `--appimage-offset`: print where the SquashFS image starts.
//! - `--appimage-cache`: print the folder it runs from (extracting it if needed).
//! - `--appimage-help`, `--appimage-version`.
//!
//! An extraction is written beside its final name and renamed into place when complete, so a
//! killed extraction is never run and two starts at once do not see each other's half. A new
//! extraction removes the older ones but the newest (another version may still be running).

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use backhand::{FilesystemReader, InnerNode};

/// Empty update information and signature sections, as the AppImage specification lays out;
/// tools that read them find them present and empty.
#[unsafe(link_section = ".upd_info")]
#[used]
static UPDATE_INFO: [u8; 1024] = [0; 1024];
#[unsafe(link_section = ".sha256_sig")]
#[used]
static SIGNATURE: [u8; 1024] = [0; 1024];

const HELP: &str = "framecull AppImage runtime
  (no --appimage- option)     run framecull with these arguments
  --appimage-extract          extract the image into ./squashfs-root
  --appimage-offset           print the byte offset of the SquashFS image
  --appimage-cache            print the folder the image runs from (extracting it if needed)
  --appimage-version          print this runtime's version
  --appimage-help             this text
The image is extracted once into $XDG_CACHE_HOME/framecull/appimage (else ~/.cache) and run from
there; a new version's extraction removes all but the previous one.";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("framecull AppImage: {e}");
            ExitCode::from(127)
        }
    }
}

fn run() -> Result<(), String> {
    let image = std::env::current_exe().map_err(|e| format!("cannot find this file: {e}"))?;
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_default();
    let args: Vec<OsString> = args.collect();
    let option = args
        .first()
        .and_then(|a| a.to_str())
        .filter(|a| a.starts_with("--appimage-"));
    let offset = || squashfs_offset(&image).map_err(|e| format!("{}: {e}", image.display()));
    match option {
        None => {
            let dir = cached(&image, offset()?)?;
            let err = Command::new(dir.join("AppRun"))
                .args(&args)
                .env("APPIMAGE", &image)
                .env("APPDIR", &dir)
                .env("ARGV0", argv0)
                .env("OWD", std::env::current_dir().unwrap_or_default())
                .exec();
            Err(format!(
                "cannot run {}: {err}",
                dir.join("AppRun").display()
            ))
        }
        Some("--appimage-extract") => {
            let dest = PathBuf::from("squashfs-root");
            extract(&image, offset()?, &dest)
                .map_err(|e| format!("extracting into {}: {e}", dest.display()))?;
            println!("{}", dest.display());
            Ok(())
        }
        Some("--appimage-offset") => {
            println!("{}", offset()?);
            Ok(())
        }
        Some("--appimage-cache") => {
            println!("{}", cached(&image, offset()?)?.display());
            Ok(())
        }
        Some("--appimage-version") => {
            println!("{}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Some("--appimage-help") => {
            println!("{HELP}");
            Ok(())
        }
        Some(other) => Err(format!("unknown option {other} (see --appimage-help)")),
    }
}

/// Where the SquashFS image starts: the end of this ELF file (its section header table, or
/// its program headers, whichever ends last), checked against the SquashFS magic.
fn squashfs_offset(image: &Path) -> io::Result<u64> {
    let mut header = [0u8; 64];
    let mut file = File::open(image)?;
    file.read_exact(&mut header)?;
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return Err(invalid("not a 64-bit little-endian ELF file"));
    }
    let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
    let u16_at = |at: usize| u64::from(u16::from_le_bytes([header[at], header[at + 1]]));
    let sections_end = u64_at(0x28) + u16_at(0x3a) * u16_at(0x3c);
    let programs_end = u64_at(0x20) + u16_at(0x36) * u16_at(0x38);
    let offset = sections_end.max(programs_end);
    let mut magic = [0u8; 4];
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(&mut magic)
        .map_err(|_| invalid("no SquashFS image after the runtime"))?;
    if &magic != b"hsqs" {
        return Err(invalid("no SquashFS image after the runtime"));
    }
    Ok(offset)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// The folder this image runs from, extracted into the cache when it is not there yet.
fn cached(image: &Path, offset: u64) -> Result<PathBuf, String> {
    let key = content_key(image, offset).map_err(|e| format!("{}: {e}", image.display()))?;
    let base = cache_base();
    let dir = base.join(&key);
    if dir.join("AppRun").exists() {
        return Ok(dir);
    }
    fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let partial = base.join(format!(".{key}.partial-{}", std::process::id()));
    let _ = fs::remove_dir_all(&partial);
    extract(image, offset, &partial).map_err(|e| {
        let _ = fs::remove_dir_all(&partial);
        format!("extracting into {}: {e}", base.display())
    })?;
    if let Err(e) = fs::rename(&partial, &dir) {
        let _ = fs::remove_dir_all(&partial);
        // Another start finished first: run its copy.
        if !dir.join("AppRun").exists() {
            return Err(format!(
                "cannot move the extraction to {}: {e}",
                dir.display()
            ));
        }
    }
    prune(&base, &key);
    Ok(dir)
}

/// After a new extraction: removes older ones but the newest (it may still be running), and
/// partial ones whose process is gone.
fn prune(base: &Path, key: &str) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    let mut complete = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if let Some((_, pid)) = name.split_once(".partial-") {
            if !Path::new("/proc").join(pid).exists() {
                let _ = fs::remove_dir_all(&path);
            }
        } else if name != key && !name.starts_with('.') {
            let modified = entry.metadata().and_then(|m| m.modified()).ok();
            complete.push((modified, path));
        }
    }
    complete.sort();
    complete.pop();
    for (_, path) in complete {
        let _ = fs::remove_dir_all(path);
    }
}

/// `$XDG_CACHE_HOME/framecull/appimage`, else `~/.cache/...`, else the temporary folder.
fn cache_base() -> PathBuf {
    let nonempty = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    let cache = nonempty(std::env::var_os("XDG_CACHE_HOME"))
        .or_else(|| nonempty(std::env::var_os("HOME")).map(|h| h.join(".cache")));
    match cache {
        Some(cache) => cache.join("framecull").join("appimage"),
        None => std::env::temp_dir().join("framecull-appimage"),
    }
}

/// Names this image's contents: a hash of the SquashFS superblock (its size, creation time and
/// table offsets) and the file's length. A rebuilt image gets a new folder.
fn content_key(image: &Path, offset: u64) -> io::Result<String> {
    let mut file = File::open(image)?;
    let mut superblock = [0u8; 96];
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(&mut superblock)?;
    let len = file.metadata()?.len();
    // FNV-1a, 64 bits: stable across builds of this runtime.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in superblock.iter().chain(&len.to_le_bytes()) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    Ok(format!("{hash:016x}"))
}

/// Writes every directory, file and symbolic link of the image under `dest`, with its mode.
fn extract(image: &Path, offset: u64, dest: &Path) -> io::Result<()> {
    let reader = BufReader::new(File::open(image)?);
    let fs = FilesystemReader::from_reader_with_offset(reader, offset).map_err(io::Error::other)?;
    fs::create_dir_all(dest)?;
    let mut dirs = Vec::new();
    for node in fs.files() {
        let relative = node.fullpath.strip_prefix("/").unwrap_or(&node.fullpath);
        if relative
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            continue;
        }
        let path = dest.join(relative);
        let mode = u32::from(node.header.permissions) & 0o7777;
        match &node.inner {
            InnerNode::Dir(_) => {
                fs::create_dir_all(&path)?;
                dirs.push((path, mode));
            }
            InnerNode::File(file) => {
                let mut out = BufWriter::new(File::create(&path)?);
                io::copy(&mut fs.file(file).reader(), &mut out)?;
                out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
                fs::set_permissions(&path, fs::Permissions::from_mode(mode))?;
            }
            InnerNode::Symlink(link) => symlink(&link.link, &path)?,
            _ => {}
        }
    }
    // Directories last, deepest first, so a read-only one does not stop its contents.
    for (path, mode) in dirs.iter().rev() {
        fs::set_permissions(path, fs::Permissions::from_mode(*mode | 0o700))?;
    }
    Ok(())
}
