//! Streams that change their frame size mid-stream: a whole-clip window holds every frame.

use std::path::Path;

use framecull::loader::{Loader, Mode, Sampling, Timing};

use super::{
    AV1_SIZE_CHANGE, H264_SIZE_CHANGE, ffprobe_frame_count, loader_config, sequential, size_change,
    vp8_size_change,
};
use crate::common;

/// Streams that change their frame size mid-stream (VP8 in a WebM whose declared duration
/// ends just before its last frame starts, H.264 with B-frames in MPEG-TS, AV1 in WebM): the
/// reader's index and a sequential decode hold every frame FFmpeg decodes, and one whole-clip
/// window of the loader delivers them all, in order, with their timestamps: from the
/// metadata alone (the whole video as the headers give it) and after the deep pass (as the
/// decode measured it).
#[test]
fn streams_that_change_size_load_every_frame_in_a_whole_clip_window() {
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "vp8_size_change.webm",
        "h264_size_change.ts",
        "av1_size_change.webm",
    ] {
        let data = tmp.path().join(name).join("data");
        std::fs::create_dir_all(&data).unwrap();
        let path = match name {
            "vp8_size_change.webm" => vp8_size_change(&data, 150),
            "h264_size_change.ts" => size_change(&data, name, 150, &H264_SIZE_CHANGE),
            _ => size_change(&data, name, 150, &AV1_SIZE_CHANGE),
        };
        whole_clip_window_holds_every_frame(&path, &tmp.path().join(name));
    }
}

/// The property above for one file, alone in its folder; projects go in `work`.
fn whole_clip_window_holds_every_frame(path: &Path, work: &Path) {
    let (data, name) = (
        path.parent().unwrap(),
        path.file_name().unwrap().to_str().unwrap(),
    );
    let n = ffprobe_frame_count(path);
    assert_eq!(n, 300, "{name}");
    let reference = sequential(path);
    assert_eq!(
        reference.len(),
        n,
        "{name}: the reader's index against ffprobe's count"
    );
    let sizes: std::collections::BTreeSet<(u32, u32)> =
        reference.iter().map(|p| (p.width, p.height)).collect();
    assert_eq!(sizes.len(), 2, "{name}: the frame size changes: {sizes:?}");
    for deep in [false, true] {
        let project = work.join(format!("project-{deep}"));
        common::scan_and_export(data, &project, name, deep);
        let mut config = loader_config(Mode::Uniform, false, 1);
        config.sampling = Sampling {
            clip_len: None,
            max_frames: 1000,
            timing: Timing::Stride(1),
            mode: Mode::Uniform,
            ..Sampling::default()
        };
        config.batching.batch_size = 1;
        let mut loader = Loader::open(&project.join("manifests/x"), None, config).unwrap();
        let batch = loader.epoch(0).next().unwrap().unwrap();
        let window = &batch.windows[0];
        assert_eq!(
            window.frames,
            (0..n as u64).collect::<Vec<_>>(),
            "{name}, deep {deep}: the whole-clip window's frames"
        );
        let pts: Vec<i64> = reference.iter().map(|p| p.pts).collect();
        assert_eq!(window.pts, pts, "{name}, deep {deep}: their timestamps");
        assert_eq!(batch.lengths[0] as usize, n, "{name}, deep {deep}");
    }
}
