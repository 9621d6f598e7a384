//! File names as text, losslessly. A local file's path relative to its dataset root is kept
//! as text everywhere (catalog, manifests, the window, the command line), but a name on
//! Linux is any bytes but `/` and NUL: not always UTF-8, and it may hold newlines or other
//! control characters. [`path_text`] gives every such name a printable text that
//! [`path_bytes`] turns back into exactly the bytes it came from:
//!
//! - a path that is valid UTF-8, has no control character and no `\x` stays as it is (nearly
//!   every name);
//! - any other path is escaped: each backslash doubled, each byte that is not valid UTF-8 or
//!   is a control character written `\xNN` (e.g. `caf\xe9.png`, `two\x0alines.mp4`).
//!
//! Escaped text always contains `\x` (an escape, or a doubled backslash before an `x`) and
//! text left as it is never does, so the two cases cannot be confused. Object keys are UTF-8
//! already and are never escaped.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The printable, reversible text of a relative path's bytes.
pub fn path_text(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes)
        && !text.chars().any(char::is_control)
        && !text.contains("\\x")
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                c if c.is_control() && (c as u32) < 0x80 => {
                    out.push_str(&format!("\\x{:02x}", c as u32))
                }
                c if c.is_control() => {
                    // C1 controls (U+0080..U+009F): each byte of their UTF-8 form.
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\x{b:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    Cow::Owned(out)
}

/// The bytes a [`path_text`] came from (text that was not escaped is its own bytes). Text
/// that no escape could have made (a lone backslash in escaped text) is taken as it is.
pub fn path_bytes(text: &str) -> Cow<'_, [u8]> {
    if !text.contains("\\x") {
        return Cow::Borrowed(text.as_bytes());
    }
    let src = text.as_bytes();
    let mut out = Vec::with_capacity(src.len());
    let mut i = 0;
    while i < src.len() {
        if src[i] == b'\\' {
            if src.get(i + 1) == Some(&b'\\') {
                out.push(b'\\');
                i += 2;
                continue;
            }
            if src.get(i + 1) == Some(&b'x')
                && let Some(b) = src
                    .get(i + 2..i + 4)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 4;
                continue;
            }
        }
        out.push(src[i]);
        i += 1;
    }
    Cow::Owned(out)
}

/// The text of a whole path (a dataset folder), as [`path_text`] makes it.
pub fn text_of_path(path: &Path) -> Cow<'_, str> {
    path_text(path.as_os_str().as_bytes())
}

/// The path a [`text_of_path`] came from.
pub fn path_of_text(text: &str) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(&path_bytes(text)))
}

/// `serde(with = ...)` for a path kept as its reversible text (a JSON string, even when the
/// path is not UTF-8).
pub mod path_as_text {
    use std::path::{Path, PathBuf};

    pub fn serialize<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::text_of_path(path))
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        Ok(super::path_of_text(&text))
    }
}

/// The local file a relative path's text names under `dir`.
pub fn local_path(dir: &Path, rel: &str) -> PathBuf {
    dir.join(OsStr::from_bytes(&path_bytes(rel)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(bytes: &[u8]) -> String {
        let text = path_text(bytes).into_owned();
        assert_eq!(&*path_bytes(&text), bytes, "{text:?}");
        assert!(!text.chars().any(char::is_control), "{text:?}");
        text
    }

    #[test]
    fn ordinary_names_stay_as_they_are() {
        for name in [
            "a.png",
            "clips/día 1/ñ.mp4",
            "-dash.mp4",
            "back\\slash.jpg",
            "日本.mkv",
        ] {
            assert_eq!(round_trip(name.as_bytes()), name);
        }
    }

    #[test]
    fn other_names_are_escaped_visibly_and_come_back_exactly() {
        assert_eq!(round_trip(b"caf\xe9.png"), "caf\\xe9.png");
        assert_eq!(round_trip(b"two\nlines.mp4"), "two\\x0alines.mp4");
        assert_eq!(round_trip(b"tab\there/\xff\xfe"), "tab\\x09here/\\xff\\xfe");
        // A name that spells an escape is escaped itself, so it is not read as one.
        assert_eq!(round_trip(b"lit\\xe9.png"), "lit\\\\xe9.png");
        assert_eq!(round_trip(b"a\\b\xff"), "a\\\\b\\xff");
        assert_eq!(round_trip("c1\u{85}.png".as_bytes()), "c1\\xc2\\x85.png");
    }

    #[test]
    fn every_short_byte_string_round_trips() {
        let alphabet = [b'a', b'\\', b'x', b'e', b'9', b'\n', 0xc3, 0xa9, 0xff, b'/'];
        let mut name = Vec::new();
        for n in 0..5u32 {
            for code in 0..alphabet.len().pow(n) {
                name.clear();
                let mut c = code;
                for _ in 0..n {
                    name.push(alphabet[c % alphabet.len()]);
                    c /= alphabet.len();
                }
                round_trip(&name);
            }
        }
    }
}
