//! Manifests: split specs and seeds, export names, counts and the reason for each file left out.

use framecull::analysis::flags::Config;
use framecull::catalog::{Catalog, ItemUpdate};
use framecull::manifest::{self, ExportOptions, Format, Include, ManifestError, SplitSpec};
use framecull::model::{Decision, Edit, Flag, FlagSource, ItemStatus, MediaKind, Probe, Severity};

use super::{catalog_with, clip, fake, id_of};

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
    let expected: Vec<(String, f64)> = expected.iter().map(|(n, s)| (n.to_string(), *s)).collect();
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
