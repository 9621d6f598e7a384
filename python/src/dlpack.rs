//! A batch's frames handed to Python without a copy: the `Frames` object owns the loader's
//! buffer and exports it through DLPack (`torch.from_dlpack`, `numpy.from_dlpack`) and the
//! NumPy array interface (`numpy.asarray`). Every view keeps the buffer alive; when the last
//! one is gone the buffer goes back to the loader for a later batch.

use std::ffi::{CStr, c_void};
use std::ptr::NonNull;
use std::sync::Arc;

use framecull_loader::{DType, Recycler};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

/// The bytes of one batch; given back to the loader when dropped.
pub(crate) struct HostBuffer {
    bytes: Vec<u8>,
    recycler: Option<Recycler>,
}

impl HostBuffer {
    pub(crate) fn new(bytes: Vec<u8>, recycler: Recycler) -> HostBuffer {
        HostBuffer {
            bytes,
            recycler: Some(recycler),
        }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if let Some(recycler) = self.recycler.take() {
            recycler.give(std::mem::take(&mut self.bytes));
        }
    }
}

/// A batch's frames: `shape` in the loader's layout, elements of `dtype`.
#[pyclass(module = "framecull._framecull", frozen)]
pub struct Frames {
    buffer: Arc<HostBuffer>,
    shape: [usize; 5],
    dtype: DType,
}

impl Frames {
    pub(crate) fn new(buffer: HostBuffer, shape: [usize; 5], dtype: DType) -> Frames {
        Frames {
            buffer: Arc::new(buffer),
            shape,
            dtype,
        }
    }

    fn data(&self) -> *mut c_void {
        // Consumers may write into their view (a training loop normalising in place); the
        // buffer is this batch's alone.
        self.buffer.bytes.as_ptr().cast_mut().cast()
    }
}

fn typestr(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::U8 => "|u1",
    }
}

#[pymethods]
impl Frames {
    /// The shape, in the loader's layout (`[B, T, C, H, W]` or `[B, T, H, W, C]`).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.shape)
    }

    /// The NumPy name of the element type: `float32`, `float16` or `uint8`.
    #[getter]
    fn dtype(&self) -> &'static str {
        match self.dtype {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::U8 => "uint8",
        }
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.buffer.bytes.len()
    }

    /// Address of the first byte: a view made without a copy starts here.
    #[getter]
    fn data_ptr(&self) -> usize {
        self.data() as usize
    }

    /// The NumPy array interface (version 3): `numpy.asarray(frames)` is a view.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, self.shape)?)?;
        d.set_item("typestr", typestr(self.dtype))?;
        d.set_item("data", (self.data_ptr(), false))?;
        d.set_item("strides", py.None())?;
        d.set_item("version", 3)?;
        Ok(d)
    }

    /// `(device type, device id)`: host memory (`kDLCPU`).
    fn __dlpack_device__(&self) -> (i32, i32) {
        (KDL_CPU, 0)
    }

    /// A DLPack capsule viewing the frames (unversioned, which every consumer accepts).
    /// Host memory needs no stream; a copy is never made.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<Bound<'py, PyAny>>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = (stream, max_version);
        let py = slf.py();
        if dl_device.is_some_and(|d| d != (KDL_CPU, 0)) {
            return Err(pyo3::exceptions::PyBufferError::new_err(
                "the frames are in host memory; move them to a device after importing",
            ));
        }
        if copy == Some(true) {
            return Err(pyo3::exceptions::PyBufferError::new_err(
                "framecull hands its frames over without a copy; copy the imported array",
            ));
        }
        let this = slf.get();
        managed_tensor(py, this)
    }
}

const KDL_CPU: i32 = 1;
const DLTENSOR: &CStr = c"dltensor";

#[repr(C)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// What a DLPack view owns: the shape it points to and a share of the buffer.
struct Context {
    shape: [i64; 5],
    _buffer: Arc<HostBuffer>,
}

/// Frees a view: called by the consumer when its tensor is gone (from any thread, with or
/// without the GIL: nothing here touches Python).
unsafe extern "C" fn delete_managed(managed: *mut DLManagedTensor) {
    if managed.is_null() {
        return;
    }
    // SAFETY: `managed` and its context were made by `managed_tensor` with `Box::into_raw`,
    // and DLPack calls the deleter once.
    unsafe {
        let managed = Box::from_raw(managed);
        drop(Box::from_raw(managed.manager_ctx.cast::<Context>()));
    }
}

/// The capsule's destructor: frees the view only when no consumer took it (a consumer renames
/// the capsule to `used_dltensor` and calls the deleter itself).
unsafe extern "C" fn delete_capsule(capsule: *mut ffi::PyObject) {
    // SAFETY: `capsule` is the capsule being destroyed; `PyCapsule_IsValid` sets no error.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr());
            delete_managed(managed.cast());
        }
    }
}

fn managed_tensor<'py>(py: Python<'py>, frames: &Frames) -> PyResult<Bound<'py, PyCapsule>> {
    let (code, bits) = match frames.dtype {
        DType::F32 => (2, 32),
        DType::F16 => (2, 16),
        DType::U8 => (1, 8),
    };
    let mut context = Box::new(Context {
        shape: frames.shape.map(|d| d as i64),
        _buffer: Arc::clone(&frames.buffer),
    });
    let shape = context.shape.as_mut_ptr();
    let managed = Box::new(DLManagedTensor {
        dl_tensor: DLTensor {
            data: frames.data(),
            device: DLDevice {
                device_type: KDL_CPU,
                device_id: 0,
            },
            ndim: 5,
            dtype: DLDataType {
                code,
                bits,
                lanes: 1,
            },
            shape,
            // Null: compact row-major.
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        },
        manager_ctx: Box::into_raw(context).cast(),
        deleter: Some(delete_managed),
    });
    let pointer = NonNull::from(Box::leak(managed)).cast::<c_void>();
    // SAFETY: `pointer` is a valid `DLManagedTensor` until its deleter runs, which happens
    // once: by the consumer, or by `delete_capsule` when nobody consumed it.
    let capsule = unsafe {
        PyCapsule::new_with_pointer_and_destructor(py, pointer, DLTENSOR, Some(delete_capsule))
    };
    if capsule.is_err() {
        // SAFETY: the capsule was not made, so nothing else owns the view.
        unsafe { delete_managed(pointer.as_ptr().cast()) };
    }
    capsule
}
