//! Reads of objects: the local files' frames and pictures, reads ahead, a short probe.

use std::time::{Duration, Instant};

use super::hard_to_seek;
use crate::common;
use crate::common::s3::{Server, moto_server};

#[test]
fn frames_read_from_an_object_are_the_local_files_frames() {
    use framecull::media::reader::{ReadTimes, VideoReader};
    use framecull::media::source::Source;
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let names = hard_to_seek(data.path());
    let server = Server::start(&moto, None);
    server.upload(data.path(), "exact", "v", false);
    let root = server.root("s3://exact/v");
    let mut rng = framecull::loader::plan::Rng::new(&[11]);
    for name in names {
        let path = data.path().join(name);
        let mut local = VideoReader::open(&path, 1).unwrap();
        let n = local.frames().len();
        let mut sequential = vec![None; n];
        local
            .read(
                &(0..n).collect::<Vec<_>>(),
                None,
                &mut ReadTimes::default(),
                &mut |i, p| sequential[i] = Some(p),
            )
            .unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        let object = Source::in_root(&root, name, size);
        let mut remote = VideoReader::open_source(&object, 1).unwrap();
        assert_eq!(remote.frame_pts(), local.frame_pts(), "{name}");
        // Sampled windows, in a random order: each a seek (or a decode on) in the object.
        for _ in 0..12 {
            let start = rng.below(n as u64) as usize;
            let wanted: Vec<usize> = (start..n).step_by(3).take(4).collect();
            let mut got = Vec::new();
            remote
                .read(&wanted, None, &mut ReadTimes::default(), &mut |i, p| {
                    got.push((i, p))
                })
                .unwrap_or_else(|e| panic!("{name}: frames {wanted:?}: {e}"));
            assert_eq!(got.len(), wanted.len(), "{name}");
            for (i, picture) in got {
                let want = sequential[wanted[i]].as_ref().unwrap();
                assert!(
                    picture == *want,
                    "{name}: frame {} read from the object is not the local file's",
                    wanted[i]
                );
            }
        }
    }
}

/// The window's pictures of objects (thumbnails and the player's frames, decoded in a
/// `framecull worker pictures` process and handed over in shared memory) are those of the
/// local files: an open-GOP MKV, an MPEG-TS with one keyframe and an offset, and an AVI
/// (MPEG-4 Part 2, no per-frame timestamps) under a name with a space, an accent and a hash.
#[test]
fn the_windows_pictures_of_objects_are_the_local_files_pictures() {
    use framecull::media::pictures::{FirstPictures, Pictures};
    use framecull::media::source::Source;
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let mut names = hard_to_seek(data.path());
    let odd = "hard/odd name \u{e9} #1.avi";
    common::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=176x144:rate=25",
        "-frames:v",
        "50",
        "-c:v",
        "mpeg4",
        "-g",
        "12",
        data.path().join(odd).to_str().unwrap(),
    ]);
    names.push(odd);
    let server = Server::start(&moto, None);
    server.upload(data.path(), "pictures", "w", false);
    let root = server.root("s3://pictures/w");
    let mut first = FirstPictures::new();
    for name in names {
        let path = data.path().join(name);
        let size = std::fs::metadata(&path).unwrap().len();
        let object = Source::in_root(&root, name, size);
        let local = Source::File(path.clone());
        // Thumbnails: the first picture, fitted in 160 px.
        let budget = Duration::from_secs(20);
        let thumb = first.first(&object.open(), 160, budget).unwrap();
        let here =
            framecull::media::decode::first_picture(&local.open(), 160, Instant::now() + budget)
                .unwrap();
        assert!(
            thumb == here,
            "{name}: the object's thumbnail is not the file's"
        );
        // The player: frames across the video, upright and turned, from a worker.
        let mut remote = Pictures::open(&object, 1).unwrap();
        assert!(remote.in_worker(), "{name}");
        let mut mine = Pictures::open_here(&local, 1).unwrap();
        assert_eq!(remote.timeline().pts, mine.timeline().pts, "{name}");
        let n = mine.timeline().pts.len();
        assert!(n >= 50, "{name}: {n} frames");
        for (index, turns) in [(0, 0), (n / 2, 1), (n - 1, 0), (7, 2), (n / 3, 3)] {
            let (w, h, rgb) = remote.picture(index, turns, (320, 240), None).unwrap();
            let (w, h, rgb) = (w, h, rgb.to_vec());
            let want = mine.picture(index, turns, (320, 240), None).unwrap();
            assert!(
                (w, h) == (want.0, want.1) && rgb == want.2,
                "{name}: frame {index} turned {turns} differs"
            );
        }
    }
}

/// A decoder's reads (`CachedObject::streaming`) have the next windows requested while the
/// bytes before them are read, and fetch each byte once; a probe's reads (`CachedObject::new`) fetch
/// only what is read. Both read the object's bytes.
#[test]
fn a_streaming_read_requests_the_next_range_ahead_and_reads_each_byte_once() {
    use framecull::storage::{BLOCK_BYTES, CachedObject, Object};
    use std::io::Read;
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    // 5 MiB that do not repeat: a misplaced range would not compare equal.
    let bytes: Vec<u8> = (0u32..5 * 1024 * 1024 / 4)
        .flat_map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes())
        .collect();
    std::fs::write(data.path().join("big.bin"), &bytes).unwrap();
    let server = Server::start(&moto, None);
    server.upload(data.path(), "ahead", "set", false);

    for streaming in [false, true] {
        let root = server.root("s3://ahead/set");
        let remote = root.as_remote().unwrap().clone();
        let object = Object {
            remote: remote.clone(),
            rel_path: "big.bin".into(),
            size_bytes: bytes.len() as u64,
        };
        let cached = if streaming {
            CachedObject::streaming(object)
        } else {
            CachedObject::new(object)
        };
        let mut reader = cached.reader();
        // One block, then two: the second read is sequential.
        let mut head = vec![0u8; 3 * BLOCK_BYTES as usize];
        reader.read_exact(&mut head).unwrap();
        assert_eq!(head, bytes[..head.len()]);
        let deadline = Instant::now() + Duration::from_secs(10);
        // A streaming read has the next two windows on their way.
        let expected_gets = if streaming { 4 } else { 2 };
        while remote.counts().get < expected_gets && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // Give a wrong extra request the time to show.
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            remote.counts().get,
            expected_gets,
            "streaming {streaming}: {:?}",
            remote.counts()
        );
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        head.extend(rest);
        assert!(head == bytes, "streaming {streaming}: other bytes");
        assert_eq!(
            remote.counts().bytes_read,
            bytes.len() as u64,
            "streaming {streaming}: {:?}",
            remote.counts()
        );
    }
}

/// A transport stream's probe reads its head and its end, not seconds of packets: it analyses
/// a quarter second of them, and again with FFmpeg's defaults where a stream is then left
/// without its frame size (a recording cut in the middle of a GOP). The object's probe is the
/// local file's.
#[test]
fn probing_a_transport_stream_reads_a_small_part_of_it() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let whole = data.path().join("whole.ts");
    // 8 s of noisy 640x360 H.264 at 20 Mbit/s with AAC: about 21 MB, a keyframe every 3 s.
    common::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=640x360:rate=30,noise=alls=30:allf=t",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:sample_rate=48000",
        "-t",
        "8",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-b:v",
        "20M",
        "-maxrate",
        "20M",
        "-bufsize",
        "10M",
        "-g",
        "90",
        "-c:a",
        "aac",
        "-f",
        "mpegts",
        whole.to_str().unwrap(),
    ]);
    // The same from a packet boundary 5/8 in (5 s): its first keyframe, and the first frame
    // size, are a second in, past the probe's short analysis and within FFmpeg's defaults.
    let bytes = std::fs::read(&whole).unwrap();
    let from = bytes.len() * 5 / 8 / 188 * 188;
    std::fs::write(data.path().join("cut.ts"), &bytes[from..]).unwrap();

    let server = Server::start(&moto, None);
    server.upload(data.path(), "streams", "ts", false);
    let root = server.root("s3://streams/ts");
    let remote = root.as_remote().unwrap();
    let budget = Duration::from_secs(30);
    let mut read_share = Vec::new();
    for name in ["whole.ts", "cut.ts"] {
        let size = std::fs::metadata(data.path().join(name)).unwrap().len();
        let local = framecull::media::probe_file(&data.path().join(name), budget);
        assert_eq!(
            local.status,
            framecull::model::ItemStatus::Ok,
            "{name}: {local:?}"
        );
        let info = &local.info;
        assert_eq!(
            (info.width, info.height, info.pix_fmt.as_deref(), info.fps),
            (Some(640), Some(360), Some("yuv420p"), Some(30.0)),
            "{name}: {info:?}"
        );
        assert_eq!(info.has_audio, Some(true), "{name}");

        let before = remote.counts();
        let source = framecull::media::source::Source::in_root(&root, name, size);
        let probed = framecull::media::probe(&source.open(), budget);
        let read = remote.counts().bytes_read - before.bytes_read;
        assert_eq!(probed, local, "{name}");
        read_share.push((name, read as f64 / size as f64));
    }
    // The whole file: its first block, a window or two, the end for the duration, 10 % (with
    // FFmpeg's defaults 20 %). The cut one is analysed twice (its video has no frame size in
    // the first quarter second), about half of it (53 % with the defaults alone).
    assert!(read_share[0].1 < 0.15, "{read_share:?}");
    assert!(read_share[1].1 < 0.6, "{read_share:?}");
}
