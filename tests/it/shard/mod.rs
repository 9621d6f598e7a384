//! Sharded scans merged into one catalog give what one machine's scan gives: the same rows,
//! flags and duplicate groups, whatever the order shards are merged in, how often, after a
//! shard was killed or rescanned; a finished shard rerun does nothing; bad shard arguments
//! and shards that do not belong together are fatal (exit 2), a busy catalog is transient (3).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

mod equivalence;
mod interruptions;
mod refusals;
mod review_work;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Run framecull; the output, after checking the exit status is one of `codes`.
fn run_ok(args: &[&str], codes: &[i32]) -> std::process::Output {
    let out = common::run(args);
    let code = out.status.code().unwrap_or(-1);
    assert!(
        codes.contains(&code),
        "framecull {args:?} exited {code}: {}",
        common::stderr(&out)
    );
    out
}

fn merge(shards: &[&PathBuf], out: &Path) -> std::process::Output {
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(|p| s(p)));
    args.extend(["--project", s(out)]);
    run_ok(&args, &[0, 1])
}

/// What a project shows: `list --all --format jsonl` rows by path, `flags --json`, and the
/// duplicate groups as sets of paths.
#[derive(Debug, PartialEq)]
struct View {
    rows: BTreeMap<String, Value>,
    flags: Value,
    groups: Vec<Vec<String>>,
}

fn view(project: &Path) -> View {
    let out = run_ok(
        &[
            "list",
            "--all",
            "--project",
            s(project),
            "--format",
            "jsonl",
        ],
        &[0],
    );
    let rows: BTreeMap<String, Value> = common::stdout(&out)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["path"].as_str().unwrap().to_string(), v)
        })
        .collect();
    let flags = serde_json::from_str(&common::stdout(&run_ok(
        &["flags", "--json", "--project", s(project)],
        &[0],
    )))
    .unwrap();
    let mut by_group: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (path, row) in &rows {
        if let Some(g) = row["dup_group"].as_i64() {
            by_group.entry(g).or_default().push(path.clone());
        }
    }
    let mut groups: Vec<Vec<String>> = by_group.into_values().collect();
    groups.sort();
    View {
        rows,
        flags,
        groups,
    }
}

/// The view with duplicate group ids (item ids, which differ between catalogs) replaced by
/// the group's first path.
fn without_ids(mut v: View) -> View {
    common::groups_by_first_path(&mut v.rows);
    v
}

fn assert_same(merged: View, single: View) {
    let (merged, single) = (without_ids(merged), without_ids(single));
    assert_eq!(
        merged.rows.keys().collect::<Vec<_>>(),
        single.rows.keys().collect::<Vec<_>>()
    );
    for (path, row) in &single.rows {
        assert_eq!(&merged.rows[path], row, "row of {path}");
    }
    assert_eq!(merged.flags, single.flags);
    assert_eq!(merged.groups, single.groups);
}

/// Every index of a project's catalog, with its definition.
fn indexes(project: &Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(project.join("catalog.db")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE type = 'index' ORDER BY name",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}
