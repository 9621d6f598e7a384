//! Versions: every field's round trip, the exact diff, splits that hold, the settings and filter.

use crate::common;

use framecull::analysis::flags::Config;
use framecull::manifest::{self, ExportOptions, Format};
use framecull::model::{Clip, Decision, DupInfo, Edit, MediaKind, Ratio};

use super::{add_items, options, project_with_items};

#[test]
fn round_trip_versions_and_exact_diff() {
    let (proj, mut catalog) = project_with_items(50);
    let items = catalog.items().unwrap();
    let video = items.iter().find(|i| i.kind == MediaKind::Video).unwrap();
    // Two clips on one video; tags and a label survive the trip.
    for (s, e) in [(0i64, 12800i64), (25600, 38400)] {
        catalog
            .apply(vec![Edit::AddClip {
                clip: Clip {
                    id: 0,
                    item_id: video.id,
                    start_pts: s,
                    end_pts: e,
                    time_base: Ratio::new(1, 12800).unwrap(),
                    start_secs: s as f64 / 12800.0,
                    end_secs: e as f64 / 12800.0,
                    start_frame: Some(s / 512),
                    end_frame: Some(e / 512),
                    label: Some("walking".into()),
                    origin: framecull::model::ClipOrigin::Manual,
                    decision: Decision::Unreviewed,
                },
            }])
            .unwrap();
    }
    catalog
        .set_tags(video.id, vec!["night".into(), "rain".into()])
        .unwrap();

    let v1 = manifest::export(&catalog, &options("train")).unwrap();
    assert_eq!((v1.version, v1.parent), (1, None));
    // 45 images + 4 full-length videos + 2 clips of the fifth.
    assert_eq!(v1.counts.rows, 51);
    let expected = manifest::select_rows(&catalog, &options("train"))
        .unwrap()
        .0;
    let parquet = manifest::read_version(proj.path(), "train", 1).unwrap();
    assert_eq!(parquet, expected, "every field survives Parquet");
    let clip_rows: Vec<_> = parquet.iter().filter(|r| r.path == video.path).collect();
    assert_eq!(clip_rows.len(), 2);
    assert_eq!(clip_rows[0].tags, vec!["night", "rain"]);
    assert_eq!(clip_rows[0].label.as_deref(), Some("walking"));
    assert_eq!(
        clip_rows[0].split, clip_rows[1].split,
        "clips of one video share a split"
    );
    let dir = manifest::manifest_dir(proj.path(), "train");
    let csv = std::fs::read_to_string(dir.join("v0001.csv")).unwrap();
    assert_eq!(csv.lines().count(), 52);
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .starts_with("clip_id,path,file_fingerprint,")
    );

    // Unchanged: same rows hash; then reject one image: the diff says exactly that.
    let v2 = manifest::export(&catalog, &options("train")).unwrap();
    assert_eq!((v2.version, v2.parent), (2, Some(1)));
    assert_eq!(v2.rows_hash, v1.rows_hash);
    let image = items.iter().find(|i| i.kind == MediaKind::Image).unwrap();
    catalog
        .set_decisions(&[image.id], Decision::Rejected)
        .unwrap();
    let v3 = manifest::export(&catalog, &options("train")).unwrap();
    assert_eq!(v3.parent, Some(2));
    assert_ne!(v3.rows_hash, v2.rows_hash);
    let d = manifest::diff(
        &manifest::read_version(proj.path(), "train", 2).unwrap(),
        &manifest::read_version(proj.path(), "train", 3).unwrap(),
    );
    let removed_path = parquet
        .iter()
        .find(|r| r.clip_id == d.removed[0])
        .unwrap()
        .path
        .clone();
    assert_eq!(
        (
            d.added.len(),
            d.removed.len(),
            d.changed.len(),
            d.split_moves.len()
        ),
        (0, 1, 0, 0)
    );
    assert_eq!(removed_path, image.path);
    // The CLI shows the same.
    let out = common::run(&[
        "diff",
        "--project",
        proj.path().to_str().unwrap(),
        "train",
        "v2",
        "v3",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let j: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(j["removed"].as_array().unwrap().len(), 1);
    assert!(j["added"].as_array().unwrap().is_empty());
    // Each clip with its file and range, as the version that held it says.
    let removed = &j["removed"][0];
    let row = parquet.iter().find(|r| r.clip_id == d.removed[0]).unwrap();
    assert_eq!(removed["clip_id"], row.clip_id.as_str());
    assert_eq!(removed["path"], image.path.as_str());
    assert_eq!(removed["start_secs"].as_f64(), Some(row.start_secs));
    assert_eq!(removed["end_secs"].as_f64(), Some(row.end_secs));
    assert_eq!(removed["start_frame"].as_i64(), row.start_frame);
    assert_eq!(removed["end_frame"].as_i64(), row.end_frame);
}

#[test]
fn splits_never_leak_or_drift_and_keep_their_shares() {
    let (proj, mut catalog) = project_with_items(10_000);
    // Near-duplicate groups of three consecutive items.
    let items = catalog.items().unwrap();
    let mut dups = std::collections::HashMap::new();
    for chunk in items.chunks(3).take(300) {
        for it in chunk {
            dups.insert(
                it.id,
                DupInfo {
                    group: chunk[0].id,
                    exact: false,
                    like: chunk[0].id,
                    exact_group: None,
                },
            );
        }
    }
    catalog
        .replace_derived(&dups, &[], &Config::default())
        .unwrap();
    let opts = ExportOptions {
        formats: vec![Format::Parquet],
        ..options("big")
    };
    manifest::export(&catalog, &opts).unwrap();
    let v1 = manifest::read_version(proj.path(), "big", 1).unwrap();
    assert_eq!(v1.len(), 10_000);
    for (name, share) in [("train", 0.8), ("val", 0.1), ("test", 0.1)] {
        let n = v1
            .iter()
            .filter(|r| r.split.as_deref() == Some(name))
            .count();
        assert!((n as f64 / 10_000.0 - share).abs() <= 0.02, "{name}: {n}");
    }
    let mut by_group: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for r in &v1 {
        let s = r.split.as_deref().unwrap();
        assert_eq!(
            *by_group.entry(&r.group_key).or_insert(s),
            s,
            "group {} spans splits",
            r.group_key
        );
    }

    // 10% more data: no existing clip moves.
    add_items(&mut catalog, 10_000, 1_000);
    catalog
        .replace_derived(&dups, &[], &Config::default())
        .unwrap();
    manifest::export(&catalog, &opts).unwrap();
    let v2 = manifest::read_version(proj.path(), "big", 2).unwrap();
    assert_eq!(v2.len(), 11_000);
    let d = manifest::diff(&v1, &v2);
    assert_eq!(
        (d.added.len(), d.removed.len(), d.split_moves.len()),
        (1_000, 0, 0)
    );
}

/// A manifest records the settings its flags were derived with, not whatever
/// `framecull.toml` says at export time (an edit not yet applied with `flags --recompute`).
#[test]
fn a_version_records_the_settings_that_made_its_flags() {
    use framecull::scan::derive::recompute_for_project;
    let (proj, mut catalog) = project_with_items(20);
    let settings = proj.path().join("framecull.toml");
    std::fs::write(&settings, "[rules]\nmin_width = 4096\n").unwrap();
    let derived = recompute_for_project(&mut catalog).unwrap();
    assert!(derived.flags > 0, "every item is narrower than 4096 px");
    std::fs::write(&settings, "[rules]\nmin_width = 16\n").unwrap();
    let meta = manifest::export(&catalog, &options("settings")).unwrap();
    assert_eq!(meta.config.rules.min_width, Some(4096));
    // Once applied, the next version records the new settings.
    recompute_for_project(&mut catalog).unwrap();
    let meta = manifest::export(&catalog, &options("settings")).unwrap();
    assert_eq!(meta.config.rules.min_width, Some(16));
}

/// `--where`: only the files a filter matches go in, the rest are counted as left out, and the
/// version records the filter's text.
#[test]
fn an_export_with_a_filter_holds_only_the_files_it_matches() {
    use framecull::analysis::filter::Filter;
    let (proj, mut catalog) = project_with_items(200);
    let accepted = catalog
        .items()
        .unwrap()
        .iter()
        .filter(|i| i.path.starts_with("d00"))
        .map(|i| i.id)
        .collect::<Vec<_>>();
    catalog
        .set_decisions(&accepted, Decision::Accepted)
        .unwrap();
    let filter = Filter::parse("fps>=25 and decision:accepted").unwrap();
    let opts = ExportOptions {
        filter: Some(filter.clone()),
        ..options("filtered")
    };
    let meta = manifest::export(&catalog, &opts).unwrap();
    let rows = manifest::read_version(proj.path(), "filtered", 1).unwrap();
    let items = catalog.items().unwrap();
    let expected: Vec<&str> = items
        .iter()
        .filter(|i| i.path.starts_with("d00") && i.kind == MediaKind::Video)
        .map(|i| i.path.as_str())
        .collect();
    assert!(!expected.is_empty());
    let mut got: Vec<&str> = rows.iter().map(|r| r.path.as_str()).collect();
    got.sort();
    assert_eq!(got, expected);
    assert!(rows.iter().all(|r| r.kind == MediaKind::Video));
    assert_eq!(
        meta.counts.excluded["not matching the filter"],
        (items.len() - expected.len()) as u64
    );
    assert_eq!(meta.filter.as_deref(), Some(filter.to_text().as_str()));
    assert_eq!(
        Filter::parse(meta.filter.as_deref().unwrap()).unwrap(),
        filter
    );
}
