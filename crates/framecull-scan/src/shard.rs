//! Sharded scans: a deterministic partition of a dataset's files by a stable hash of their
//! path relative to the root, and the marker a finished shard leaves in its project
//! (`shard.json`), which launchers and `framecull merge` read.
//!
//! The partition is `xxh3_64(relative path bytes) % count`: a file's shard depends on its own
//! path only, so adding or removing files never moves other files between shards.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use framecull_catalog::ScanCounts;
use framecull_model::AnalysisLevel;

/// The marker a finished shard writes into its project folder.
pub const MARKER_FILE: &str = "shard.json";

/// One shard of a partition: `index` of `count` (zero-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ShardSpec {
    pub index: u32,
    pub count: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShardSpecError {
    #[error("invalid shard {0:?}: expected I/N with 0 <= I < N (zero-based), e.g. 0/4")]
    Invalid(String),
    #[error(
        "no shard index: set SLURM_ARRAY_TASK_ID (a Slurm array) or JOB_COMPLETION_INDEX \
         (a Kubernetes Indexed Job), or pass --shard I/N"
    )]
    NoIndex,
    #[error("no shard count: pass --shards N (SLURM_ARRAY_TASK_COUNT is not set)")]
    NoCount,
    #[error("invalid {name}={value:?}: expected a whole number")]
    BadVariable { name: &'static str, value: String },
    #[error("shard index {index} (from {from}) is not below the shard count {count}")]
    OutOfRange {
        index: i64,
        count: u32,
        from: &'static str,
    },
}

impl ShardSpec {
    pub fn new(index: u32, count: u32) -> Result<Self, ShardSpecError> {
        if count == 0 || index >= count {
            return Err(ShardSpecError::Invalid(format!("{index}/{count}")));
        }
        Ok(ShardSpec { index, count })
    }

    /// `I/N`, zero-based.
    pub fn parse(text: &str) -> Result<Self, ShardSpecError> {
        let invalid = || ShardSpecError::Invalid(text.to_string());
        let (i, n) = text.trim().split_once('/').ok_or_else(invalid)?;
        let index = i.trim().parse().map_err(|_| invalid())?;
        let count = n.trim().parse().map_err(|_| invalid())?;
        ShardSpec::new(index, count).map_err(|_| invalid())
    }

    /// The shard of a scheduler's array task: the index is `SLURM_ARRAY_TASK_ID` as it is
    /// (arrays are `--array=0-(N-1)`; a task resubmitted alone, `--array=2`, is still shard 2)
    /// or else `JOB_COMPLETION_INDEX` (Kubernetes Indexed Job); the count is `count`, else
    /// `SLURM_ARRAY_TASK_COUNT`. `var` reads a variable.
    pub fn from_env(
        count: Option<u32>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ShardSpecError> {
        let number = |name: &'static str| -> Result<Option<i64>, ShardSpecError> {
            match var(name) {
                None => Ok(None),
                Some(v) if v.trim().is_empty() => Ok(None),
                Some(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| ShardSpecError::BadVariable { name, value: v }),
            }
        };
        let (index, from) = if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
            (id, "SLURM_ARRAY_TASK_ID")
        } else if let Some(i) = number("JOB_COMPLETION_INDEX")? {
            (i, "JOB_COMPLETION_INDEX")
        } else {
            return Err(ShardSpecError::NoIndex);
        };
        let count = match count {
            Some(n) => n,
            None => match number("SLURM_ARRAY_TASK_COUNT")? {
                Some(n) => u32::try_from(n).map_err(|_| ShardSpecError::BadVariable {
                    name: "SLURM_ARRAY_TASK_COUNT",
                    value: n.to_string(),
                })?,
                None => return Err(ShardSpecError::NoCount),
            },
        };
        match u32::try_from(index) {
            Ok(i) if i < count => Ok(ShardSpec { index: i, count }),
            _ => Err(ShardSpecError::OutOfRange { index, count, from }),
        }
    }

    /// Whether the file at `rel_path` (relative to the root, `/`-separated) is in this shard.
    pub fn contains(&self, rel_path: &str) -> bool {
        shard_of(rel_path, self.count) == self.index
    }
}

impl std::fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The shard (of `count`) the file at `rel_path` belongs to: a fixed 64-bit hash (XXH3, seed
/// 0) of the path's bytes, modulo `count`.
pub fn shard_of(rel_path: &str, count: u32) -> u32 {
    (xxhash_rust::xxh3::xxh3_64(rel_path.as_bytes()) % u64::from(count.max(1))) as u32
}

/// What a finished shard records in `shard.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardMarker {
    /// The dataset root, canonical (as reversible text: a name need not be UTF-8).
    #[serde(with = "framecull_model::path_as_text")]
    pub root: PathBuf,
    pub index: u32,
    pub count: u32,
    /// The analysis the shard ran: deep (`deep`), a triage (`triage`), or none (neither).
    pub deep: bool,
    #[serde(default)]
    pub triage: bool,
    pub counts: MarkerCounts,
    /// `clean` (exit 0) or `problems` (exit 1).
    pub outcome: String,
    /// Seconds since the Unix epoch, and the same in UTC (RFC 3339).
    pub finished_at_unix: f64,
    pub finished_at: String,
    pub framecull_version: String,
}

/// The counts of a finished shard.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkerCounts {
    #[serde(flatten)]
    pub scan: ScanCounts,
    /// Rows in the shard's catalog (media files, including missing ones).
    pub items: u64,
    /// Files analysed by this run (`--deep` or `--triage`).
    pub analysed: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum MarkerError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid shard marker {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// How a finished shard ended: its exit status 0 or 1.
pub const OUTCOME_CLEAN: &str = "clean";
pub const OUTCOME_PROBLEMS: &str = "problems";

#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error(transparent)]
    Marker(#[from] MarkerError),
    #[error(
        "{project} holds shard {recorded} of {recorded_root}, not shard {given} of {given_root}: \
         use another --project for each shard"
    )]
    OtherShard {
        project: PathBuf,
        recorded: ShardSpec,
        recorded_root: PathBuf,
        given: ShardSpec,
        given_root: PathBuf,
    },
}

impl ShardMarker {
    /// The marker of a shard finished now.
    pub fn finished_now(
        root: &Path,
        spec: ShardSpec,
        level: AnalysisLevel,
        counts: MarkerCounts,
        problems: bool,
    ) -> ShardMarker {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        ShardMarker {
            root: root.to_path_buf(),
            index: spec.index,
            count: spec.count,
            deep: level == AnalysisLevel::Deep,
            triage: level == AnalysisLevel::Triage,
            counts,
            outcome: if problems {
                OUTCOME_PROBLEMS
            } else {
                OUTCOME_CLEAN
            }
            .to_string(),
            finished_at_unix: now.as_secs_f64(),
            finished_at: rfc3339_utc(now.as_secs() as i64),
            framecull_version: framecull_model::VERSION.to_string(),
        }
    }

    /// The analysis the shard ran.
    pub fn level(&self) -> AnalysisLevel {
        match (self.deep, self.triage) {
            (true, _) => AnalysisLevel::Deep,
            (false, true) => AnalysisLevel::Triage,
            (false, false) => AnalysisLevel::None,
        }
    }

    /// Whether the shard ended with per-file problems (exit status 1).
    pub fn had_problems(&self) -> bool {
        self.outcome == OUTCOME_PROBLEMS
    }

    /// The marker of `project_dir` when it records this very shard (same root, index, count
    /// and analysis level) finished: rerunning it has nothing to do. `None` when the shard has
    /// not finished or was finished at another level; an error when the project holds another
    /// shard or another dataset's.
    pub fn finished(
        project_dir: &Path,
        root: &Path,
        spec: ShardSpec,
        level: AnalysisLevel,
    ) -> Result<Option<ShardMarker>, ShardError> {
        let Some(marker) = ShardMarker::read(project_dir)? else {
            return Ok(None);
        };
        if marker.root != root || marker.spec() != spec {
            return Err(ShardError::OtherShard {
                project: project_dir.to_path_buf(),
                recorded: marker.spec(),
                recorded_root: marker.root,
                given: spec,
                given_root: root.to_path_buf(),
            });
        }
        Ok((marker.level() == level).then_some(marker))
    }

    pub fn spec(&self) -> ShardSpec {
        ShardSpec {
            index: self.index,
            count: self.count,
        }
    }

    pub fn path(project_dir: &Path) -> PathBuf {
        project_dir.join(MARKER_FILE)
    }

    /// The marker of the shard project at `project_dir`; `None` when it has none (a shard
    /// not finished, or not a shard).
    pub fn read(project_dir: &Path) -> Result<Option<ShardMarker>, MarkerError> {
        Ok(Self::read_bytes(project_dir)?.map(|(m, _)| m))
    }

    /// The marker and its exact bytes.
    pub fn read_bytes(project_dir: &Path) -> Result<Option<(ShardMarker, Vec<u8>)>, MarkerError> {
        let path = Self::path(project_dir);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(MarkerError::Read { path, source }),
        };
        let marker = serde_json::from_slice(&bytes).map_err(|e| MarkerError::Invalid {
            path,
            message: e.to_string(),
        })?;
        Ok(Some((marker, bytes)))
    }

    /// Write the marker atomically: a temporary file, synced, renamed over the marker.
    pub fn write(&self, project_dir: &Path) -> Result<(), MarkerError> {
        use std::io::Write;
        let path = Self::path(project_dir);
        let tmp = project_dir.join(format!(".{MARKER_FILE}.tmp"));
        let write_err = |source| MarkerError::Write {
            path: path.clone(),
            source,
        };
        let mut text = serde_json::to_string_pretty(self).map_err(|e| MarkerError::Invalid {
            path: path.clone(),
            message: e.to_string(),
        })?;
        text.push('\n');
        let mut file = std::fs::File::create(&tmp).map_err(write_err)?;
        file.write_all(text.as_bytes()).map_err(write_err)?;
        file.sync_all().map_err(write_err)?;
        std::fs::rename(&tmp, &path).map_err(write_err)?;
        if let Ok(dir) = std::fs::File::open(project_dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// Remove the marker (before the shard is scanned again), so nothing takes a shard being
    /// rescanned for finished.
    pub fn remove(project_dir: &Path) -> Result<(), MarkerError> {
        let path = Self::path(project_dir);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(MarkerError::Write { path, source }),
        }
    }
}

/// Seconds since the Unix epoch as UTC RFC 3339 (`2026-12-01T00:50:00Z`).
pub fn rfc3339_utc(unix_secs: i64) -> String {
    let days = unix_secs.div_euclid(86_400);
    let secs = unix_secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsed_and_bad_values_refused() {
        assert_eq!(
            ShardSpec::parse("0/4"),
            Ok(ShardSpec { index: 0, count: 4 })
        );
        assert_eq!(
            ShardSpec::parse(" 3 / 4 "),
            Ok(ShardSpec { index: 3, count: 4 })
        );
        for bad in ["4/4", "1/0", "-1/4", "a/4", "1", "1/2/3", ""] {
            assert!(ShardSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn index_from_slurm_or_kubernetes() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        assert_eq!(
            ShardSpec::from_env(None, slurm),
            Ok(ShardSpec { index: 2, count: 4 })
        );
        // One task resubmitted alone (`--array=2`): its own index, the count as given; without
        // a count it is refused, never taken for another shard.
        let again = || {
            env(&[
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_ARRAY_TASK_MIN", "2"),
                ("SLURM_ARRAY_TASK_COUNT", "1"),
            ])
        };
        assert_eq!(
            ShardSpec::from_env(Some(4), again()),
            Ok(ShardSpec { index: 2, count: 4 })
        );
        assert!(ShardSpec::from_env(None, again()).is_err());
        let k8s = env(&[("JOB_COMPLETION_INDEX", "5")]);
        assert_eq!(
            ShardSpec::from_env(Some(8), k8s),
            Ok(ShardSpec { index: 5, count: 8 })
        );
        assert_eq!(
            ShardSpec::from_env(None, env(&[("JOB_COMPLETION_INDEX", "5")])),
            Err(ShardSpecError::NoCount)
        );
        assert_eq!(
            ShardSpec::from_env(Some(4), env(&[])),
            Err(ShardSpecError::NoIndex)
        );
        assert!(matches!(
            ShardSpec::from_env(Some(4), env(&[("JOB_COMPLETION_INDEX", "4")])),
            Err(ShardSpecError::OutOfRange { .. })
        ));
        assert!(matches!(
            ShardSpec::from_env(Some(4), env(&[("SLURM_ARRAY_TASK_ID", "x")])),
            Err(ShardSpecError::BadVariable { .. })
        ));
    }

    #[test]
    fn adding_files_never_moves_other_files_between_shards() {
        let paths: Vec<String> = (0..2000)
            .map(|i| format!("d{}/file_{i:05}.jpg", i % 17))
            .collect();
        let count = 7;
        let before: Vec<u32> = paths.iter().map(|p| shard_of(p, count)).collect();
        // Every shard gets a share, and the shard of a path is fixed by that path alone.
        for s in 0..count {
            let n = before.iter().filter(|&&x| x == s).count();
            assert!((200..=380).contains(&n), "shard {s} has {n} of 2000");
        }
        let mut grown = paths.clone();
        grown.extend((0..500).map(|i| format!("new/added_{i}.mp4")));
        grown.sort();
        for (p, s) in paths.iter().zip(&before) {
            assert_eq!(shard_of(p, count), *s, "{p} moved");
        }
        // Pinned: the partition must not change between framecull versions (launchers and
        // shard projects made by one version are merged by another).
        let pinned: Vec<(u64, u32)> = ["a.jpg", "clips/h264.mp4", "été/x y#.mov"]
            .iter()
            .map(|p| (xxhash_rust::xxh3::xxh3_64(p.as_bytes()), shard_of(p, 1000)))
            .collect();
        assert_eq!(
            pinned,
            vec![
                (101_655_816_125_349_749, 749),
                (7_441_343_272_847_812_271, 271),
                (11_759_341_674_741_125_267, 267)
            ]
        );
        let spec = ShardSpec { index: 1, count: 3 };
        let mine: Vec<&String> = grown.iter().filter(|p| spec.contains(p)).collect();
        assert!(mine.iter().all(|p| shard_of(p, 3) == 1));
    }

    #[test]
    fn utc_dates() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_796_085_000), "2026-12-01T00:30:00Z");
    }
}
