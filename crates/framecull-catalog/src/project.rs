//! A project: the folder holding a dataset's catalog, its settings (`framecull.toml`) and its
//! manifests. Every front end finds and opens projects through this type, by one rule.

use std::path::{Path, PathBuf};

use super::{Catalog, DB_FILE, Result};
use framecull_analysis::flags::Config;

/// Name of the project folder inside a dataset.
pub const PROJECT_DIR_NAME: &str = ".framecull";
/// The project's settings file: flag rules and statistical cut-offs.
pub const CONFIG_FILE: &str = "framecull.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    dir: PathBuf,
}

impl Project {
    /// The project in the folder `dir` (which need not exist yet).
    pub fn at(dir: impl Into<PathBuf>) -> Project {
        Project { dir: dir.into() }
    }

    /// The default project of a dataset: `<root>/.framecull`.
    pub fn of_dataset(root: &Path) -> Project {
        Project::at(root.join(PROJECT_DIR_NAME))
    }

    /// The default project of a dataset in object storage (`s3://bucket/prefix`), where the
    /// window keeps it when it opens a URL: `$XDG_DATA_HOME/framecull/projects/NAME` (else
    /// `~/.local/share/...`), NAME readable from the URL plus a hash of it, so each URL has its
    /// own project and opening it again finds the same one. (The CLI asks for `--project`.)
    pub fn of_url(url: &str) -> Project {
        let data = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("share"))
            })
            .unwrap_or_else(std::env::temp_dir);
        let url = url.trim_end_matches('/');
        let readable: String = url
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect::<String>()
            .split('-')
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("-");
        let readable: String = readable.chars().take(80).collect();
        let hash = xxhash_rust::xxh3::xxh3_64(url.as_bytes()) as u32;
        Project::at(
            data.join("framecull")
                .join("projects")
                .join(format!("{readable}-{hash:08x}")),
        )
    }

    /// The project `start` is in or belongs to: `start` itself when it is a project folder,
    /// else the first `.framecull` project of `start` or a folder above it.
    pub fn locate(start: &Path) -> Option<Project> {
        start.ancestors().find_map(|d| {
            [d.to_path_buf(), d.join(PROJECT_DIR_NAME)]
                .into_iter()
                .map(Project::at)
                .find(Project::exists)
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether a catalog has been created here.
    pub fn exists(&self) -> bool {
        self.dir.join(DB_FILE).is_file()
    }

    /// Open the existing catalog.
    pub fn open(&self) -> Result<Catalog> {
        Catalog::open(&self.dir)
    }

    /// Open the catalog of the dataset at `root`, creating the project when it is new.
    pub fn create_or_open(&self, root: &Path) -> Result<Catalog> {
        Catalog::create_or_open(&self.dir, root)
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.join(CONFIG_FILE)
    }

    /// The project's settings; the defaults when it has no `framecull.toml`.
    pub fn config(&self) -> std::result::Result<Config, ConfigError> {
        let path = self.config_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text).map_err(|e| ConfigError::Invalid {
                path,
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }

    /// Set one setting (`section.field`, e.g. `quality.dark_below`) in `framecull.toml`,
    /// keeping the file's comments and other settings; `None` removes it (an optional rule
    /// turns off). The file is replaced atomically, and only with settings that parse.
    pub fn save_setting(
        &self,
        key: &str,
        value: Option<f64>,
        integer: bool,
    ) -> std::result::Result<Config, ConfigError> {
        let path = self.config_path();
        let write = |source| ConfigError::Write {
            path: path.clone(),
            source,
        };
        self.write_default_config().map_err(write)?;
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        let invalid = |message: String| ConfigError::Invalid {
            path: path.clone(),
            message,
        };
        let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| invalid(format!("{e}")))?;
        let (section, field) = key
            .split_once('.')
            .ok_or_else(|| invalid(format!("{key} is not a section.field setting")))?;
        let table = doc
            .entry(section)
            .or_insert(toml_edit::table())
            .as_table_like_mut()
            .ok_or_else(|| invalid(format!("[{section}] is not a table")))?;
        match value {
            Some(v) if integer => {
                table.insert(field, toml_edit::value(v.round() as i64));
            }
            Some(v) => {
                table.insert(field, toml_edit::value(v));
            }
            None => {
                table.remove(field);
            }
        }
        let text = doc.to_string();
        let config: Config = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let staged = path.with_extension("toml.tmp");
        std::fs::write(&staged, &text)
            .and_then(|()| std::fs::rename(&staged, &path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&staged);
                write(e)
            })?;
        Ok(config)
    }

    /// Write the default settings, every one spelled out, when the project has none.
    pub fn write_default_config(&self) -> std::io::Result<()> {
        let path = self.config_path();
        if path.exists() {
            return Ok(());
        }
        let body = toml::to_string_pretty(&Config::default()).unwrap_or_default();
        let text = format!(
            "# framecull project settings: rules and cut-offs that shape the flags.\n\
             # Edit, then run `framecull flags --recompute` (no rescan needed).\n\
             # [rules] limits are off until set, e.g. min_width = 640, min_duration_secs = 0.5.\n\
             # [limits]: pictures larger than these (pixels) are not decoded but flagged\n\
             # too_large; raising them takes `framecull analyze`. max_memory_mib caps each\n\
             # FFmpeg worker process (0: no cap).\n\
             # [video] stream: which video stream of a file is read, \"best\" (FFmpeg's\n\
             # choice, as ffmpeg, torchcodec and decord make it), \"first\" or a stream index;\n\
             # the next scan reads every video again. color_matrix_guess: the YUV matrix of\n\
             # a video that declares none, \"ffmpeg\" (BT.601, as swscale, PyAV and decord) or\n\
             # \"by_size\" (BT.709 from 720 lines up); manifests record it per clip.\n\n{body}"
        );
        std::fs::create_dir_all(&self.dir)?;
        std::fs::write(path, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn located_from_the_project_the_dataset_or_any_folder_below() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("data");
        let deep = root.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(Project::locate(&deep), None);
        let project = Project::of_dataset(&root);
        project.create_or_open(&root).unwrap();
        assert!(project.exists());
        assert_eq!(Project::locate(&deep).as_ref(), Some(&project));
        assert_eq!(Project::locate(&root).as_ref(), Some(&project));
        assert_eq!(Project::locate(project.dir()).as_ref(), Some(&project));
        // A project kept outside the dataset is found from its own folder.
        let elsewhere = Project::at(tmp.path().join("proj"));
        elsewhere.create_or_open(&root).unwrap();
        assert_eq!(Project::locate(elsewhere.dir()).as_ref(), Some(&elsewhere));
    }

    #[test]
    fn settings_default_then_written_then_read_back_and_bad_ones_named() {
        let tmp = tempfile::tempdir().unwrap();
        let project = Project::at(tmp.path());
        assert_eq!(project.config().unwrap(), Config::default());
        project.write_default_config().unwrap();
        assert_eq!(project.config().unwrap(), Config::default());
        std::fs::write(project.config_path(), "[rules]\nmin_width = 640\n").unwrap();
        assert_eq!(project.config().unwrap().rules.min_width, Some(640));
        // An existing file is never overwritten with the defaults.
        project.write_default_config().unwrap();
        assert_eq!(project.config().unwrap().rules.min_width, Some(640));
        std::fs::write(project.config_path(), "[rules\n").unwrap();
        let err = project.config().unwrap_err().to_string();
        assert!(err.contains(CONFIG_FILE), "{err}");
    }

    #[test]
    fn a_saved_setting_keeps_the_comments_and_only_valid_settings_are_written() {
        let tmp = tempfile::tempdir().unwrap();
        let project = Project::at(tmp.path());
        std::fs::write(
            project.config_path(),
            "# our rules\n[rules]\nmin_width = 640 # phones\n",
        )
        .unwrap();
        let config = project
            .save_setting("quality.dark_below", Some(31.5), false)
            .unwrap();
        assert_eq!(config.quality.dark_below, 31.5);
        let config = project
            .save_setting("rules.min_height", Some(479.6), true)
            .unwrap();
        assert_eq!(config.rules.min_height, Some(480));
        assert_eq!(project.config().unwrap(), config);
        let text = std::fs::read_to_string(project.config_path()).unwrap();
        assert!(
            text.contains("# our rules") && text.contains("# phones"),
            "{text}"
        );
        let config = project.save_setting("rules.min_width", None, true).unwrap();
        assert_eq!(config.rules.min_width, None);
        // A key the settings do not have is refused and the file is left as it was.
        let before = std::fs::read_to_string(project.config_path()).unwrap();
        let err = project.save_setting("rules.min_whatever", Some(1.0), true);
        assert!(matches!(err, Err(ConfigError::Invalid { .. })), "{err:?}");
        assert_eq!(
            std::fs::read_to_string(project.config_path()).unwrap(),
            before
        );
    }
}
