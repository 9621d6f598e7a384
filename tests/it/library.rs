//! The library through its public API, a module per layer: the catalog (migrations,
//! projects, the journal), scanning, manifests, flag rules and the shared model types.
//! Catalogs are filled with hand-made items; only the scan tests write (tiny) media files.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use framecull::catalog::{Catalog, ItemUpdate};
use framecull::model::{
    Clip, ClipOrigin, Decision, FrameTimeline, Item, ItemId, MediaInfo, MediaKind, Probe, Ratio,
    Review,
};

/// A probed file as a scan would store it; the fingerprint follows the path.
fn fake(path: &str, kind: MediaKind) -> ItemUpdate {
    let video = kind == MediaKind::Video;
    ItemUpdate {
        path: path.to_string(),
        size_bytes: 1000 + path.len() as u64,
        mtime_ns: 1,
        fingerprint: Some(format!(
            "{:032x}",
            xxhash_rust::xxh3::xxh3_128(path.as_bytes())
        )),
        probe: Probe::ok(
            kind,
            MediaInfo {
                codec: Some(if video { "h264" } else { "png" }.into()),
                width: Some(640),
                height: Some(360),
                fps: video.then_some(25.0),
                time_base: video.then(|| Ratio::new(1, 12800).unwrap()),
                start_secs: video.then_some(0.0),
                duration_secs: video.then_some(4.0),
                frame_count: video.then_some(100),
                ..MediaInfo::default()
            },
        ),
    }
}

/// A catalog of the dataset `/data` in `project`, holding `items`.
fn catalog_with(project: &Path, items: Vec<ItemUpdate>) -> Catalog {
    let mut catalog = Catalog::create_or_open(project, Path::new("/data")).unwrap();
    let scan = catalog.begin_scan(Path::new("/data")).unwrap();
    catalog
        .upsert_items(scan, framecull::scan::PROBE_VERSION, &items)
        .unwrap();
    catalog
}

fn item_of(catalog: &Catalog, path: &str) -> Item {
    let items = catalog.items().unwrap();
    items.into_iter().find(|i| i.path == path).unwrap()
}

fn id_of(catalog: &Catalog, path: &str) -> ItemId {
    item_of(catalog, path).id
}

/// A clip of `item` over frames `[start, end)` of a 25 fps video (time base 1/12800).
fn clip(item: ItemId, start: usize, end: usize) -> Clip {
    let timeline = FrameTimeline {
        pts: (0..100).map(|i| i * 512).collect(),
        time_base: Ratio::new(1, 12800).unwrap(),
    };
    timeline.clip(item, start, end, None, ClipOrigin::Manual)
}

/// The review state as the front ends see it: every item's review (the default when it has
/// none) and every clip.
type ReviewState = (BTreeMap<ItemId, Review>, BTreeMap<ItemId, Vec<Clip>>);

fn review_state(catalog: &Catalog) -> ReviewState {
    let reviews = catalog.all_reviews().unwrap();
    let by_item = catalog
        .items()
        .unwrap()
        .iter()
        .map(|i| (i.id, reviews.get(&i.id).cloned().unwrap_or_default()))
        .collect();
    (by_item, catalog.all_clips().unwrap().into_iter().collect())
}

mod catalog {
    use super::*;
    use framecull::catalog::{CatalogError, Project};
    use framecull::model::{Edit, ItemStatus};
    use framecull::scan::pipeline::{Dataset, IngestError};

    /// The schema version and the whole schema, as SQLite holds them.
    fn schema(project: &Path) -> (i64, Vec<(String, String)>) {
        let conn = rusqlite::Connection::open(project.join("catalog.db")).unwrap();
        let version = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        let mut stmt = conn
            .prepare("SELECT name, COALESCE(sql, '') FROM sqlite_master ORDER BY name")
            .unwrap();
        let objects = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        (version, objects)
    }

    /// A catalog of a video `v.mp4` and a picture `i.png`, with their ids.
    fn video_and_image(project: &Path) -> (Catalog, ItemId, ItemId) {
        let catalog = catalog_with(
            project,
            vec![
                fake("v.mp4", MediaKind::Video),
                fake("i.png", MediaKind::Image),
            ],
        );
        let (v, i) = (id_of(&catalog, "v.mp4"), id_of(&catalog, "i.png"));
        (catalog, v, i)
    }

    #[test]
    fn migrations_run_once_and_a_newer_catalog_is_refused() {
        let proj = tempfile::tempdir().unwrap();
        let mut catalog = catalog_with(proj.path(), vec![fake("a.png", MediaKind::Image)]);
        catalog
            .set_decisions(&[id_of(&catalog, "a.png")], Decision::Accepted)
            .unwrap();
        let state = review_state(&catalog);
        drop(catalog);
        let (version, objects) = schema(proj.path());
        assert!(version > 0);
        assert!(objects.iter().any(|(name, _)| name == "items"));

        for _ in 0..2 {
            let catalog = Catalog::open(proj.path()).unwrap();
            assert_eq!(review_state(&catalog), state);
            drop(catalog);
            assert_eq!(schema(proj.path()), (version, objects.clone()));
        }
        let again = Catalog::create_or_open(proj.path(), Path::new("/data")).unwrap();
        assert_eq!(review_state(&again), state);
        drop(again);
        assert_eq!(schema(proj.path()), (version, objects));

        // A catalog written by a newer framecull is left alone.
        let conn = rusqlite::Connection::open(proj.path().join("catalog.db")).unwrap();
        conn.pragma_update(None, "user_version", version + 1)
            .unwrap();
        drop(conn);
        let err = Catalog::open(proj.path()).err().unwrap();
        assert!(
            matches!(err, CatalogError::TooNew { found, supported }
                if found == version + 1 && supported == version),
            "{err:?}"
        );
        assert!(err.to_string().contains("upgrade framecull"), "{err}");
        assert_eq!(schema(proj.path()).0, version + 1);
    }

    #[test]
    fn a_project_is_found_from_below_and_refuses_another_dataset() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (a, b) = (root.join("a"), root.join("b"));
        std::fs::create_dir_all(a.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::os::unix::fs::symlink(&a, root.join("link")).unwrap();

        let dataset = Dataset::open(&a, None).unwrap();
        let project = Project::of_dataset(&a);
        assert_eq!(dataset.project, project);
        drop(dataset);
        assert_eq!(
            Project::locate(&a.join("sub/deeper")),
            Some(project.clone())
        );
        assert_eq!(Project::locate(&b), None);
        // The same folder by another path is the same dataset.
        for same in [a.join("sub/.."), root.join("link")] {
            let dataset = Dataset::open(&same, None).unwrap();
            assert_eq!(
                (dataset.root.recorded(), dataset.project),
                (a.clone(), project.clone())
            );
        }

        let err = project.create_or_open(&b).err().unwrap();
        match &err {
            CatalogError::OtherDataset {
                recorded, given, ..
            } => assert_eq!((recorded, given), (&a, &b)),
            other => panic!("{other:?}"),
        }
        let text = err.to_string();
        assert!(
            text.contains(&format!(
                "belongs to dataset {}, not {}",
                a.display(),
                b.display()
            )),
            "{text}"
        );
        let err = Dataset::open(&b, Some(project.clone())).err().unwrap();
        assert!(
            matches!(err, IngestError::Catalog(CatalogError::OtherDataset { .. })),
            "{err:?}"
        );
        // The refusals changed nothing.
        let catalog = project.open().unwrap();
        assert_eq!(catalog.dataset_root().unwrap(), Some(a));
    }

    #[test]
    fn undo_and_redo_restore_decisions_tags_notes_and_clips_exactly() {
        let proj = tempfile::tempdir().unwrap();
        let (mut catalog, v, i) = video_and_image(proj.path());
        let mut states = vec![review_state(&catalog)];
        let mut ops = Vec::new();
        let mut record = |catalog: &mut Catalog, op: i64| {
            ops.push(op);
            states.push(review_state(catalog));
        };

        let op = catalog.set_decisions(&[v, i], Decision::Accepted).unwrap();
        record(&mut catalog, op);
        let op = catalog
            .set_tags(i, vec!["night".into(), "rain".into()])
            .unwrap();
        record(&mut catalog, op);
        let op = catalog
            .set_note(v, Some("check the ending".into()))
            .unwrap();
        record(&mut catalog, op);
        let mut labelled = clip(v, 25, 50);
        labelled.label = Some("walking".into());
        labelled.origin = ClipOrigin::Cuts;
        labelled.decision = Decision::Rejected;
        let op = catalog
            .apply(vec![
                Edit::AddClip {
                    clip: clip(v, 0, 10),
                },
                Edit::AddClip { clip: labelled },
            ])
            .unwrap();
        record(&mut catalog, op);
        // One operation of two kinds: a clip removed and a decision changed.
        let first = catalog.all_clips().unwrap()[&v][0].clone();
        let op = catalog
            .apply(vec![
                Edit::RemoveClip { clip: first },
                Edit::Decision {
                    item: i,
                    before: Decision::Accepted,
                    after: Decision::Rejected,
                },
            ])
            .unwrap();
        record(&mut catalog, op);
        assert_eq!(states.len(), 6);
        assert!(states.windows(2).all(|w| w[0] != w[1]), "every step shows");

        for k in (0..ops.len()).rev() {
            assert_eq!(catalog.undo().unwrap(), Some(ops[k]));
            assert_eq!(review_state(&catalog), states[k], "after undoing op {k}");
        }
        assert_eq!(catalog.undo().unwrap(), None);
        // The journal is in the database: a reopened catalog redoes the same operations.
        drop(catalog);
        let mut catalog = Catalog::open(proj.path()).unwrap();
        for k in 0..ops.len() {
            assert_eq!(catalog.redo().unwrap(), Some(ops[k]));
            assert_eq!(
                review_state(&catalog),
                states[k + 1],
                "after redoing op {k}"
            );
        }
        assert_eq!(catalog.redo().unwrap(), None);

        // A new operation after an undo clears what could be redone.
        catalog.undo().unwrap();
        catalog.set_decisions(&[v], Decision::Rejected).unwrap();
        assert_eq!(catalog.redo().unwrap(), None);
    }

    #[test]
    fn a_missing_file_keeps_its_review_and_clips_and_gets_them_back() {
        let proj = tempfile::tempdir().unwrap();
        let (mut catalog, v, _) = video_and_image(proj.path());
        catalog.set_decisions(&[v], Decision::Accepted).unwrap();
        catalog.set_tags(v, vec!["night".into()]).unwrap();
        catalog.set_note(v, Some("keep".into())).unwrap();
        catalog
            .apply(vec![Edit::AddClip {
                clip: clip(v, 0, 10),
            }])
            .unwrap();
        let before = review_state(&catalog);

        catalog
            .mark_missing(&["v.mp4".into(), "never-catalogued.mp4".into()])
            .unwrap();
        let gone = item_of(&catalog, "v.mp4");
        assert_eq!(gone.status, ItemStatus::Missing);
        assert_eq!(gone.error.as_deref(), Some("file no longer on disk"));
        assert_eq!(item_of(&catalog, "i.png").status, ItemStatus::Ok);
        assert_eq!(catalog.items().unwrap().len(), 2);
        assert_eq!(review_state(&catalog), before);

        // The file comes back: the same item, probed again, with its review work.
        let scan = catalog.begin_scan(Path::new("/data")).unwrap();
        catalog
            .upsert_items(
                scan,
                framecull::scan::PROBE_VERSION,
                &[fake("v.mp4", MediaKind::Video)],
            )
            .unwrap();
        let back = item_of(&catalog, "v.mp4");
        assert_eq!(
            (back.id, back.status, back.error),
            (v, ItemStatus::Ok, None)
        );
        assert_eq!(review_state(&catalog), before);
    }

    #[test]
    fn the_state_fingerprint_changes_with_what_an_export_reads() {
        let proj = tempfile::tempdir().unwrap();
        let (mut catalog, v, i) = video_and_image(proj.path());
        let fingerprint = |c: &Catalog| c.state_fingerprint().unwrap();
        let start = fingerprint(&catalog);
        assert_eq!(start.len(), 32);
        assert_eq!(fingerprint(&catalog), start, "reading changes nothing");

        catalog.set_decisions(&[i], Decision::Accepted).unwrap();
        let accepted = fingerprint(&catalog);
        assert_ne!(accepted, start);
        catalog.set_decisions(&[i], Decision::Rejected).unwrap();
        let rejected = fingerprint(&catalog);
        assert_ne!(rejected, accepted);
        catalog.undo().unwrap();
        assert_eq!(fingerprint(&catalog), accepted, "undo restores it");

        let mut seen = vec![start, accepted, rejected];
        let mut changed = |c: &Catalog, what: &str| {
            let now = fingerprint(c);
            assert!(
                !seen.contains(&now),
                "{what} left the fingerprint as it was"
            );
            seen.push(now);
        };
        catalog.set_tags(i, vec!["night".into()]).unwrap();
        changed(&catalog, "a tag");
        catalog
            .apply(vec![Edit::AddClip {
                clip: clip(v, 0, 10),
            }])
            .unwrap();
        changed(&catalog, "a clip");
        catalog.mark_missing(&["i.png".into()]).unwrap();
        changed(&catalog, "a missing file");
    }

    #[test]
    fn undoing_the_first_decision_restores_the_state_fingerprint() {
        let proj = tempfile::tempdir().unwrap();
        let mut catalog = catalog_with(proj.path(), vec![fake("i.png", MediaKind::Image)]);
        let start = catalog.state_fingerprint().unwrap();
        catalog
            .set_decisions(&[id_of(&catalog, "i.png")], Decision::Accepted)
            .unwrap();
        catalog.undo().unwrap();
        assert_eq!(catalog.state_fingerprint().unwrap(), start);
    }
}

mod scan {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, SystemTime};

    use framecull::catalog::Project;
    use framecull::media::synth::{ImageKind, VideoSpec};
    use framecull::model::ItemStatus;
    use framecull::scan::pipeline::Dataset;
    use framecull::scan::{ScanEvent, ScanOptions, ScanSummary, scan};

    /// Scan the dataset again; returns the summary and the paths probed, sorted.
    fn rescan(dataset: &mut Dataset) -> (ScanSummary, Vec<String>) {
        let options = ScanOptions {
            jobs: 1,
            ..ScanOptions::default()
        };
        let mut probed = Vec::new();
        let summary = scan(
            &mut dataset.catalog,
            &dataset.root,
            &options,
            &AtomicBool::new(false),
            &mut |e| {
                if let ScanEvent::Probed { path, .. } = e {
                    probed.push(path);
                }
            },
        )
        .unwrap();
        probed.sort();
        (summary, probed)
    }

    fn counts(s: &ScanSummary) -> [u64; 4] {
        [
            s.counts.seen,
            s.counts.probed,
            s.counts.unchanged,
            s.counts.missing,
        ]
    }

    #[test]
    fn a_scan_finds_every_file_and_rescans_probe_only_what_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        common::image(&data, "a.png", ImageKind::Png, 32, 24, None);
        common::image(&data, "b.jpg", ImageKind::Jpeg, 32, 24, None);
        common::image(&data, "deep/er/c.png", ImageKind::Png, 32, 24, None);
        common::video(&data, "v.mp4", &VideoSpec::new("libx264", 64, 48, 25, 5));
        // Taken for its content: a PNG without an extension. Damaged: noise named .mp4.
        std::fs::copy(data.join("a.png"), data.join("deep/no_extension")).unwrap();
        std::fs::write(data.join("broken.mp4"), [0x5a; 4096]).unwrap();
        // Not taken: other files and hidden folders.
        std::fs::write(data.join("notes.txt"), b"not media").unwrap();
        common::image(&data, ".cache/x.png", ImageKind::Png, 16, 16, None);
        let all = [
            "a.png",
            "b.jpg",
            "broken.mp4",
            "deep/er/c.png",
            "deep/no_extension",
            "v.mp4",
        ];
        let mut dataset =
            Dataset::open(&data, Some(Project::at(tmp.path().join("project")))).unwrap();

        let (first, probed) = rescan(&mut dataset);
        assert_eq!(probed, all);
        assert_eq!(counts(&first), [6, 6, 0, 0]);
        assert_eq!((first.problem_files, first.counts.problems), (1, 1));
        assert!(!first.cancelled);
        let items = dataset.catalog.items().unwrap();
        let paths: Vec<&str> = items.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(paths, all);
        assert_eq!(
            item_of(&dataset.catalog, "broken.mp4").status,
            ItemStatus::Error
        );
        assert_eq!(
            item_of(&dataset.catalog, "deep/no_extension").kind,
            MediaKind::Image
        );
        assert_eq!(item_of(&dataset.catalog, "v.mp4").info.frame_count, Some(5));

        let (second, probed) = rescan(&mut dataset);
        assert!(probed.is_empty(), "{probed:?}");
        assert_eq!(counts(&second), [6, 0, 6, 0]);

        // New content of another size, and the same bytes with a new mtime.
        common::image(&data, "a.png", ImageKind::Png, 48, 40, None);
        std::fs::File::options()
            .write(true)
            .open(data.join("b.jpg"))
            .unwrap()
            .set_modified(SystemTime::now() + Duration::from_secs(60))
            .unwrap();
        let (third, probed) = rescan(&mut dataset);
        assert_eq!(probed, ["a.png", "b.jpg"]);
        assert_eq!(counts(&third), [6, 2, 4, 0]);
        assert_eq!(item_of(&dataset.catalog, "a.png").info.width, Some(48));

        // A deleted file turns missing, once, and keeps its decision.
        let c = id_of(&dataset.catalog, "deep/er/c.png");
        dataset
            .catalog
            .set_decisions(&[c], Decision::Accepted)
            .unwrap();
        std::fs::remove_file(data.join("deep/er/c.png")).unwrap();
        let (fourth, probed) = rescan(&mut dataset);
        assert!(probed.is_empty(), "{probed:?}");
        assert_eq!(counts(&fourth), [5, 0, 5, 1]);
        let gone = item_of(&dataset.catalog, "deep/er/c.png");
        assert_eq!(gone.status, ItemStatus::Missing);
        assert_eq!(gone.error.as_deref(), Some("file no longer on disk"));
        assert_eq!(
            dataset.catalog.all_reviews().unwrap()[&c].decision,
            Decision::Accepted
        );
        let (fifth, _) = rescan(&mut dataset);
        assert_eq!(counts(&fifth), [5, 0, 5, 0]);
        assert_eq!(dataset.catalog.items().unwrap().len(), 6);
    }
}

mod manifest {
    use super::*;
    use framecull::analysis::flags::Config;
    use framecull::manifest::{self, ExportOptions, Format, Include, ManifestError, SplitSpec};
    use framecull::model::{Edit, Flag, FlagSource, ItemStatus, Severity};

    fn options(name: &str, split: Option<&str>, seed: u64) -> ExportOptions {
        ExportOptions {
            name: name.into(),
            formats: vec![Format::Jsonl],
            split: split.map(|s| SplitSpec::parse(s).unwrap()),
            split_seed: seed,
            include: Include::Unreviewed,
            filter: None,
            shard_size: None,
        }
    }

    #[test]
    fn split_specs_keep_their_order_and_bad_ones_say_why() {
        let spec = SplitSpec::parse(" train = 0.7, val=0.2 ,test=0.1,").unwrap();
        let expected = [("train", 0.7), ("val", 0.2), ("test", 0.1)];
        let expected: Vec<(String, f64)> =
            expected.iter().map(|(n, s)| (n.to_string(), *s)).collect();
        assert_eq!(spec.splits, expected);
        assert_eq!(
            SplitSpec::parse("all=1").unwrap().splits,
            [("all".to_string(), 1.0)]
        );
        assert!(SplitSpec::parse("train=1,never=0").is_ok());

        for (text, says) in [
            ("train", r#"split "train" is not NAME=SHARE"#),
            (
                "train=0.8,val=lots",
                r#"split "val=lots": "lots" is not a number"#,
            ),
            (
                "a=-0.5,b=1.5",
                r#"split "a=-0.5": the share must be 0 or more"#,
            ),
            ("a=NaN,b=1", "the share must be 0 or more"),
            ("a=inf", "the share must be 0 or more"),
            ("a=0.5,a=0.5", "split names must be unique and not empty"),
            ("=1", "split names must be unique and not empty"),
            (
                "train=0.8,val=0.1",
                "split shares must add up to 1 (they add up to 0.9",
            ),
            ("", "split shares must add up to 1"),
            (" , ", "split shares must add up to 1"),
        ] {
            let err = SplitSpec::parse(text).unwrap_err().to_string();
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }

    #[test]
    fn an_empty_split_spec_says_its_shares_add_up_to_0() {
        let err = SplitSpec::parse("").unwrap_err().to_string();
        assert!(err.contains("(they add up to 0)"), "{err}");
    }

    #[test]
    fn the_same_seed_draws_the_same_splits() {
        let spec = SplitSpec::parse("train=0.5,val=0.3,test=0.2").unwrap();
        let keys: Vec<String> = (0..300).map(|i| format!("file:{i:032x}")).collect();
        let draw = |spec: &SplitSpec, seed: u64| -> Vec<String> {
            keys.iter()
                .map(|k| spec.assign(k, seed).to_string())
                .collect()
        };
        assert_eq!(draw(&spec, 7), draw(&spec, 7));
        assert_ne!(draw(&spec, 7), draw(&spec, 8));
        for name in ["train", "val", "test"] {
            assert!(draw(&spec, 7).iter().any(|s| s == name), "{name}");
        }
        let lopsided = SplitSpec::parse("train=1,never=0").unwrap();
        assert!(draw(&lopsided, 7).iter().all(|s| s == "train"));

        // Through exports: the same seed, the same split for every row; another seed moves some.
        let proj = tempfile::tempdir().unwrap();
        let items = (0..40)
            .map(|i| fake(&format!("i{i:02}.png"), MediaKind::Image))
            .collect();
        let catalog = catalog_with(proj.path(), items);
        let split = Some("train=0.5,val=0.5");
        for seed in [5, 5, 6] {
            manifest::export(&catalog, &options("s", split, seed)).unwrap();
        }
        let version = |v| manifest::read_version(proj.path(), "s", v).unwrap();
        let (v1, v2, v3) = (version(1), version(2), version(3));
        assert_eq!(v1, v2);
        assert_eq!(manifest::diff(&v1, &v2), manifest::Diff::default());
        let moved = manifest::diff(&v2, &v3);
        assert!(!moved.split_moves.is_empty());
        assert!(moved.added.is_empty() && moved.removed.is_empty() && moved.changed.is_empty());
    }

    #[test]
    fn an_export_needs_a_format_and_a_plain_name() {
        let proj = tempfile::tempdir().unwrap();
        let catalog = catalog_with(proj.path(), vec![fake("a.png", MediaKind::Image)]);
        let no_format = ExportOptions {
            formats: Vec::new(),
            ..options("x", None, 0)
        };
        let err = manifest::export(&catalog, &no_format).unwrap_err();
        assert!(
            matches!(&err, ManifestError::Invalid(m) if m == "no output format"),
            "{err:?}"
        );
        let long = "n".repeat(101);
        for bad in [
            "",
            ".hidden",
            "a/b",
            "../up",
            "two words",
            "é",
            long.as_str(),
        ] {
            let err = manifest::export(&catalog, &options(bad, None, 0)).unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains(&format!("manifest name {bad:?}"))
                    && text.contains("use letters, digits"),
                "{bad:?}: {text}"
            );
        }
        assert!(manifest::names(proj.path()).is_empty(), "nothing written");
        let longest = "n".repeat(100);
        for good in ["train", "v1.2-final_B", longest.as_str()] {
            let meta = manifest::export(&catalog, &options(good, None, 0)).unwrap();
            assert_eq!((meta.version, meta.counts.rows), (1, 1), "{good}");
        }
    }

    #[test]
    fn counts_add_up_and_every_file_left_out_has_a_reason() {
        let proj = tempfile::tempdir().unwrap();
        let mut items: Vec<ItemUpdate> = (0..5)
            .map(|i| fake(&format!("ok{i}.png"), MediaKind::Image))
            .collect();
        items.push(fake("clipped.mp4", MediaKind::Video));
        items.push(fake("whole.mp4", MediaKind::Video));
        items.push(fake("rejected.png", MediaKind::Image));
        items.push(fake("dark.png", MediaKind::Image));
        items.push(fake("grey.png", MediaKind::Image));
        let mut broken = fake("broken.mp4", MediaKind::Video);
        broken.probe = Probe::failed(MediaKind::Video, ItemStatus::Error, "cannot open");
        items.push(broken);
        let mut other = fake("other.bin", MediaKind::Other);
        other.probe = Probe::failed(MediaKind::Other, ItemStatus::Unsupported, "not media");
        items.push(other);
        let mut catalog = catalog_with(proj.path(), items);
        let id = |p| id_of(&catalog, p);
        let (clipped, rejected) = (id("clipped.mp4"), id("rejected.png"));
        let flag = |code: &str, severity| Flag {
            code: code.into(),
            severity,
            reason: "hand-made".into(),
            source: FlagSource::Rule,
        };
        let flags = [
            (id("dark.png"), flag("dark", Severity::Warning)),
            (id("grey.png"), flag("grayscale", Severity::Info)),
        ];
        catalog
            .replace_derived(&Default::default(), &flags, &Config::default())
            .unwrap();
        catalog
            .apply(vec![
                Edit::AddClip {
                    clip: clip(clipped, 0, 25),
                },
                Edit::AddClip {
                    clip: clip(clipped, 50, 75),
                },
            ])
            .unwrap();
        catalog
            .set_decisions(&[rejected], Decision::Rejected)
            .unwrap();

        let check = |catalog: &Catalog, options: &ExportOptions| {
            let (rows, counts) = manifest::select_rows(catalog, options).unwrap();
            assert_eq!(counts.rows, rows.len() as u64);
            assert_eq!(counts.by_kind.values().sum::<u64>(), counts.rows);
            if options.split.is_some() {
                assert_eq!(counts.by_split.values().sum::<u64>(), counts.rows);
            }
            let files: std::collections::BTreeSet<&str> =
                rows.iter().map(|r| r.path.as_str()).collect();
            assert_eq!(counts.files, files.len() as u64);
            // Every image or video is in, or left out for a reason; `other` files are neither.
            assert_eq!(counts.files + counts.excluded.values().sum::<u64>(), 11);
            (rows, counts)
        };
        let (rows, counts) = check(&catalog, &options("x", Some("train=0.5,val=0.5"), 1));
        // 5 plain pictures, the grey one, 2 clips and a whole video.
        assert_eq!(counts.rows, 9);
        assert_eq!(counts.files, 8);
        let kinds: Vec<(&str, u64)> = counts
            .by_kind
            .iter()
            .map(|(k, n)| (k.as_str(), *n))
            .collect();
        assert_eq!(kinds, [("image", 6), ("video", 3)]);
        let excluded: Vec<(&str, u64)> = counts
            .excluded
            .iter()
            .map(|(k, n)| (k.as_str(), *n))
            .collect();
        assert_eq!(
            excluded,
            [
                ("rejected", 1),
                ("status error", 1),
                ("unreviewed and flagged", 1)
            ]
        );
        assert_eq!(rows.iter().filter(|r| r.path == "clipped.mp4").count(), 2);

        // Accepted only: unreviewed files are left out, as such.
        catalog
            .set_decisions(&[clipped], Decision::Accepted)
            .unwrap();
        let accepted = ExportOptions {
            include: Include::Accepted,
            filter: None,
            ..options("x", None, 0)
        };
        let (rows, counts) = check(&catalog, &accepted);
        assert!(rows.iter().all(|r| r.path == "clipped.mp4"));
        assert_eq!((counts.rows, counts.files), (2, 1));
        assert_eq!(counts.excluded["unreviewed"], 8);
        // An export writes the counts it selected.
        let meta = manifest::export(&catalog, &accepted).unwrap();
        assert_eq!(meta.counts, counts);
    }

    #[test]
    fn a_rejected_clip_never_goes_in() {
        let proj = tempfile::tempdir().unwrap();
        let mut catalog = catalog_with(proj.path(), vec![fake("v.mp4", MediaKind::Video)]);
        let v = id_of(&catalog, "v.mp4");
        // As the window rejects the clip under the playhead.
        let mut bad = clip(v, 25, 50);
        bad.decision = Decision::Rejected;
        catalog.apply(vec![Edit::AddClip { clip: bad }]).unwrap();
        let (rows, _) = manifest::select_rows(&catalog, &options("x", None, 0)).unwrap();
        for r in &rows {
            assert!(
                r.end_secs <= 1.0 || r.start_secs >= 2.0,
                "{} [{}, {}) covers the rejected clip [1, 2)",
                r.path,
                r.start_secs,
                r.end_secs
            );
        }
        // The rest of the video goes in: before and after the rejected clip, frames included.
        let spans: Vec<_> = rows
            .iter()
            .map(|r| (r.start_frame, r.end_frame, r.start_secs))
            .collect();
        assert_eq!(rows.len(), 2, "{spans:?}");
        let mut spans = spans;
        spans.sort_by(|a, b| a.2.total_cmp(&b.2));
        assert_eq!((spans[0].0, spans[0].1), (Some(0), Some(25)));
        assert_eq!(spans[1].0, Some(50));
    }
}

mod flags {
    use super::*;
    use framecull::analysis::flags::{Config, QualityRules, Rules, item_flags};
    use framecull::model::{Flag, FlagSource, ItemStatus, Metrics, Severity};

    fn item(kind: MediaKind, width: u32, height: u32) -> Item {
        let update = fake("f", kind);
        Item {
            id: 1,
            path: "f".into(),
            kind,
            status: ItemStatus::Ok,
            error: None,
            size_bytes: update.size_bytes,
            mtime_ns: 0,
            fingerprint: None,
            info: MediaInfo {
                width: Some(width),
                height: Some(height),
                ..update.probe.info
            },
        }
    }

    fn video(width: u32, height: u32) -> Item {
        item(MediaKind::Video, width, height)
    }

    fn image(width: u32, height: u32) -> Item {
        item(MediaKind::Image, width, height)
    }

    /// `item` changed by `change`.
    fn with(mut item: Item, change: impl FnOnce(&mut Item)) -> Item {
        change(&mut item);
        item
    }

    fn rules(rules: Rules) -> Config {
        Config {
            rules,
            ..Config::default()
        }
    }

    fn quality(quality: QualityRules) -> Config {
        Config {
            quality,
            ..Config::default()
        }
    }

    /// Metrics of 100 decoded frames, changed by `set`.
    fn measured(set: impl FnOnce(&mut Metrics)) -> Metrics {
        let mut m = Metrics {
            decoded_frames: 100,
            ..Metrics::default()
        };
        set(&mut m);
        m
    }

    /// The flag `code` on `item`, if it has it (once).
    fn flag(item: &Item, metrics: Option<&Metrics>, config: &Config, code: &str) -> Option<Flag> {
        let all = item_flags(item, metrics, config);
        let mut found = all.iter().filter(|f| f.code == code);
        let first = found.next().cloned();
        assert!(found.next().is_none(), "{code} twice: {all:?}");
        first
    }

    /// Settings, a flag code, a file, what it measured, and the reason the warning should
    /// give (`None`: it must not fire).
    type Case<'a> = (&'a Config, &'a str, Item, Option<Metrics>, Option<&'a str>);

    /// Each case gets its warning from `source` with the reason given, or not at all.
    fn expect(source: FlagSource, cases: &[Case]) {
        for (n, (config, code, item, metrics, reason)) in cases.iter().enumerate() {
            let found = flag(item, metrics.as_ref(), config, code).map(|f| {
                assert_eq!((f.severity, f.source), (Severity::Warning, source));
                f.reason
            });
            assert_eq!(found.as_deref(), *reason, "{code}, case {n}");
        }
    }

    /// Every limit of `Rules` and the picture limits of `QualityRules`: past the limit the
    /// warning names the value and the limit; at the limit there is none.
    #[test]
    fn rule_limits_fire_past_them_and_not_at_them() {
        let sizes = &rules(Rules {
            min_width: Some(640),
            min_height: Some(360),
            max_width: Some(1920),
            max_height: Some(1080),
            ..Rules::default()
        });
        let (small, large) = ("resolution_below_min", "resolution_above_max");
        let narrow = Some("width 639 is below the minimum 640");
        let low = Some("height 359 is below the minimum 360");
        let both = Some("width 320 is below the minimum 640; height 200 is below the minimum 360");
        let wide = Some("width 1921 is above the maximum 1920");
        let tall = Some("height 1081 is above the maximum 1080");

        // Aspect: of the picture as displayed (a quarter turn from the container or EXIF).
        let aspects = &rules(Rules {
            min_aspect: Some(1.5),
            max_aspect: Some(2.0),
            ..Rules::default()
        });
        // One bound only: the other is shown open.
        let min_aspect = &rules(Rules {
            min_aspect: Some(1.0),
            ..Rules::default()
        });
        let aspect = "aspect_out_of_range";
        let portrait = Some("aspect ratio 0.56 is outside 1.50-2.00");
        let panorama = Some("aspect ratio 2.10 is outside 1.50-2.00");
        let open = Some("aspect ratio 0.90 is outside 1.00-inf");
        let turned = with(video(1080, 1920), |i| i.info.rotation_deg = Some(90));
        let exif = |o| with(image(1080, 1920), |i| i.info.exif_orientation = Some(o));

        // Duration and frame rate: videos only.
        let times = &rules(Rules {
            min_duration_secs: Some(0.5),
            max_duration_secs: Some(10.0),
            min_fps: Some(24.0),
            max_fps: Some(60.0),
            ..Rules::default()
        });
        let timed = |kind, duration_secs: f64, fps: f64| {
            with(item(kind, 640, 360), |i| {
                i.info.duration_secs = Some(duration_secs);
                i.info.fps = Some(fps);
            })
        };
        let clip = |duration_secs, fps| timed(MediaKind::Video, duration_secs, fps);
        let short = Some("duration 0.40 s is below the minimum 0.50 s");
        let long = Some("duration 12.5 s is above the maximum 10.0 s");
        let slow = Some("23.98 fps is below the minimum 24");
        let fast = Some("60.50 fps is above the maximum 60");

        // Brightness (pictures and videos) and entropy (pictures), with the default limits
        // and with others from the config.
        let lit = |b| Some(measured(|m| m.brightness = Some(b)));
        let entropy = |e| Some(measured(|m| m.entropy = Some(e)));
        let d = &Config::default();
        let dim = &quality(QualityRules {
            dark_below: 10.0,
            bright_above: 200.0,
            ..QualityRules::default()
        });
        let strict = &quality(QualityRules {
            low_entropy_below: 4.0,
            ..QualityRules::default()
        });
        let (dark, bright, flat) = ("dark", "overexposed", "low_information");
        let pic = || image(64, 64);
        let dark_24 = Some("mean brightness 24 is below 25 (dark)");
        let dark_10 = Some("mean brightness 10 is below 25 (dark)");
        let bright_236 = Some("mean brightness 236 is above 235 (overexposed)");
        let bright_201 = Some("mean brightness 201 is above 200 (overexposed)");
        let flat_1 = Some("luma entropy 1.50 bits is below 2.0 (nearly uniform picture)");
        let flat_3 = Some("luma entropy 3.00 bits is below 4.0 (nearly uniform picture)");
        let flat_video = Some("mean luma entropy 0.50 bits is below 2.0 (nearly uniform video)");

        expect(
            FlagSource::Rule,
            &[
                (sizes, small, video(640, 360), None, None),
                (sizes, large, video(1920, 1080), None, None),
                (sizes, small, video(639, 360), None, narrow),
                (sizes, small, image(640, 359), None, low),
                (sizes, small, video(320, 200), None, both),
                (aspects, aspect, turned, None, None),
                (sizes, large, video(1921, 1080), None, wide),
                (sizes, large, image(1920, 1081), None, tall),
                (aspects, aspect, exif(6), None, None),
                (aspects, aspect, video(1920, 1080), None, None),
                (aspects, aspect, exif(3), None, portrait),
                (aspects, aspect, video(1500, 1000), None, None),
                (aspects, aspect, video(2000, 1000), None, None),
                (aspects, aspect, video(1080, 1920), None, portrait),
                (min_aspect, aspect, video(900, 1000), None, open),
                (aspects, aspect, video(2100, 1000), None, panorama),
                (times, "duration_below_min", clip(0.4, 25.0), None, short),
                (times, "duration_above_max", clip(12.5, 25.0), None, long),
                (times, "fps_below_min", clip(1.0, 23.976), None, slow),
                (times, "fps_above_max", clip(1.0, 60.5), None, fast),
                (d, dark, pic(), lit(24.4), dark_24),
                (d, dark, video(64, 64), lit(10.0), dark_10),
                (d, dark, pic(), lit(25.0), None),
                (d, bright, pic(), lit(235.0), None),
                (d, bright, pic(), lit(235.6), bright_236),
                (dim, dark, pic(), lit(20.0), None),
                (dim, bright, pic(), lit(201.0), bright_201),
                (d, flat, pic(), entropy(1.5), flat_1),
                (d, flat, pic(), entropy(2.0), None),
                (d, flat, video(64, 64), entropy(0.5), flat_video),
                (d, flat, video(64, 64), entropy(2.0), None),
                (strict, flat, pic(), entropy(3.0), flat_3),
            ],
        );
        // No limits set, nothing checked; fine files get nothing.
        assert!(item_flags(&video(1, 1), None, &Config::default()).is_empty());
        for fine in [
            clip(0.5, 24.0),
            clip(10.0, 60.0),
            // A picture with a duration and a rate (animated) is held to no video limit.
            timed(MediaKind::Image, 0.1, 100.0),
        ] {
            assert!(item_flags(&fine, None, times).is_empty(), "{fine:?}");
        }
    }

    #[test]
    fn black_and_frozen_shares_fire_from_their_limits_on_videos() {
        let black = |share| Some(measured(|m| m.black_share = Some(share)));
        let frozen = |share, frames| {
            Some(measured(|m| {
                m.frozen_share = Some(share);
                m.decoded_frames = frames;
            }))
        };
        let d = &Config::default();
        let lenient = &quality(QualityRules {
            black_share_above: 0.9,
            frozen_share_above: 0.9,
            ..QualityRules::default()
        });
        let half_black = Some("50% of frames are black");
        let mostly_frozen =
            Some("60% of frames repeat the previous frame exactly (frozen picture)");
        let clip = video(64, 64);
        expect(
            FlagSource::Decode,
            &[
                (d, "black", clip.clone(), black(0.5), half_black),
                (d, "black", clip.clone(), black(0.49), None),
                (d, "black", image(64, 64), black(1.0), None),
                (lenient, "black", clip.clone(), black(0.8), None),
                (d, "frozen", clip.clone(), frozen(0.6, 11), mostly_frozen),
                (d, "frozen", clip.clone(), frozen(0.49, 100), None),
                // Too few frames to tell a frozen picture from a short still shot.
                (d, "frozen", clip.clone(), frozen(1.0, 10), None),
                (lenient, "frozen", clip, frozen(0.8, 100), None),
            ],
        );
    }

    #[test]
    fn decode_errors_are_errors_from_their_share_and_warnings_below_it() {
        let errors = |n| {
            measured(|m| {
                m.decoded_frames = 1000;
                m.decode_errors = n;
                m.first_error = Some("Invalid NAL unit size".into());
            })
        };
        let found = |file: &Item, m: &Metrics, config: &Config| {
            flag(file, Some(m), config, "decode_errors").map(|f| {
                assert_eq!(f.source, FlagSource::Decode);
                (f.severity, f.reason)
            })
        };
        let defaults = Config::default();
        let reason = |n| format!("{n} decode errors in 1000 frames; first: Invalid NAL unit size");
        assert_eq!(
            found(&video(64, 64), &errors(10), &defaults),
            Some((Severity::Error, reason(10)))
        );
        assert_eq!(
            found(&video(64, 64), &errors(9), &defaults),
            Some((Severity::Warning, reason(9)))
        );
        assert_eq!(found(&video(64, 64), &errors(0), &defaults), None);
        let strict = quality(QualityRules {
            decode_error_share: 0.005,
            ..QualityRules::default()
        });
        assert_eq!(
            found(&video(64, 64), &errors(9), &strict),
            Some((Severity::Error, reason(9)))
        );
        // A picture has one frame: any error is an error.
        let one = measured(|m| {
            m.decoded_frames = 1;
            m.decode_errors = 1;
        });
        assert_eq!(
            found(&image(64, 64), &one, &defaults),
            Some((Severity::Error, "the image decodes with errors".into()))
        );
    }

    #[test]
    fn files_that_did_not_probe_get_their_probe_error_and_no_rules() {
        let config = rules(Rules {
            min_width: Some(640),
            ..Rules::default()
        });
        let flags = |status, error: Option<&str>| -> Vec<(String, Severity, String)> {
            let file = with(video(16, 16), |i| {
                i.status = status;
                i.error = error.map(str::to_string);
            });
            item_flags(&file, None, &config)
                .into_iter()
                .map(|f| (f.code, f.severity, f.reason))
                .collect()
        };
        let one = |code: &str, severity, reason: &str| vec![(code.into(), severity, reason.into())];
        assert_eq!(
            flags(ItemStatus::Error, Some("cannot open: moov atom not found")),
            one(
                "unreadable",
                Severity::Error,
                "cannot open: moov atom not found"
            )
        );
        assert_eq!(
            flags(ItemStatus::Unsupported, None),
            one("unsupported", Severity::Warning, "no reason recorded")
        );
        assert!(flags(ItemStatus::Missing, Some("gone")).is_empty());
    }
}

mod model {
    use framecull::model::{
        ClipOrigin, Decision, Edit, FlagSource, FrameRecord, FrameTable, FrameTimeline, ItemStatus,
        MediaKind, Ratio, Severity, human_bytes,
    };

    #[test]
    fn ratios_round_trip_through_text_and_refuse_zero_terms() {
        for (num, den) in [(1, 12800), (30000, 1001), (-1, 2), (1, 1)] {
            let r = Ratio::new(num, den).unwrap();
            assert_eq!(r.to_text(), format!("{num}/{den}"));
            assert_eq!(Ratio::parse(&r.to_text()), Some(r));
        }
        assert_eq!(Ratio::parse(" 30000 / 1001 "), Ratio::new(30000, 1001));
        assert_eq!(Ratio::new(1, 4).unwrap().as_f64(), 0.25);
        assert_eq!(Ratio::new(1, 0), None);
        assert_eq!(Ratio::new(0, 1), None);
        for bad in [
            "1/0", "25/0", "0/1", "", "25", "1/", "/2", "a/b", "1.5/2", "1/2/3", "1:2",
        ] {
            assert_eq!(Ratio::parse(bad), None, "{bad:?}");
        }
    }

    /// Frames start at 0, 0.04, 0.08, 0.12 and 0.2 s; the last one lasts 0.08 s.
    fn timeline() -> FrameTimeline {
        FrameTimeline {
            pts: vec![0, 512, 1024, 1536, 2560],
            time_base: Ratio::new(1, 12800).unwrap(),
        }
    }

    #[test]
    fn frame_indices_come_from_frames_or_seconds() {
        let t = timeline();
        let start = |s: &str| t.index_at(s, false).map_err(|e| e.to_string());
        let end = |s: &str| t.index_at(s, true).map_err(|e| e.to_string());
        assert_eq!(start("f0"), Ok(0));
        assert_eq!(start("f3"), Ok(3));
        assert_eq!(start("f:3"), Ok(3));
        // The end of the last frame is a valid (exclusive) end.
        assert_eq!(end("f5"), Ok(5));
        assert_eq!(
            end("f6"),
            Err("frame 6 is past the last frame (5)".to_string())
        );
        assert_eq!(
            start("f6"),
            Err("frame 6 is past the last frame (5)".to_string())
        );
        assert_eq!(
            start("fx"),
            Err(r#""fx" is not a frame like f120"#.to_string())
        );
        assert!(start("f-1").is_err());
        assert_eq!(
            start("abc"),
            Err(r#""abc" is neither seconds nor a frame like f120"#.to_string())
        );
        // Seconds: a start is the frame shown then, an end the first frame at or after it.
        assert_eq!((start("0.05"), end("0.05")), (Ok(1), Ok(2)));
        assert_eq!((start("0.08"), end("0.08")), (Ok(2), Ok(2)));
        assert_eq!((start("0.19"), end("0.19")), (Ok(3), Ok(4)));
        assert_eq!((start("0"), start("-1")), (Ok(0), Ok(0)));
        assert_eq!(end("0.2"), Ok(4));
        assert_eq!(end("100"), Ok(5));

        assert_eq!(t.pts_at(5), 2560 + 1024);
        let clip = t.clip(7, 1, 5, Some("run".into()), ClipOrigin::Cuts);
        assert_eq!((clip.item_id, clip.start_pts, clip.end_pts), (7, 512, 3584));
        assert_eq!((clip.start_frame, clip.end_frame), (Some(1), Some(5)));
        assert!(
            (clip.start_secs - 0.04).abs() < 1e-12,
            "{}",
            clip.start_secs
        );
        assert!((clip.end_secs - 0.28).abs() < 1e-12, "{}", clip.end_secs);
        assert_eq!(
            (clip.origin, clip.decision),
            (ClipOrigin::Cuts, Decision::Unreviewed)
        );
    }

    #[test]
    fn a_start_past_the_end_in_seconds_is_an_error() {
        let t = timeline();
        // The last frame ends at 0.28 s.
        assert!(t.index_at("0.3", false).is_err());
        assert!(t.index_at("100", false).is_err());
    }

    /// `as_str`, `parse` and serde agree on each value's name, and nothing else parses.
    fn names_agree<T>(
        named: &[(T, &str)],
        as_str: fn(T) -> &'static str,
        parse: fn(&str) -> Option<T>,
    ) where
        T: Copy + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
    {
        for &(v, name) in named {
            assert_eq!(as_str(v), name);
            assert_eq!(parse(name), Some(v));
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{name}\""));
            assert_eq!(
                serde_json::from_str::<T>(&format!("\"{name}\"")).unwrap(),
                v
            );
            let shouted = name.to_uppercase();
            assert_eq!(parse(&shouted), None, "{shouted}");
            assert!(serde_json::from_str::<T>(&format!("\"{shouted}\"")).is_err());
        }
        assert_eq!(parse(""), None);
    }

    /// `names!(Type: Variant = "name", ...)`: every variant of `Type` with its name.
    macro_rules! names {
        ($t:ident: $($v:ident = $name:literal),+) => {
            names_agree(&[$(($t::$v, $name)),+], $t::as_str, $t::parse)
        };
    }

    #[test]
    fn names_round_trip() {
        names!(Decision: Unreviewed = "unreviewed", Accepted = "accepted", Rejected = "rejected");
        names!(ClipOrigin: Manual = "manual", Cuts = "cuts", Auto = "auto");
        names!(MediaKind: Image = "image", Video = "video", Other = "other");
        names!(ItemStatus: Ok = "ok", Error = "error", Unsupported = "unsupported",
            Missing = "missing");
        names!(Severity: Error = "error", Warning = "warning", Info = "info");
        names!(FlagSource: Probe = "probe", Decode = "decode", Rule = "rule",
            Statistics = "statistics", Duplicates = "duplicates");
        assert_eq!(ClipOrigin::Cuts.to_string(), "cuts");
        assert_eq!(
            (ClipOrigin::default(), Decision::default()),
            (ClipOrigin::Manual, Decision::Unreviewed)
        );
    }

    #[test]
    fn an_edit_undone_twice_is_the_edit() {
        let clip = timeline().clip(1, 0, 2, None, ClipOrigin::Manual);
        let edits = [
            Edit::Decision {
                item: 1,
                before: Decision::Unreviewed,
                after: Decision::Rejected,
            },
            Edit::Tags {
                item: 1,
                before: vec![],
                after: vec!["night".into()],
            },
            Edit::Note {
                item: 1,
                before: Some("a".into()),
                after: None,
            },
            Edit::AddClip { clip: clip.clone() },
        ];
        for e in &edits {
            assert_ne!(&e.inverse(), e);
            assert_eq!(&e.inverse().inverse(), e);
        }
        assert_eq!(edits[3].inverse(), Edit::RemoveClip { clip: clip.clone() });
        assert_eq!(
            serde_json::to_value(&edits[0]).unwrap(),
            serde_json::json!({"edit": "decision", "item": 1, "before": "unreviewed", "after": "rejected"})
        );
    }

    #[test]
    fn frame_tables_round_trip_through_bytes() {
        let table = FrameTable {
            frames: vec![
                FrameRecord {
                    pts: Some(0),
                    clean_key: true,
                    damaged: false,
                    hash: u64::MAX,
                },
                FrameRecord {
                    pts: None,
                    clean_key: false,
                    damaged: true,
                    hash: 1,
                },
                FrameRecord {
                    pts: Some(-512),
                    clean_key: true,
                    damaged: false,
                    hash: 0,
                },
            ],
        };
        let bytes = table.to_bytes();
        assert_eq!(FrameTable::from_bytes(&bytes), Some(table.clone()));
        assert_eq!(FrameTable::from_bytes(&bytes[1..]), None);
        assert_eq!(FrameTable::from_bytes(&[]), Some(FrameTable::default()));
        let reference = table.seek_reference("v.mp4", "fp");
        assert_eq!(reference.frames, 3);
        assert_eq!(reference.keyframes, [(0, u64::MAX), (2, 0)]);
    }

    #[test]
    fn sizes_for_people() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(1536 * 1024), "1.5 MiB");
        // TiB is the largest unit.
        assert_eq!(human_bytes(u64::MAX), "16777216.0 TiB");
    }
}
