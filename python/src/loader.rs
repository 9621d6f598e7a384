//! The library's loader behind a Python object. It opens the loader lazily, in the process
//! that uses it: after a `fork` the child drops nothing of the parent's loader (its threads
//! do not exist there) and opens its own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use framecull_loader::{
    BatchData, EpochStream, Loader, LoaderConfig, LoaderError, Next, Recycler, Share, Stats,
};
use framecull_manifest::{self as manifest, ManifestRow, VersionMeta};
use framecull_model::SeekReference;
use framecull_storage::Root;
use pyo3::prelude::*;

use crate::dlpack::{Frames, HostBuffer};
use crate::error;

enum State {
    Closed,
    Idle(Box<Loader>),
    Reading(EpochStream),
}

/// The native loader (`framecull.Loader` wraps it).
#[pyclass(module = "framecull._framecull")]
pub struct NativeLoader {
    /// The version's metadata file.
    path: PathBuf,
    root: PathBuf,
    config: LoaderConfig,
    meta: VersionMeta,
    rows: Arc<Vec<ManifestRow>>,
    references: HashMap<String, SeekReference>,
    /// Reading the version's shards: the folder or prefix given for them, if any.
    shard_root: Option<PathBuf>,
    /// The process the state belongs to.
    pid: u32,
    /// Behind a mutex only to be `Sync`; Python's borrow rules already give one user at a time.
    state: Mutex<State>,
    stats: Stats,
    /// Takes batch buffers back for the loader when Python lets go of them.
    recycler: Recycler,
}

fn loader_error(py: Python<'_>, e: LoaderError) -> PyErr {
    match e {
        LoaderError::Manifest(e) => error(py, "ManifestError", e.to_string(), None),
        LoaderError::Gpu(e) => error(py, "GpuError", format!("GPU: {e}"), None),
        LoaderError::File { path, reason } => {
            let path = path.display().to_string();
            error(py, "FileError", reason, Some(path))
        }
        LoaderError::Config(m) => error(py, "ConfigError", m, None),
        LoaderError::Storage(e) => error(py, "StorageError", e.to_string(), None),
        LoaderError::Cache(m) => error(py, "CacheError", m, None),
    }
}

pub(crate) fn manifest_error(py: Python<'_>, e: manifest::ManifestError) -> PyErr {
    error(py, "ManifestError", e.to_string(), None)
}

/// The metadata file of `version` of the manifest at `path` (a manifest folder, or one of a
/// version's files), or of its latest version; a `ManifestError` when there is none.
pub(crate) fn version_path(py: Python<'_>, path: &Path, version: Option<u32>) -> PyResult<PathBuf> {
    let fail = |m: String| error(py, "ManifestError", m, Some(path.display().to_string()));
    let chosen = match version {
        None => path.to_path_buf(),
        Some(v) if path.is_dir() => path.join(format!("v{v:04}.json")),
        Some(v) => {
            let wanted = format!("v{v:04}");
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            if stem != wanted {
                return Err(fail(format!(
                    "{} is version {stem}, not {wanted}: pass the manifest's folder to choose a version",
                    path.display()
                )));
            }
            path.to_path_buf()
        }
    };
    if !chosen.exists() {
        return Err(fail(format!("no manifest at {}", chosen.display())));
    }
    // Absolute, so that a snapshot names it wherever it is read.
    Ok(std::path::absolute(&chosen).unwrap_or(chosen))
}

impl NativeLoader {
    fn state(&mut self) -> &mut State {
        let pid = std::process::id();
        if pid != self.pid {
            // A forked child: the parent's threads are not here, and its locks may be held
            // forever. Forget its loader rather than join or drop it.
            let inherited = std::mem::replace(
                self.state.get_mut().unwrap_or_else(|p| p.into_inner()),
                State::Closed,
            );
            std::mem::forget(inherited);
            self.pid = pid;
        }
        self.state.get_mut().unwrap_or_else(|p| p.into_inner())
    }

    /// The loader, opened if needed, with no epoch running.
    fn idle(&mut self, py: Python<'_>) -> PyResult<&mut Loader> {
        let state = std::mem::replace(self.state(), State::Closed);
        let loader = match state {
            State::Idle(loader) => loader,
            State::Reading(stream) => Box::new(
                py.detach(|| stream.finish())
                    .map_err(|e| loader_error(py, e))?,
            ),
            State::Closed => {
                let (rows, root, config) = (
                    Arc::clone(&self.rows),
                    self.root.clone(),
                    self.config.clone(),
                );
                let references = self.references.clone();
                let (path, shard_root) = (self.path.clone(), self.shard_root.clone());
                let mut loader = py
                    .detach(move || {
                        if config.shards {
                            return Loader::open(&path, shard_root.as_deref(), config);
                        }
                        let root = Root::of_recorded(&root).map_err(LoaderError::from)?;
                        Loader::from_rows(&rows, &root, config)
                    })
                    .map_err(|e| loader_error(py, e))?;
                loader.set_seek_references(references);
                self.stats = loader.stats().clone();
                self.recycler = loader.recycler();
                Box::new(loader)
            }
        };
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        *state = State::Idle(loader);
        match state {
            State::Idle(loader) => Ok(loader),
            _ => unreachable!("just set"),
        }
    }
}

#[pymethods]
impl NativeLoader {
    /// Read a manifest's rows and metadata; the files are checked when first needed.
    #[new]
    #[pyo3(signature = (manifest, config_json, version=None, root=None))]
    fn new(
        py: Python<'_>,
        manifest: PathBuf,
        config_json: &str,
        version: Option<u32>,
        root: Option<PathBuf>,
    ) -> PyResult<NativeLoader> {
        let config: LoaderConfig = serde_json::from_str(config_json).map_err(|e| {
            error(
                py,
                "ConfigError",
                format!("invalid loader settings: {e}"),
                None,
            )
        })?;
        let path = version_path(py, &manifest, version)?;
        let (meta, rows) = manifest::open_path(&path).map_err(|e| manifest_error(py, e))?;
        let references =
            manifest::read_seek_references(&path, &meta).map_err(|e| manifest_error(py, e))?;
        let shard_root = root.clone().filter(|_| config.shards);
        let (rows, root) = if config.shards {
            // The shards' own index says which rows they hold, when the loader opens.
            (rows, root.unwrap_or_default())
        } else {
            framecull_loader::rows_to_read(&meta, rows, root.as_deref(), config.clip_files)
                .map_err(|e| loader_error(py, e))?
        };
        Ok(NativeLoader {
            path,
            root,
            config,
            meta,
            rows: Arc::new(rows),
            references,
            shard_root,
            pid: std::process::id(),
            state: Mutex::new(State::Closed),
            stats: Stats::default(),
            recycler: Recycler::default(),
        })
    }

    /// The version's metadata (`vNNNN.json`) as JSON.
    fn meta_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.meta)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }

    /// The settings as JSON (`LoaderConfig`).
    fn config_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.config)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }

    #[getter]
    fn path(&self) -> String {
        self.path.display().to_string()
    }

    #[getter]
    fn root(&self) -> String {
        self.root.display().to_string()
    }

    /// Batches of `epoch` for the share `index` of `count`.
    fn batches(
        &mut self,
        py: Python<'_>,
        epoch: u64,
        index: usize,
        count: usize,
    ) -> PyResult<usize> {
        let loader = self.idle(py)?;
        Ok(loader.plan_share(epoch, Share { index, count }).len())
    }

    /// Clips that will be read (after the split filter and the file checks).
    fn clip_count(&mut self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.idle(py)?.clip_count())
    }

    /// Which device preprocesses.
    fn device(&mut self, py: Python<'_>) -> PyResult<String> {
        Ok(self.idle(py)?.device().to_string())
    }

    /// Start reading the share `index` of `count` of `epoch`'s batches, from the share's
    /// batch `skip` on (a running epoch stops first).
    #[pyo3(signature = (epoch, index, count, skip = 0))]
    fn start(
        &mut self,
        py: Python<'_>,
        epoch: u64,
        index: usize,
        count: usize,
        skip: usize,
    ) -> PyResult<()> {
        self.idle(py)?;
        let State::Idle(loader) = std::mem::replace(self.state(), State::Closed) else {
            return Ok(());
        };
        let stream = loader
            .stream(epoch, Share { index, count }, skip)
            .map_err(|e| loader_error(py, e))?;
        *self.state() = State::Reading(stream);
        Ok(())
    }

    /// The next batch of the running epoch; `None` at its end. Waits without the GIL and
    /// wakes for Ctrl-C.
    fn next_batch(&mut self, py: Python<'_>) -> PyResult<Option<NativeBatch>> {
        let rows = Arc::clone(&self.rows);
        let State::Reading(stream) = self.state() else {
            return Ok(None);
        };
        let delivered = loop {
            match py.detach(|| stream.next_timeout(Duration::from_millis(50))) {
                Next::Batch(delivered) => break *delivered,
                Next::Pending => py.check_signals()?,
                Next::End => {
                    self.idle(py)?;
                    return Ok(None);
                }
            }
        };
        let (batch, stats) = delivered;
        self.stats = stats;
        let batch = batch.map_err(|e| loader_error(py, e))?;
        let BatchData::Host(bytes) = batch.data else {
            return Err(error(
                py,
                "Error",
                "a batch was not in host memory".into(),
                None,
            ));
        };
        let mut out = NativeBatch {
            index: batch.index,
            lengths: batch.lengths,
            clip_ids: batch.clip_ids,
            rows: Vec::new(),
            paths: Vec::new(),
            frame_indices: Vec::new(),
            pts_secs: Vec::new(),
            labels: Vec::new(),
            tags: Vec::new(),
            splits: Vec::new(),
            motion: Vec::new(),
            layout: match batch.layout {
                framecull_loader::Layout::Bcthw => "bcthw",
                framecull_loader::Layout::Bthwc => "bthwc",
            },
            frames: Py::new(
                py,
                Frames::new(
                    HostBuffer::new(bytes, self.recycler.clone()),
                    batch.shape,
                    batch.dtype,
                ),
            )?,
        };
        for w in batch.windows {
            let row = rows.get(w.row);
            out.rows.push(w.row);
            out.paths
                .push(row.map(|r| r.path.clone()).unwrap_or_default());
            out.labels.push(row.and_then(|r| r.label.clone()));
            out.tags
                .push(row.map(|r| r.tags.clone()).unwrap_or_default());
            out.splits.push(row.and_then(|r| r.split.clone()));
            out.motion.push(row.and_then(|r| r.motion));
            out.frame_indices.push(w.frames);
            out.pts_secs.push(w.secs);
        }
        Ok(Some(out))
    }

    /// Stop the running epoch, if any.
    fn stop(&mut self, py: Python<'_>) -> PyResult<()> {
        if matches!(self.state(), State::Reading(_)) {
            self.idle(py)?;
        }
        Ok(())
    }

    /// Counts and stage timings so far, as JSON (`loader::Stats`).
    fn stats_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.stats)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }
}

/// One batch as the native side delivers it; `framecull.Batch` wraps it.
#[pyclass(module = "framecull._framecull", frozen, get_all)]
pub struct NativeBatch {
    index: usize,
    lengths: Vec<u32>,
    clip_ids: Vec<String>,
    rows: Vec<usize>,
    paths: Vec<String>,
    frame_indices: Vec<Vec<u64>>,
    pts_secs: Vec<Vec<f64>>,
    labels: Vec<Option<String>>,
    tags: Vec<Vec<String>>,
    splits: Vec<Option<String>>,
    motion: Vec<Option<f64>>,
    layout: &'static str,
    frames: Py<Frames>,
}
