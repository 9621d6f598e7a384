//! The catalog: migrations, projects, undo and redo, missing files and the state fingerprint.

use std::path::Path;

use framecull::catalog::{Catalog, CatalogError, Project};
use framecull::model::{ClipOrigin, Decision, Edit, ItemId, ItemStatus, MediaKind};
use framecull::scan::pipeline::{Dataset, IngestError};

use super::{catalog_with, clip, fake, id_of, item_of, review_state};

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
