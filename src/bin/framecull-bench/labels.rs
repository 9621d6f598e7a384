//! `labels`: import N label rows into a generated catalog of N items (`labels import`'s
//! library call: read, match, one journaled operation), by full paths and by file stems, and
//! export them back.

use std::time::Instant;

use serde::Serialize;

use framecull::scan::labels::{ImportOptions, LabelSource, export, import};

use crate::generated::catalog as generated_catalog;
use crate::util::{median, print};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long, default_value_t = 100_000)]
    items: usize,
    /// Distinct labels (Kinetics has 400 to 700 classes).
    #[arg(long, default_value_t = 400)]
    classes: usize,
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct LabelsBench {
    items: usize,
    rows: usize,
    classes: usize,
    by_path_secs: Vec<f64>,
    by_path_median_secs: f64,
    by_stem_secs: Vec<f64>,
    by_stem_median_secs: f64,
    export_median_secs: f64,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let r = bench(args.items.max(1), args.classes.max(1), args.repeat.max(1))?;
    print(&r, args.json, || {
        format!(
            "import of {} label rows into {} items: by path median {:.2} s {:?}; by file stem \
             median {:.2} s {:?}; export {:.2} s",
            r.rows,
            r.items,
            r.by_path_median_secs,
            r.by_path_secs,
            r.by_stem_median_secs,
            r.by_stem_secs,
            r.export_median_secs
        )
    })
}

fn bench(n: usize, classes: usize, repeat: usize) -> anyhow::Result<LabelsBench> {
    let dir = std::env::temp_dir().join(format!("framecull-bench-labels-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let paths: Vec<String> = (0..n).map(|i| crate::generated::item(i).path).collect();
    let label = |i: usize| format!("class {:03}", i * 7919 % classes);
    let mut by_path = String::from("path,label\n");
    let mut by_stem = String::from("path,label\n");
    for (i, p) in paths.iter().enumerate() {
        by_path.push_str(&format!("{p},{}\n", label(i)));
        let stem = p.rsplit('/').next().unwrap_or(p);
        let stem = stem.rsplit_once('.').map_or(stem, |s| s.0);
        by_stem.push_str(&format!("{stem},{}\n", label(i)));
    }
    let files = [dir.join("by_path.csv"), dir.join("by_stem.csv")];
    std::fs::write(&files[0], by_path)?;
    std::fs::write(&files[1], by_stem)?;
    let mut secs = [Vec::new(), Vec::new()];
    let mut export_secs = Vec::new();
    for k in 0..repeat {
        for (which, file) in files.iter().enumerate() {
            let project = dir.join(format!("p{k}-{which}"));
            let mut catalog = generated_catalog(&project, n)?;
            let t = Instant::now();
            let report = import(
                &mut catalog,
                LabelSource::File(file),
                &ImportOptions::default(),
                &mut |_| Err(framecull::scan::labels::TimelineError::NoRoot),
            )?;
            secs[which].push(t.elapsed().as_secs_f64());
            anyhow::ensure!(
                report.files_labelled == n as u64 && !report.has_problems(),
                "the import labelled {} of {n} files",
                report.files_labelled
            );
            if which == 0 {
                let t = Instant::now();
                let mut out = Vec::new();
                let rows = export(&catalog, &mut out)?;
                export_secs.push(t.elapsed().as_secs_f64());
                anyhow::ensure!(rows == n as u64, "exported {rows} rows of {n}");
            }
            drop(catalog);
            let _ = std::fs::remove_dir_all(&project);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let [by_path_secs, by_stem_secs] = secs;
    Ok(LabelsBench {
        items: n,
        rows: n,
        classes,
        by_path_median_secs: median(by_path_secs.clone()),
        by_path_secs,
        by_stem_median_secs: median(by_stem_secs.clone()),
        by_stem_secs,
        export_median_secs: median(export_secs),
    })
}
