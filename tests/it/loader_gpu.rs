//! The GPU preprocessing path against the CPU reference (`preprocess::write_frame`).
//!
//! Needs a wgpu adapter; a software one (lavapipe) will do. Without one the tests print a
//! note and pass, unless `FRAMECULL_REQUIRE_GPU` is set.

#![allow(clippy::unwrap_used)]

use framecull::loader::gpu::{Gpu, GpuError, GpuTimes};
use framecull::loader::preprocess::{
    DType, Filter, Frame, FrameFormat, FrameJob, FrameParams, Layout, Matrix, OutputSpec, Range,
    Scratch, decode_elements, write_frame,
};

fn gpu() -> Option<Gpu> {
    match Gpu::new() {
        Ok(gpu) => {
            eprintln!("adapter: {}", gpu.adapter_description());
            Some(gpu)
        }
        Err(GpuError::NoAdapter) if std::env::var_os("FRAMECULL_REQUIRE_GPU").is_none() => {
            eprintln!("no wgpu adapter: skipped");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// xorshift64*: deterministic test data without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }
}

fn random_frame(rng: &mut Rng, width: u32, height: u32, format: FrameFormat) -> Frame {
    let len = Frame::expected_len(width, height, format);
    // Smooth-ish content plus noise, so both filters see gradients and edges.
    let mut data = Vec::with_capacity(len);
    for i in 0..len {
        let v = if rng.below(4) == 0 {
            rng.below(256)
        } else {
            (i as u64 * 7 / 3) % 256
        };
        data.push(v as u8);
    }
    let matrix = [Matrix::Bt601, Matrix::Bt709, Matrix::Bt2020][rng.below(3) as usize];
    let range = if rng.below(2) == 0 {
        Range::Limited
    } else {
        Range::Full
    };
    Frame {
        width,
        height,
        format,
        matrix,
        range,
        data,
        decoded: None,
        pts: 0,
        index: 0,
    }
}

/// A crop of the display image: random, often partly outside it.
fn random_params(rng: &mut Rng, frame: &Frame) -> FrameParams {
    let quarter_turns = rng.below(4) as u8;
    let (w, h) = frame.display_size(quarter_turns);
    let (w, h) = (w as f32, h as f32);
    let crop = match rng.below(6) {
        // The whole image.
        0 => [0.0, 0.0, w, h],
        // Partly outside on every side.
        1 => [-0.2 * w, -0.1 * h, 1.4 * w, 1.3 * h],
        // Entirely outside (both rules fall back to clamped bilinear).
        2 => [w + 3.0, -2.0 * h, 0.5 * w, 0.5 * h],
        _ => {
            let cw = rng.range(0.1, 1.1) * w;
            let ch = rng.range(0.1, 1.1) * h;
            [
                rng.range(-0.1 * w, w - 0.5 * cw),
                rng.range(-0.1 * h, h - 0.5 * ch),
                cw,
                ch,
            ]
        }
    };
    FrameParams {
        quarter_turns,
        crop,
        flip: rng.below(2) == 1,
    }
}

fn spec(width: u32, height: u32, layout: Layout, dtype: DType, filter: Filter) -> OutputSpec {
    OutputSpec {
        width,
        height,
        layout,
        dtype,
        filter,
        mean: [0.485, 0.456, 0.406],
        std: [0.229, 0.224, 0.225],
    }
}

/// The CPU reference for a batch: each frame's bytes in turn.
fn cpu_batch(jobs: &[Option<FrameJob<'_>>], out: &OutputSpec) -> Vec<u8> {
    let frame_bytes = out.frame_elements() * out.dtype.size_bytes();
    let mut bytes = vec![0xAAu8; jobs.len() * frame_bytes];
    let mut scratch = Scratch::default();
    for (job, dst) in jobs.iter().zip(bytes.chunks_exact_mut(frame_bytes)) {
        write_frame(job.as_ref(), out, &mut scratch, dst);
    }
    bytes
}

fn gpu_batch(gpu: &mut Gpu, jobs: &[Option<FrameJob<'_>>], out: &OutputSpec) -> Vec<u8> {
    let mut times = GpuTimes::default();
    let batch = gpu.run(jobs, out, &mut times).expect("run");
    assert_eq!(
        batch.len_bytes as usize,
        jobs.len() * out.frame_elements() * out.dtype.size_bytes()
    );
    assert_eq!(batch.buffer.size() % 4, 0);
    assert!(
        batch
            .buffer
            .usage()
            .contains(wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC)
    );
    batch.read_back(gpu, &mut times).expect("read back")
}

/// The largest difference in [0, 1] RGB units (u8: in steps of 1/255), with the tolerance
/// checked per element. Padding frames must match byte for byte.
fn compare(
    jobs: &[Option<FrameJob<'_>>],
    out: &OutputSpec,
    cpu: &[u8],
    gpu: &[u8],
    what: &str,
) -> f32 {
    assert_eq!(cpu.len(), gpu.len(), "{what}: lengths");
    let size = out.dtype.size_bytes();
    let frame_bytes = out.frame_elements() * size;
    let mut worst = 0.0f32;
    for (k, job) in jobs.iter().enumerate() {
        let range = k * frame_bytes..(k + 1) * frame_bytes;
        if job.is_none() {
            assert!(
                gpu[range].iter().all(|&b| b == 0),
                "{what}: padding frame {k} is not zeros"
            );
            continue;
        }
        let a = decode_elements(&cpu[range.clone()], out.dtype);
        let b = decode_elements(&gpu[range], out.dtype);
        for (e, (&a, &b)) in a.iter().zip(&b).enumerate() {
            let channel = match out.layout {
                Layout::Bcthw => e / (out.frame_elements() / 3),
                Layout::Bthwc => e % 3,
            };
            let (diff, limit) = match out.dtype {
                DType::U8 => ((a - b).abs() / 255.0, 1.0 / 255.0),
                DType::F32 => ((a - b).abs() * out.std[channel], 1.0 / 255.0),
                // f16: plus one rounding step of the larger value.
                DType::F16 => {
                    let ulp = half::f16::from_f32(a.abs().max(b.abs())).to_f32() * 2f32.powi(-10);
                    (
                        (a - b).abs() * out.std[channel],
                        1.0 / 255.0 + ulp * out.std[channel],
                    )
                }
            };
            assert!(
                diff <= limit,
                "{what}: frame {k} element {e}: cpu {a} gpu {b}"
            );
            worst = worst.max(diff);
        }
    }
    worst
}

/// A batch of assorted frames: YUV with odd and even sizes, RGB, padding.
fn assorted_frames(rng: &mut Rng) -> Vec<Frame> {
    vec![
        random_frame(rng, 37, 23, FrameFormat::Yuv420),
        random_frame(rng, 64, 48, FrameFormat::Yuv420),
        random_frame(rng, 29, 31, FrameFormat::Rgb),
        random_frame(rng, 97, 61, FrameFormat::Yuv420),
        random_frame(rng, 5, 3, FrameFormat::Yuv420),
        random_frame(rng, 40, 17, FrameFormat::Rgb),
    ]
}

#[test]
fn matches_the_cpu_reference_for_every_option() {
    let Some(mut gpu) = gpu() else { return };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let frames = assorted_frames(&mut rng);
    let mut report = Vec::new();
    for dtype in [DType::F32, DType::F16, DType::U8] {
        let mut worst = 0.0f32;
        for layout in [Layout::Bcthw, Layout::Bthwc] {
            for filter in [Filter::Bilinear, Filter::Area] {
                // Odd sizes (words straddle frames), downscales and upscales.
                for (ow, oh) in [(13, 7), (11, 9), (48, 40), (1, 1)] {
                    let out = spec(ow, oh, layout, dtype, filter);
                    // Every frame with every rotation, flipped or not, plus random crops.
                    let mut jobs = Vec::new();
                    for frame in &frames {
                        for q in 0..4u8 {
                            for flip in [false, true] {
                                let mut params = FrameParams::full(frame, q);
                                params.flip = flip;
                                jobs.push(Some(FrameJob { frame, params }));
                            }
                            jobs.push(Some(FrameJob {
                                frame,
                                params: random_params(&mut rng, frame),
                            }));
                        }
                        if rng.below(3) == 0 {
                            jobs.push(None);
                        }
                    }
                    jobs.push(None);
                    let what = format!("{dtype:?} {layout:?} {filter:?} {ow}x{oh}");
                    let cpu = cpu_batch(&jobs, &out);
                    let gpu_bytes = gpu_batch(&mut gpu, &jobs, &out);
                    worst = worst.max(compare(&jobs, &out, &cpu, &gpu_bytes, &what));
                }
            }
        }
        report.push(format!(
            "{dtype:?}: max |gpu - cpu| = {worst:e} (RGB units)"
        ));
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn chunked_batches_match_unchunked_ones() {
    let Some(mut gpu) = gpu() else { return };
    let mut rng = Rng(42);
    let frames = assorted_frames(&mut rng);
    for dtype in [DType::U8, DType::F16, DType::F32] {
        // 5x3 output: 45 elements a frame, so u8 frames group by 4 and f16 by 2.
        for (ow, oh) in [(5, 3), (8, 8)] {
            let out = spec(ow, oh, Layout::Bthwc, dtype, Filter::Area);
            let jobs: Vec<_> = (0..41)
                .map(|k| {
                    if k % 7 == 3 {
                        return None;
                    }
                    let frame = &frames[k % frames.len()];
                    Some(FrameJob {
                        frame,
                        params: random_params(&mut rng, frame),
                    })
                })
                .collect();
            let cpu = cpu_batch(&jobs, &out);
            gpu.set_max_chunk_bytes(u64::MAX);
            let whole = gpu_batch(&mut gpu, &jobs, &out);
            // Small enough to force many chunks (the largest frame holds ~9 KB) and output
            // windows that start off the storage offset alignment.
            for limit in [40_000, 20_000] {
                gpu.set_max_chunk_bytes(limit);
                let chunked = gpu_batch(&mut gpu, &jobs, &out);
                assert!(
                    chunked == whole,
                    "{dtype:?} {ow}x{oh}, limit {limit}: chunked output differs"
                );
            }
            compare(&jobs, &out, &cpu, &whole, &format!("{dtype:?} {ow}x{oh}"));
        }
    }
    // A limit no group of frames fits is an error, not a panic.
    gpu.set_max_chunk_bytes(64);
    let frame = &frames[1];
    let jobs = [Some(FrameJob {
        frame,
        params: FrameParams::full(frame, 0),
    })];
    let out = spec(4, 4, Layout::Bcthw, DType::F32, Filter::Bilinear);
    let err = gpu.run(&jobs, &out, &mut GpuTimes::default()).err();
    assert!(
        matches!(err, Some(GpuError::FramesTooLarge { .. })),
        "{err:?}"
    );
}

#[test]
fn padding_only_and_empty_batches() {
    let Some(mut gpu) = gpu() else { return };
    for dtype in [DType::U8, DType::F16, DType::F32] {
        let out = spec(3, 3, Layout::Bcthw, dtype, Filter::Bilinear);
        let bytes = gpu_batch(&mut gpu, &[None, None, None], &out);
        assert_eq!(bytes.len(), 3 * 27 * dtype.size_bytes());
        assert!(bytes.iter().all(|&b| b == 0));
        assert!(gpu_batch(&mut gpu, &[], &out).is_empty());
    }
}

#[test]
fn bad_input_is_an_error() {
    let Some(mut gpu) = gpu() else { return };
    let mut rng = Rng(7);
    let mut frame = random_frame(&mut rng, 16, 16, FrameFormat::Yuv420);
    frame.data.truncate(100);
    let jobs = [Some(FrameJob {
        frame: &frame,
        params: FrameParams::full(&frame, 0),
    })];
    let out = spec(4, 4, Layout::Bcthw, DType::F32, Filter::Bilinear);
    let err = gpu.run(&jobs, &out, &mut GpuTimes::default()).err();
    assert!(
        matches!(err, Some(GpuError::BadFrame { index: 0, .. })),
        "{err:?}"
    );
    let frame = random_frame(&mut rng, 16, 16, FrameFormat::Rgb);
    let params = FrameParams {
        quarter_turns: 0,
        crop: [0.0, f32::NAN, 4.0, 4.0],
        flip: false,
    };
    let err = gpu
        .run(
            &[
                None,
                Some(FrameJob {
                    frame: &frame,
                    params,
                }),
            ],
            &out,
            &mut GpuTimes::default(),
        )
        .err();
    assert!(
        matches!(err, Some(GpuError::BadFrame { index: 1, .. })),
        "{err:?}"
    );
    let out = spec(0, 4, Layout::Bcthw, DType::F32, Filter::Bilinear);
    let err = gpu.run(&[None], &out, &mut GpuTimes::default()).err();
    assert!(matches!(err, Some(GpuError::BadOutput(_))), "{err:?}");
}

/// Over 65535 workgroups of 64 words: the dispatch goes 2-D.
#[test]
fn large_outputs_dispatch_in_two_dimensions() {
    let Some(mut gpu) = gpu() else { return };
    let mut rng = Rng(3);
    let frame = random_frame(&mut rng, 24, 20, FrameFormat::Rgb);
    let out = spec(1200, 1200, Layout::Bcthw, DType::F32, Filter::Bilinear);
    assert!(out.frame_elements() > 65535 * 64);
    let jobs = [Some(FrameJob {
        frame: &frame,
        params: FrameParams::full(&frame, 1),
    })];
    let cpu = cpu_batch(&jobs, &out);
    let gpu_bytes = gpu_batch(&mut gpu, &jobs, &out);
    compare(&jobs, &out, &cpu, &gpu_bytes, "2-D dispatch");
}

/// A loader can keep the device on its own thread and hand batches across.
#[test]
fn gpu_and_batches_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Gpu>();
    send_sync::<framecull::loader::gpu::GpuBatch>();
    send_sync::<GpuError>();
}

#[test]
fn describes_its_adapter() {
    let Some(gpu) = gpu() else { return };
    let description = gpu.adapter_description();
    assert!(description.contains('('), "{description}");
    if description.contains("llvmpipe") {
        assert!(gpu.is_software());
    }
}
