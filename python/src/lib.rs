//! `framecull._framecull`: the native half of the Python package. It holds the library's
//! loader, hands batches to Python without copying them (DLPack and the NumPy array
//! interface), and reads manifests and catalogs. The Python half (`python/framecull/`) turns
//! keyword arguments into settings, builds NumPy and Arrow objects and adapts to PyTorch.

mod catalog;
mod dlpack;
mod loader;

use pyo3::prelude::*;

/// A Python exception of `framecull.errors`: `kind` is its class name.
pub(crate) fn error(py: Python<'_>, kind: &str, message: String, path: Option<String>) -> PyErr {
    let made = py
        .import("framecull.errors")
        .and_then(|m| m.getattr(kind))
        .and_then(|class| class.call1((message.clone(), path)));
    match made {
        Ok(value) => PyErr::from_value(value),
        Err(e) => e,
    }
}

/// Names the executable the loader decodes in (its worker processes) when
/// `FRAMECULL_WORKER_EXE` is not set: the one the wheel carries. False when another was named
/// before in this process.
#[pyfunction]
fn _use_worker_exe(path: std::path::PathBuf) -> bool {
    framecull_media::isolate::set_worker_exe(path)
}

#[pymodule]
fn _framecull(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", framecull_model::VERSION)?;
    m.add_function(wrap_pyfunction!(_use_worker_exe, m)?)?;
    m.add_class::<loader::NativeLoader>()?;
    m.add_class::<loader::NativeBatch>()?;
    m.add_class::<dlpack::Frames>()?;
    m.add_function(wrap_pyfunction!(catalog::manifest_rows, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::manifest_versions, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::manifest_diff, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::catalog_locate, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::catalog_items, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::catalog_clips, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::catalog_reviews, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::catalog_manifests, m)?)?;
    Ok(())
}
