//! `framecull manifests` (names and versions) and `framecull diff NAME A B`.

use super::{Outcome, ProjectArg};
use crate::manifest;

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    project: ProjectArg,
    #[arg(long)]
    json: bool,
}

pub fn list(args: ListArgs) -> anyhow::Result<Outcome> {
    let catalog = args.project.open()?;
    let project = catalog.project_dir();
    let mut all = Vec::new();
    for name in manifest::names(project) {
        all.extend(manifest::versions(project, &name)?);
    }
    if args.json {
        super::write_stdout(&serde_json::to_string_pretty(&all)?)?;
        return Ok(Outcome::Clean);
    }
    let mut text = String::new();
    for m in &all {
        text.push_str(&format!(
            "{} v{:04}  parent {}  {}  {:?}  rows {}  files {}\n",
            m.name,
            m.version,
            m.parent.map_or("-".into(), |p| format!("v{p:04}")),
            crate::model::count(m.counts.rows, "clip"),
            m.counts.by_split,
            &m.rows_hash[..12],
            m.files.values().cloned().collect::<Vec<_>>().join(" ")
        ));
    }
    if text.is_empty() {
        text = "no manifests yet (framecull export --name NAME)".into();
    }
    super::write_stdout(&text)?;
    Ok(Outcome::Clean)
}

#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    #[command(flatten)]
    project: ProjectArg,
    name: String,
    /// Older version (number, `v0001` or `1`).
    a: String,
    /// Newer version.
    b: String,
    #[arg(long)]
    json: bool,
}

fn version_number(v: &str) -> anyhow::Result<u32> {
    v.trim_start_matches('v')
        .parse()
        .map_err(|_| anyhow::anyhow!("{v:?} is not a version (use 2 or v0002)"))
}

pub fn diff(args: DiffArgs) -> anyhow::Result<Outcome> {
    let catalog = args.project.open()?;
    let project = catalog.project_dir();
    let a = manifest::read_version(project, &args.name, version_number(&args.a)?)?;
    let b = manifest::read_version(project, &args.name, version_number(&args.b)?)?;
    let d = manifest::diff_report(&a, &b);
    if args.json {
        super::write_stdout(&serde_json::to_string_pretty(&d)?)?;
        return Ok(Outcome::Clean);
    }
    let clip = |c: &manifest::ClipRef| {
        format!(
            "{} {} [{:.2}-{:.2} s]",
            c.clip_id, c.path, c.start_secs, c.end_secs
        )
    };
    let mut s = format!(
        "{} {} -> {}: {} added, {} removed, {} changed, {} moved split\n",
        args.name,
        args.a,
        args.b,
        d.added.len(),
        d.removed.len(),
        d.changed.len(),
        d.split_moves.len()
    );
    for c in &d.added {
        s.push_str(&format!("+ {}\n", clip(c)));
    }
    for c in &d.removed {
        s.push_str(&format!("- {}\n", clip(c)));
    }
    for c in &d.changed {
        s.push_str(&format!("~ {} ({})\n", clip(&c.clip), c.fields.join(", ")));
    }
    for m in &d.split_moves {
        s.push_str(&format!(
            "> {}: {} -> {}\n",
            clip(&m.clip),
            m.from.as_deref().unwrap_or("-"),
            m.to.as_deref().unwrap_or("-")
        ));
    }
    super::write_stdout(&s)?;
    Ok(Outcome::Clean)
}
