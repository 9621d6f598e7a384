//! Preprocessing of decoded frames on the GPU (wgpu compute): the same formulas as the CPU
//! reference in [`super::preprocess`], run by `preprocess.wgsl`, for a whole batch at once.
//!
//! A batch is a sequence of frames (`None` = padding, written as zero bytes). Its output is
//! one buffer holding every frame's elements in order, in the output layout and dtype, exactly
//! as [`write_frame`](super::preprocess::write_frame) writes them one frame after another:
//! frame `k` starts at byte `k * frame_elements * dtype_size`.
//!
//! # Words and elements
//!
//! Storage buffers are arrays of `u32`, so the shader works in words: one invocation writes
//! one output word, which holds 1 f32, 2 f16 or 4 u8 elements (little-endian: element `e` is
//! at byte `e * dtype_size`). Each element of a word is mapped to (frame, channel, y, x) on its
//! own, so a word may straddle two frames. The output buffer is rounded up to whole words; the
//! bytes past the batch's last element are zero and [`GpuBatch::len_bytes`] leaves them out.
//!
//! # Chunks
//!
//! Bindings are limited (`max_storage_buffer_binding_size`), so a batch is dispatched in
//! chunks of whole frames, each with its own upload of frame bytes and frame table. A chunk
//! may only start at a frame whose output starts on a word boundary
//! (`k * frame_elements * dtype_size % 4 == 0`), so no word is written by two chunks; frames
//! therefore come in indivisible groups of 1, 2 or 4. Each chunk binds the window of the
//! output buffer it writes, from its first word rounded down to the storage offset alignment,
//! and tells the shader where its first word sits in that window.

mod words;

use std::sync::mpsc;
use std::time::Instant;

use super::preprocess::{FrameJob, OutputSpec};
use words::{
    FRAME_INFO_BYTES, GLOBALS_BYTES, check_frame, check_output, expected_len, frame_info,
    globals_words, padded_len, u32_bytes,
};

/// Invocations per workgroup; must match `@workgroup_size` in the shader.
const WORKGROUP_SIZE: u32 = 64;
/// Cap on any one binding, whatever the device allows: keeps every byte, word and element
/// index of a chunk within the shader's `u32` arithmetic.
const MAX_BINDING_BYTES: u64 = 1 << 31;

/// Errors of the GPU path.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU adapter found (not even a software one)")]
    NoAdapter,
    #[error("could not open the GPU device: {0}")]
    Device(String),
    /// A wgpu validation, out-of-memory or internal error.
    #[error("GPU error: {0}")]
    Wgpu(String),
    /// Waiting for the device failed (device lost, timeout).
    #[error("waiting for the GPU failed: {0}")]
    Poll(String),
    #[error("reading the output back failed: {0}")]
    Map(String),
    #[error("invalid output spec: {0}")]
    BadOutput(String),
    #[error("frame {index}: {reason}")]
    BadFrame { index: usize, reason: String },
    /// A group of frames that cannot be split (see the module docs) needs more than one
    /// binding may hold.
    #[error("frames {first}..{end} need {bytes} bytes in one binding; the limit is {limit}")]
    FramesTooLarge {
        first: usize,
        end: usize,
        bytes: u64,
        limit: u64,
    },
    #[error("the batch output needs {bytes} bytes; the device's buffer limit is {limit}")]
    BatchTooLarge { bytes: u64, limit: u64 },
}

/// Host-measured seconds of the GPU stages. The calls add to these fields, so one value can
/// total many batches; start from `GpuTimes::default()` for a single one.
#[derive(Debug, Default, Clone, Copy)]
pub struct GpuTimes {
    /// Copying frame bytes and tables to the device, until the device has them.
    pub upload_secs: f64,
    /// The compute dispatches, until they complete.
    pub compute_secs: f64,
    /// Copying the output to a mappable buffer and reading it on the host.
    pub readback_secs: f64,
}

/// A preprocessed batch, on the device.
#[derive(Debug)]
pub struct GpuBatch {
    /// The output, usage `STORAGE | COPY_SRC`; its size is `len_bytes` rounded up to 4.
    pub buffer: wgpu::Buffer,
    /// Exact output bytes (`frames * frame_elements * dtype_size`).
    pub len_bytes: u64,
}

/// A wgpu device with the preprocessing pipeline and buffers reused across batches.
pub struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    pipeline: wgpu::ComputePipeline,
    bind_group_layout: wgpu::BindGroupLayout,
    /// `Globals`, rewritten per chunk.
    globals: wgpu::Buffer,
    /// The chunk's `FrameInfo` table; grown on demand.
    frame_table: Option<wgpu::Buffer>,
    /// The chunk's frame bytes; grown on demand.
    input: Option<wgpu::Buffer>,
    /// Largest binding (and so chunk input, table, or output window) in bytes.
    max_chunk_bytes: u64,
    /// What the device allows for `max_chunk_bytes`.
    device_chunk_bytes: u64,
    max_buffer_size: u64,
    storage_offset_alignment: u64,
    max_workgroups_per_dimension: u32,
}

impl Gpu {
    /// Any adapter wgpu finds (hardware preferred, software such as lavapipe accepted);
    /// `Err(NoAdapter)` when none. Honours wgpu's environment variables (`WGPU_BACKEND`,
    /// `WGPU_ADAPTER_NAME`, ...). The device is opened with the adapter's own limits.
    /// Whether this machine shows a GPU device node (Linux: a DRM render node or an NVIDIA
    /// device); elsewhere assumed. `DeviceChoice::Auto` probes the adapters only then, so a
    /// machine without a GPU prints no driver complaints.
    pub fn device_present() -> bool {
        if !cfg!(target_os = "linux") {
            return true;
        }
        let any = |dir: &str, prefix: &str| {
            std::fs::read_dir(dir).is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
            })
        };
        any("/dev/dri", "renderD") || any("/dev", "nvidia")
    }

    pub fn new() -> Result<Gpu, GpuError> {
        // `Instance::new` panics when this build has no backend for the platform (e.g. only
        // the `vulkan` feature, on macOS).
        if wgpu::Instance::enabled_backend_features().is_empty() {
            return Err(GpuError::NoAdapter);
        }
        // Compute needs no window system: the primary backends only (GL through EGL adds
        // nothing here, and complains on machines without a display).
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        descriptor.backends &= wgpu::Backends::PRIMARY;
        let instance = wgpu::Instance::new(descriptor);
        let options = wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
            apply_limit_buckets: false,
        };
        let adapter = pollster::block_on(instance.request_adapter(&options))
            .map_err(|_| GpuError::NoAdapter)?;
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("framecull preprocess"),
            required_features: wgpu::Features::empty(),
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| GpuError::Device(e.to_string()))?;

        let scope = ErrorScopes::push(&device);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("preprocess.wgsl"),
            source: wgpu::ShaderSource::Wgsl(include_str!("preprocess.wgsl").into()),
        });
        let buffer_entry = |binding, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let storage = |read_only| wgpu::BufferBindingType::Storage { read_only };
        let bind_group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("preprocess"),
            entries: &[
                buffer_entry(0, wgpu::BufferBindingType::Uniform),
                buffer_entry(1, storage(true)),
                buffer_entry(2, storage(true)),
                buffer_entry(3, storage(false)),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("preprocess"),
            bind_group_layouts: &[Some(&bind_group_layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("preprocess"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let globals = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("preprocess globals"),
            size: GLOBALS_BYTES,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        scope.pop()?;

        let device_chunk_bytes = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size)
            .min(MAX_BINDING_BYTES)
            / 4
            * 4;
        Ok(Gpu {
            device,
            queue,
            info: adapter.get_info(),
            pipeline,
            bind_group_layout,
            globals,
            frame_table: None,
            input: None,
            max_chunk_bytes: device_chunk_bytes,
            device_chunk_bytes,
            max_buffer_size: limits.max_buffer_size,
            storage_offset_alignment: u64::from(limits.min_storage_buffer_offset_alignment.max(4)),
            max_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension.max(1),
        })
    }

    /// e.g. `"llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, Cpu)"`: name, backend, device type.
    pub fn adapter_description(&self) -> String {
        format!(
            "{} ({:?}, {:?})",
            self.info.name, self.info.backend, self.info.device_type
        )
    }

    /// A CPU implementation (lavapipe, WARP, SwiftShader...), not a GPU.
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// Lower the largest binding (and so the largest chunk) below what the device allows:
    /// to leave memory headroom, or to exercise chunking in tests. Clamped to the device's
    /// limit; rounded down to whole words.
    pub fn set_max_chunk_bytes(&mut self, bytes: u64) {
        self.max_chunk_bytes = bytes.min(self.device_chunk_bytes) / 4 * 4;
    }

    /// Preprocess a batch of frames into one GPU buffer in the output layout and dtype, the
    /// same bytes as [`write_frame`](super::preprocess::write_frame) for each frame in turn.
    /// Adds the host-measured upload and compute seconds (each stage waited for) to `times`.
    pub fn run(
        &mut self,
        frames: &[Option<FrameJob<'_>>],
        out: &OutputSpec,
        times: &mut GpuTimes,
    ) -> Result<GpuBatch, GpuError> {
        let frame_elements = check_output(out)?;
        for (index, job) in frames.iter().enumerate() {
            if let Some(job) = job {
                check_frame(index, job)?;
            }
        }
        let dtype_size = out.dtype.size_bytes() as u64;
        let frame_bytes = u64::from(frame_elements) * dtype_size;
        let len_bytes = frames.len() as u64 * frame_bytes;
        let buffer_bytes = len_bytes.div_ceil(4).max(1) * 4;
        if buffer_bytes > self.max_buffer_size {
            return Err(GpuError::BatchTooLarge {
                bytes: buffer_bytes,
                limit: self.max_buffer_size,
            });
        }
        let shape = BatchShape {
            frame_elements,
            frame_bytes,
            len_bytes,
        };
        let chunks = self.plan_chunks(frames, frame_bytes)?;

        let scope = ErrorScopes::push(&self.device);
        let output = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("preprocess output"),
            size: buffer_bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        scope.pop()?;

        for chunk in &chunks {
            self.run_chunk(
                &frames[chunk.first..chunk.end],
                out,
                &shape,
                chunk,
                &output,
                times,
            )?;
        }
        Ok(GpuBatch {
            buffer: output,
            len_bytes,
        })
    }

    /// Split the batch into chunks (see the module docs): greedily, in groups of frames that
    /// start on a word boundary, while the chunk's input, frame table and output window each
    /// fit one binding.
    fn plan_chunks(
        &self,
        frames: &[Option<FrameJob<'_>>],
        frame_bytes: u64,
    ) -> Result<Vec<Chunk>, GpuError> {
        let limit = self.max_chunk_bytes;
        // Frames per group: the period of `k * frame_bytes % 4`.
        let group = match frame_bytes % 4 {
            0 => 1,
            2 => 2,
            _ => 4,
        };
        let input_bytes = |k: usize| frames[k].as_ref().map_or(0, |job| padded_len(job));
        let mut chunks = Vec::new();
        let mut chunk = Chunk {
            first: 0,
            end: 0,
            input_bytes: 0,
        };
        let mut first = 0;
        while first < frames.len() {
            let end = (first + group).min(frames.len());
            let group_input: u64 = (first..end).map(input_bytes).sum();
            let grown = Chunk {
                first: chunk.first,
                end,
                input_bytes: chunk.input_bytes + group_input,
            };
            if self.chunk_bytes(&grown, frame_bytes) > limit {
                if chunk.end == chunk.first {
                    return Err(GpuError::FramesTooLarge {
                        first,
                        end,
                        bytes: self.chunk_bytes(&grown, frame_bytes),
                        limit,
                    });
                }
                chunks.push(chunk);
                chunk = Chunk {
                    first,
                    end: first,
                    input_bytes: 0,
                };
                // Retry the group in the fresh chunk.
                continue;
            }
            chunk = grown;
            first = end;
        }
        if chunk.end > chunk.first {
            chunks.push(chunk);
        }
        Ok(chunks)
    }

    /// The largest of a chunk's three bindings, in bytes.
    fn chunk_bytes(&self, chunk: &Chunk, frame_bytes: u64) -> u64 {
        let (window_start, _) = self.output_window(chunk, frame_bytes);
        let output_end = (chunk.end as u64 * frame_bytes).div_ceil(4) * 4;
        let table = (chunk.end - chunk.first) as u64 * FRAME_INFO_BYTES;
        chunk.input_bytes.max(table).max(output_end - window_start)
    }

    /// The start of a chunk's output binding (its first byte, rounded down to the storage
    /// offset alignment) and the index of the chunk's first word within that binding.
    fn output_window(&self, chunk: &Chunk, frame_bytes: u64) -> (u64, u64) {
        let start = chunk.first as u64 * frame_bytes;
        let window_start = start / self.storage_offset_alignment * self.storage_offset_alignment;
        (window_start, (start - window_start) / 4)
    }

    /// Upload one chunk's frames (`jobs`) and table, then dispatch it; each stage is waited
    /// for and timed.
    ///
    /// One function: it runs for every chunk, and its two stages share the buffers it grows
    /// (`input`, `table`), their sizes and the output window worked out for the upload, which
    /// the dispatch binds.
    fn run_chunk(
        &mut self,
        jobs: &[Option<FrameJob<'_>>],
        out: &OutputSpec,
        shape: &BatchShape,
        chunk: &Chunk,
        output: &wgpu::Buffer,
        times: &mut GpuTimes,
    ) -> Result<(), GpuError> {
        let BatchShape {
            frame_elements,
            frame_bytes,
            len_bytes,
        } = *shape;
        let start = Instant::now();
        let scope = ErrorScopes::push(&self.device);

        // Frame bytes, each frame at a word boundary, and the table that finds them.
        let input_size = chunk.input_bytes.max(4);
        let input = grow(
            &self.device,
            &mut self.input,
            input_size,
            self.max_chunk_bytes,
            "preprocess input",
        );
        let table_size = jobs.len() as u64 * FRAME_INFO_BYTES;
        let table = grow(
            &self.device,
            &mut self.frame_table,
            table_size,
            self.max_chunk_bytes,
            "preprocess frames",
        );
        let mut words: Vec<u32> = Vec::with_capacity(jobs.len() * (FRAME_INFO_BYTES / 4) as usize);
        let mut offset = 0u64;
        for job in jobs {
            frame_info(job.as_ref(), offset as u32, &mut words);
            offset += job.as_ref().map_or(0, |job| padded_len(job));
        }
        self.queue.write_buffer(&table, 0, &u32_bytes(&words));
        if let Some(size) = wgpu::BufferSize::new(chunk.input_bytes) {
            let mut view = self
                .queue
                .write_buffer_with(&input, 0, size)
                .ok_or_else(|| GpuError::Wgpu("could not stage the frame upload".into()))?;
            let mut offset = 0usize;
            let mut packed = Vec::new();
            for job in jobs.iter().flatten() {
                let len = expected_len(job);
                let bytes = if job.frame.decoded.is_some() {
                    // Still in the decoder's buffers: packed here (the upload copies anyway).
                    packed.resize(len, 0);
                    job.frame.write_packed(&mut packed);
                    &packed[..]
                } else {
                    &job.frame.data[..len]
                };
                view.slice(offset..offset + len).copy_from_slice(bytes);
                offset += padded_len(job) as usize;
            }
        }

        // Globals: the output shape and this chunk's place in the output.
        let (window_start, word_base) = self.output_window(chunk, frame_bytes);
        let chunk_start = chunk.first as u64 * frame_bytes;
        let chunk_end = (chunk.end as u64 * frame_bytes).min(len_bytes);
        let word_count = (chunk_end.div_ceil(4) * 4 - chunk_start) / 4;
        let window_size = chunk_end.div_ceil(4) * 4 - window_start;
        let element_count = (chunk.end - chunk.first) as u64 * u64::from(frame_elements);
        let globals = globals_words(
            out,
            frame_elements,
            word_base as u32,
            word_count as u32,
            element_count as u32,
        );
        self.queue
            .write_buffer(&self.globals, 0, &u32_bytes(&globals));
        let index = self.queue.submit([]);
        self.wait(index)?;
        scope.pop()?;
        times.upload_secs += start.elapsed().as_secs_f64();

        // The dispatch: one invocation per output word.
        let start = Instant::now();
        let scope = ErrorScopes::push(&self.device);
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("preprocess"),
            layout: &self.bind_group_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: self.globals.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: buffer_range(&table, 0, table_size),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: buffer_range(&input, 0, input_size),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: buffer_range(output, window_start, window_size),
                },
            ],
        });
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("preprocess"),
            });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("preprocess"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            let (x, y) = self.workgroups(word_count);
            pass.dispatch_workgroups(x, y, 1);
        }
        let index = self.queue.submit([encoder.finish()]);
        self.wait(index)?;
        scope.pop()?;
        times.compute_secs += start.elapsed().as_secs_f64();
        Ok(())
    }

    /// Workgroups for `words` invocations: 1-D, or rows of the per-dimension maximum when
    /// there are more (the shader linearises with `num_workgroups`).
    fn workgroups(&self, words: u64) -> (u32, u32) {
        let groups = words.div_ceil(u64::from(WORKGROUP_SIZE)).max(1);
        let max = u64::from(self.max_workgroups_per_dimension);
        if groups <= max {
            (groups as u32, 1)
        } else {
            (max as u32, groups.div_ceil(max) as u32)
        }
    }

    /// Block until submission `index` has completed.
    fn wait(&self, index: wgpu::SubmissionIndex) -> Result<(), GpuError> {
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: None,
            })
            .map(|_| ())
            .map_err(|e| GpuError::Poll(e.to_string()))
    }
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("adapter", &self.adapter_description())
            .field("max_chunk_bytes", &self.max_chunk_bytes)
            .finish_non_exhaustive()
    }
}

impl GpuBatch {
    /// Copy the output to the host: exactly `len_bytes` bytes. Adds the seconds taken to
    /// `times.readback_secs`.
    pub fn read_back(&self, gpu: &Gpu, times: &mut GpuTimes) -> Result<Vec<u8>, GpuError> {
        let start = Instant::now();
        let size = self.buffer.size();
        let scope = ErrorScopes::push(&gpu.device);
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("preprocess readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("preprocess readback"),
            });
        encoder.copy_buffer_to_buffer(&self.buffer, 0, &staging, 0, size);
        gpu.queue.submit([encoder.finish()]);
        let (sender, receiver) = mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |result| {
            // The receiver is waiting below; a send can only fail if it is gone.
            let _ = sender.send(result);
        });
        gpu.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Poll(e.to_string()))?;
        receiver
            .recv()
            .map_err(|e| GpuError::Map(e.to_string()))?
            .map_err(|e| GpuError::Map(e.to_string()))?;
        let bytes = {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| GpuError::Map(e.to_string()))?;
            view[..self.len_bytes as usize].to_vec()
        };
        staging.unmap();
        scope.pop()?;
        times.readback_secs += start.elapsed().as_secs_f64();
        Ok(bytes)
    }
}

/// Sizes shared by a batch's chunks.
#[derive(Debug, Clone, Copy)]
struct BatchShape {
    frame_elements: u32,
    /// Output bytes of one frame.
    frame_bytes: u64,
    /// Output bytes of the batch.
    len_bytes: u64,
}

/// Frames `first..end` of a batch, whose frame bytes take `input_bytes` (word-padded).
#[derive(Debug, Clone, Copy)]
struct Chunk {
    first: usize,
    end: usize,
    input_bytes: u64,
}

/// Error scopes for out-of-memory, validation and internal errors, popped together.
struct ErrorScopes([wgpu::ErrorScopeGuard; 3]);

impl ErrorScopes {
    fn push(device: &wgpu::Device) -> Self {
        ErrorScopes([
            device.push_error_scope(wgpu::ErrorFilter::OutOfMemory),
            device.push_error_scope(wgpu::ErrorFilter::Validation),
            device.push_error_scope(wgpu::ErrorFilter::Internal),
        ])
    }

    /// The first error caught, if any. Scopes are popped innermost first.
    fn pop(self) -> Result<(), GpuError> {
        let mut first = None;
        for guard in self.0.into_iter().rev() {
            if let Some(error) = pollster::block_on(guard.pop()) {
                first.get_or_insert(error);
            }
        }
        match first {
            Some(error) => Err(GpuError::Wgpu(error.to_string())),
            None => Ok(()),
        }
    }
}

/// `slot`'s buffer if it holds `size` bytes, else a new one (storage, copy destination) of
/// twice that, within `limit`, replacing it.
fn grow(
    device: &wgpu::Device,
    slot: &mut Option<wgpu::Buffer>,
    size: u64,
    limit: u64,
    label: &str,
) -> wgpu::Buffer {
    if let Some(buffer) = slot.as_ref().filter(|b| b.size() >= size) {
        return buffer.clone();
    }
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (size.saturating_mul(2)).min(limit).max(size).div_ceil(4) * 4,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    *slot = Some(buffer.clone());
    buffer
}

/// `size` bytes of `buffer` from `offset`, as a binding (`size` is never 0 here).
fn buffer_range(buffer: &wgpu::Buffer, offset: u64, size: u64) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset,
        size: wgpu::BufferSize::new(size),
    })
}
