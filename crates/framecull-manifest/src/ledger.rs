//! A ledger: a file of JSON lines, one per piece of work done (a clip file, a shard), each
//! appended and synced as that work is done, so that a run a kill or a signal stopped resumes
//! from what it records. A line a kill cut short is skipped when read, and ended before the
//! next is appended.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ManifestError;

/// A ledger's file, open for appending.
pub struct Ledger {
    path: PathBuf,
    file: std::fs::File,
}

impl Ledger {
    /// Open the ledger at `path` (made where missing; its folder must exist) for appending, and
    /// read its entries that parse as `T`, in order.
    pub fn open<T: DeserializeOwned>(path: &Path) -> Result<(Ledger, Vec<T>), ManifestError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(ManifestError::io(path, e)),
        };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ManifestError::io(path, e))?;
        // A line a kill cut short ends here, not in the next entry.
        if bytes.last().is_some_and(|&b| b != b'\n') {
            file.write_all(b"\n")
                .map_err(|e| ManifestError::io(path, e))?;
        }
        let ledger = Ledger {
            path: path.to_path_buf(),
            file,
        };
        Ok((ledger, parse(&bytes)))
    }

    /// Append `entry`'s line, synced to disk.
    pub fn append<T: Serialize>(&mut self, entry: &T) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(entry)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()
    }

    /// The ledger's file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The entries of a ledger's bytes that parse as `T`, in order (a line cut short, or of
/// another kind, is skipped).
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Vec<T> {
    bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Done {
        file: String,
        bytes: u64,
    }

    fn done(file: &str, bytes: u64) -> Done {
        Done {
            file: file.to_string(),
            bytes,
        }
    }

    #[test]
    fn entries_appended_are_read_back_and_a_line_cut_short_is_skipped_and_ended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        let (mut ledger, read) = Ledger::open::<Done>(&path).unwrap();
        assert!(read.is_empty());
        ledger.append(&done("a", 1)).unwrap();
        ledger.append(&done("b", 2)).unwrap();
        drop(ledger);
        // A kill in the middle of a line.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(br#"{"file":"c","by"#).unwrap();
        drop(file);

        let (mut ledger, read) = Ledger::open::<Done>(&path).unwrap();
        assert_eq!(read, [done("a", 1), done("b", 2)]);
        ledger.append(&done("d", 4)).unwrap();
        drop(ledger);
        let (_, read) = Ledger::open::<Done>(&path).unwrap();
        assert_eq!(read, [done("a", 1), done("b", 2), done("d", 4)]);
        // Whole lines are not ended again: no empty lines pile up across runs.
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("\n\n").count(), 0, "{text:?}");
        assert!(text.ends_with("\"bytes\":4}\n"), "{text:?}");
    }

    #[test]
    fn lines_ended_by_crlf_and_a_folder_with_an_odd_name_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("clips ü #1");
        std::fs::create_dir(&folder).unwrap();
        let path = folder.join("ledger.jsonl");
        // Lines a Windows tool ended with CR LF, and one that is not an entry.
        std::fs::write(
            &path,
            b"{\"file\":\"a\",\"bytes\":1}\r\nnot json\r\n{\"file\":\"b\",\"bytes\":2}\r\n",
        )
        .unwrap();
        let (mut ledger, read) = Ledger::open::<Done>(&path).unwrap();
        assert_eq!(read, [done("a", 1), done("b", 2)]);
        assert_eq!(ledger.path(), path);
        ledger.append(&done("c", 3)).unwrap();
        let (_, read) = Ledger::open::<Done>(&path).unwrap();
        assert_eq!(read, [done("a", 1), done("b", 2), done("c", 3)]);
    }

    #[test]
    fn a_ledger_that_cannot_be_read_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the file should be.
        let path = dir.path().join("ledger.jsonl");
        std::fs::create_dir(&path).unwrap();
        let err = Ledger::open::<Done>(&path).err().expect("an error");
        assert!(err.to_string().contains("ledger.jsonl"), "{err}");
    }
}
