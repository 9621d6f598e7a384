//! The catalog's unit tests: fields read back as written, items read whole and in order.

use super::*;
use framecull_model::{
    AnalysisLevel, Crop, Curves, FieldOrder, Flag, FlagSource, Item, ItemId, Measured, MediaInfo,
    MediaKind, Metrics, Ratio, Severity,
};

/// Media information with every field set: read back whole, and a brief read holds the
/// brief fields and no other. A rescan replaces every field.
#[test]
fn every_media_field_reads_back_as_written_and_a_brief_read_holds_the_brief_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut catalog = Catalog::create_or_open(&dir.path().join("p"), dir.path()).unwrap();
    let info = MediaInfo {
        container: Some("mpegts".into()),
        codec: Some("hevc".into()),
        profile: Some("Main 10".into()),
        pix_fmt: Some("yuv420p10le".into()),
        width: Some(1920),
        height: Some(1080),
        rotation_deg: Some(270),
        sample_aspect_ratio: Ratio::new(4, 3),
        fps: Some(25.0),
        fps_base: Some(50.0),
        time_base: Ratio::new(1, 90_000),
        start_secs: Some(1.4),
        duration_secs: Some(12.5),
        frame_count: Some(312),
        bit_rate: Some(8_000_000),
        has_audio: Some(false),
        exif_orientation: Some(3),
        stream_index: Some(2),
        color_space: Some("bt709".into()),
    };
    let mut update = ItemUpdate {
        path: "a.ts".into(),
        size_bytes: 7,
        mtime_ns: 9,
        fingerprint: Some("f".into()),
        probe: Probe::ok(MediaKind::Video, MediaInfo::default()),
    };
    for info in [MediaInfo::default(), info.clone()] {
        update.probe.info = info;
        let scan = catalog.begin_scan(dir.path()).unwrap();
        catalog.upsert_items(scan, 1, &[update.clone()]).unwrap();
    }
    let items = catalog.items().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!((items[0].size_bytes, items[0].mtime_ns), (7, 9));
    assert_eq!(items[0].info, info);
    let (brief, ()) = catalog.items_and(ItemFields::Brief, |_| Ok(())).unwrap();
    let expected = MediaInfo {
        codec: info.codec.clone(),
        width: info.width,
        height: info.height,
        rotation_deg: info.rotation_deg,
        fps: info.fps,
        duration_secs: info.duration_secs,
        bit_rate: info.bit_rate,
        exif_orientation: info.exif_orientation,
        stream_index: info.stream_index,
        ..MediaInfo::default()
    };
    assert_eq!(brief[0].info, expected);
    assert_eq!(brief[0].mtime_ns, 0);
}

/// Flags read back in the order written, every field; a severity or source this version
/// does not know reads as a warning from a rule.
#[test]
fn flags_read_back_as_written() {
    let (_dir, mut catalog) = catalog_with(&["a.mp4"]);
    let id = catalog.items().unwrap()[0].id;
    let flag = |code: &str, severity, source| Flag {
        code: code.into(),
        severity,
        reason: format!("why {code}"),
        source,
    };
    let flags = vec![
        (id, flag("truncated", Severity::Error, FlagSource::Decode)),
        (id, flag("letterbox", Severity::Info, FlagSource::Rule)),
    ];
    let config = framecull_analysis::flags::Config::default();
    catalog
        .replace_derived(&HashMap::new(), &flags, &config)
        .unwrap();
    let read = catalog.all_flags().unwrap();
    let expected: Vec<Flag> = flags.into_iter().map(|(_, f)| f).collect();
    assert_eq!(read[&id], expected);
    catalog
        .conn
        .execute("UPDATE flags SET severity = 'dire', source = 'oracle'", [])
        .unwrap();
    let read = catalog.all_flags().unwrap();
    assert!(
        read[&id]
            .iter()
            .all(|f| f.severity == Severity::Warning && f.source == FlagSource::Rule)
    );
}

/// Metrics with every field set to a value of its own (none the default), and a large
/// hash: what the catalog writes it must read back, field for field.
#[test]
fn every_metrics_field_reads_back_as_written() {
    let (_dir, mut catalog) = catalog_with(&["a.mp4"]);
    let id = catalog.items().unwrap()[0].id;
    let text = |s: &str| Some(s.to_string());
    let metrics = Metrics {
        level: AnalysisLevel::Triage,
        decoded_frames: 1,
        decode_errors: 2,
        first_error: text("e"),
        decoder_messages: 3,
        first_message: text("m"),
        repeat_frames: 4,
        discarded_frames: 5,
        undecodable: text("u"),
        no_decoder: text("n"),
        timed_out: true,
        motion_mean: Some(6.5),
        motion_p95: Some(7.5),
        static_share: Some(0.125),
        brightness: Some(8.5),
        brightness_p5: Some(9.5),
        brightness_p95: Some(10.5),
        sharpness: Some(11.5),
        entropy: Some(12.5),
        colorfulness: Some(13.5),
        black_share: Some(0.25),
        frozen_share: Some(0.375),
        decoded_duration_secs: Some(14.5),
        pts_backwards: 15,
        pts_repeats: 16,
        vfr: Some(true),
        interval_cv: Some(0.5),
        resolution_changes: 17,
        truncated: true,
        suspect: text("s"),
        structure_error: text("x"),
        phash: Some(u64::MAX - 1),
        content_hash: text("h"),
        content_crop: Crop::parse("1440:1080:240:0"),
        field_order: Some(FieldOrder::Bff),
        declared_field_order: Some(FieldOrder::Progressive),
        fields_tested: 31,
        tff_frames: 1,
        bff_frames: 27,
        progressive_frames: 2,
        repeated_fields: 3,
    };
    let result = AnalysisResult {
        id,
        size_bytes: 0,
        mtime_ns: 0,
        stream_index: Some(0),
        metrics: metrics.clone(),
        curves: Curves::default(),
    };
    catalog.store_analyses(1, [&result]).unwrap();
    assert_eq!(
        catalog.metrics_by_id().unwrap(),
        vec![(id, metrics.clone())]
    );
    let measured = catalog.measured_by_id().unwrap();
    assert_eq!(measured, vec![(id, Measured::from(&metrics))]);
}

/// A catalog whose ids are not in path order (as after a merge or a rescan adding files),
/// with names that sort differently by bytes than by eye.
fn catalog_with(paths: &[&str]) -> (tempfile::TempDir, Catalog) {
    let dir = tempfile::tempdir().unwrap();
    let mut catalog = Catalog::create_or_open(&dir.path().join("p"), dir.path()).unwrap();
    let scan = catalog.begin_scan(dir.path()).unwrap();
    let batch: Vec<ItemUpdate> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| ItemUpdate {
            path: (*p).into(),
            size_bytes: i as u64,
            mtime_ns: 0,
            fingerprint: Some(format!("f{i}")),
            probe: Probe::ok(
                MediaKind::Video,
                MediaInfo {
                    container: Some("mov,mp4,m4a,3gp,3g2,mj2".into()),
                    codec: Some("h264".into()),
                    profile: Some("High".into()),
                    pix_fmt: Some("yuv420p".into()),
                    width: Some(640 + i as u32),
                    height: Some(480),
                    rotation_deg: Some(90),
                    fps: Some(29.97),
                    fps_base: Some(30.0),
                    duration_secs: Some(i as f64 + 0.5),
                    frame_count: Some(15),
                    bit_rate: Some(1_000 * i as i64),
                    has_audio: Some(true),
                    exif_orientation: Some(6),
                    ..MediaInfo::default()
                },
            ),
        })
        .collect();
    catalog.upsert_items(scan, 1, &batch).unwrap();
    (dir, catalog)
}

const PATHS: [&str; 7] = [
    "z/last.jpg",
    "B.jpg",
    "a/b.jpg",
    "a b.jpg",
    "é.jpg",
    "line\nbreak.jpg",
    "-dash.jpg",
];

#[test]
fn items_and_reads_every_item_once_in_path_byte_order() {
    for n in 0..=PATHS.len() {
        let (_dir, catalog) = catalog_with(&PATHS[..n]);
        let (items, count) = catalog
            .items_and(ItemFields::All, |c| c.count_items())
            .unwrap();
        assert_eq!(count, n as u64);
        let paths: Vec<&str> = items.iter().map(|i| i.path.as_str()).collect();
        let mut expected: Vec<&str> = PATHS[..n].to_vec();
        expected.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        assert_eq!(paths, expected, "{n} items");
        let alone: Vec<(ItemId, String)> = catalog
            .items()
            .unwrap()
            .into_iter()
            .map(|i| (i.id, i.path))
            .collect();
        let both: Vec<(ItemId, String)> = items.into_iter().map(|i| (i.id, i.path)).collect();
        assert_eq!(alone, both);
    }
}

/// Paths from a few pieces that share long prefixes (past the sort keys' 24 bytes),
/// prefixes of one another, multi-byte characters that differ in their last byte:
/// the order is a byte sort of the paths, every item once.
#[test]
fn sort_by_path_is_a_byte_sort_of_the_paths() {
    let pieces = [
        "recordings/cam01/2024-05-01/",
        "clip_0001.mp4",
        "clip_0001.mp4.bak",
        "é",
        "è",
        "/",
        "a",
        "A",
        "clip",
    ];
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for round in 0..200 {
        let count = next(40);
        let lead = if round % 2 == 0 { pieces[0] } else { "" };
        let paths: Vec<String> = (0..count)
            .map(|_| {
                let mut p = lead.to_string();
                for _ in 0..next(6) {
                    p.push_str(pieces[next(pieces.len())]);
                }
                p
            })
            .collect();
        let items: Vec<Item> = paths
            .iter()
            .enumerate()
            .map(|(id, path)| Item {
                id: id as ItemId,
                path: path.clone(),
                kind: MediaKind::Image,
                status: ItemStatus::Ok,
                error: None,
                size_bytes: 0,
                mtime_ns: 0,
                fingerprint: None,
                info: MediaInfo::default(),
            })
            .collect();
        let mut ordered = items;
        sort_by_path(&mut ordered, |i| &i.path);
        let mut expected: Vec<(&[u8], ItemId)> = paths
            .iter()
            .enumerate()
            .map(|(id, p)| (p.as_bytes(), id as ItemId))
            .collect();
        expected.sort();
        let got: Vec<&[u8]> = ordered.iter().map(|i| i.path.as_bytes()).collect();
        let want: Vec<&[u8]> = expected.iter().map(|e| e.0).collect();
        assert_eq!(got, want, "round {round}");
        let mut ids: Vec<ItemId> = ordered.iter().map(|i| i.id).collect();
        ids.sort();
        assert_eq!(
            ids,
            (0..count as ItemId).collect::<Vec<_>>(),
            "round {round}"
        );
    }
}

/// A brief read has the window's fields as a full read has them, the others empty.
#[test]
fn a_brief_read_keeps_the_fields_the_window_uses() {
    let (_dir, catalog) = catalog_with(&PATHS);
    let (all, ()) = catalog.items_and(ItemFields::All, |_| Ok(())).unwrap();
    let (brief, ()) = catalog.items_and(ItemFields::Brief, |_| Ok(())).unwrap();
    assert_eq!(all.len(), brief.len());
    for (a, b) in all.iter().zip(&brief) {
        let (x, y) = (&a.info, &b.info);
        assert_eq!(
            (a.id, &a.path, a.kind, a.status, &a.error, a.size_bytes),
            (b.id, &b.path, b.kind, b.status, &b.error, b.size_bytes)
        );
        assert_eq!(
            (&a.fingerprint, &x.codec, x.width, x.height, x.rotation_deg),
            (&b.fingerprint, &y.codec, y.width, y.height, y.rotation_deg)
        );
        assert_eq!(
            (x.fps, x.duration_secs, x.bit_rate, x.exif_orientation),
            (y.fps, y.duration_secs, y.bit_rate, y.exif_orientation)
        );
        assert!(x.container.is_some() && y.container.is_none(), "{}", a.path);
        assert_eq!(b.mtime_ns, 0);
    }
}

#[test]
fn by_item_pairs_each_item_with_its_own_entry() {
    let (_dir, catalog) = catalog_with(&PATHS);
    let items = catalog.items().unwrap();
    // Entries for every other item, plus ids no item has, by ascending id.
    let mut by_id: Vec<(ItemId, String)> = items
        .iter()
        .step_by(2)
        .map(|i| (i.id, i.path.clone()))
        .chain([(-5, "none".to_string()), (1_000, "none".to_string())])
        .collect();
    by_id.sort();
    let paired = by_item(&items, &by_id);
    assert_eq!(paired.len(), items.len());
    for (k, (item, entry)) in items.iter().zip(&paired).enumerate() {
        let expected = (k % 2 == 0).then_some(&item.path);
        assert_eq!(*entry, expected, "{}", item.path);
    }
}
