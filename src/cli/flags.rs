//! `framecull flags`: flags grouped by code, each with its reason.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Outcome, ProjectArg};
use crate::analysis::rules;
use crate::catalog::Catalog;
use crate::model::{Severity, count};
use crate::scan::derive::{self, DerivedSummary};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    project: ProjectArg,
    /// Recompute flags and duplicate groups from the stored metrics and the current
    /// framecull.toml first (no rescan).
    #[arg(long)]
    recompute: bool,
    /// Only this flag code.
    #[arg(long)]
    code: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct CodeGroup {
    code: String,
    severity: Severity,
    count: usize,
    items: Vec<FlaggedItem>,
}

#[derive(Serialize)]
struct FlaggedItem {
    path: String,
    reason: String,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let mut catalog = args.project.open()?;
    if args.recompute {
        recompute_and_report(&mut catalog)?;
    }
    let items = catalog.items()?;
    let flags = catalog.all_flags()?;
    let mut groups: BTreeMap<(Severity, String), Vec<FlaggedItem>> = BTreeMap::new();
    for item in &items {
        for f in flags.get(&item.id).into_iter().flatten() {
            if args.code.as_ref().is_some_and(|c| *c != f.code) {
                continue;
            }
            groups
                .entry((f.severity, f.code.clone()))
                .or_default()
                .push(FlaggedItem {
                    path: item.path.clone(),
                    reason: f.reason.clone(),
                });
        }
    }
    let groups: Vec<CodeGroup> = groups
        .into_iter()
        .map(|((severity, code), items)| CodeGroup {
            code,
            severity,
            count: items.len(),
            items,
        })
        .collect();
    let text = if args.json {
        serde_json::to_string_pretty(&groups)?
    } else {
        let mut s = args
            .code
            .as_deref()
            .map(|code| explain(code, &args.project))
            .transpose()?
            .unwrap_or_default();
        if groups.is_empty() {
            s.push_str("no flags");
        }
        for g in &groups {
            s.push_str(&format!(
                "{} ({}): {}\n",
                g.code,
                g.severity.as_str(),
                count(g.count as u64, "file")
            ));
            for i in &g.items {
                s.push_str(&format!("  {}: {}\n", i.path, i.reason));
            }
        }
        s
    };
    super::write_stdout(&text)?;
    Ok(Outcome::Clean)
}

/// What flag `code` means and the settings that decide it, with their values in the
/// project's `framecull.toml`.
fn explain(code: &str, project: &ProjectArg) -> anyhow::Result<String> {
    let mut s = match rules::describe(code) {
        Some(text) => format!("{code}: {text}\n"),
        None => format!("{code}: not a flag this version of framecull sets\n"),
    };
    let settings = rules::settings_of(code);
    if !settings.is_empty() {
        let config = project.locate()?.config()?;
        for setting in settings {
            s.push_str(&format!("  setting: {}\n", setting.describe(&config)));
        }
    }
    Ok(s)
}

/// Recompute duplicates and flags; report counts on stderr. Problems when any item carries
/// an error-severity flag.
pub fn recompute_and_report(catalog: &mut Catalog) -> anyhow::Result<Outcome> {
    let summary = derive::recompute_for_project(catalog)?;
    report_derived(catalog, &summary)
}

/// Report derived counts on stderr. Problems when any item carries an error-severity flag.
pub fn report_derived(catalog: &Catalog, summary: &DerivedSummary) -> anyhow::Result<Outcome> {
    let errors = files_with_error_flags(catalog)?;
    eprintln!(
        "{} on {} ({errors} with errors), {}; see `framecull flags`",
        count(summary.flags as u64, "flag"),
        count(summary.flagged_items as u64, "file"),
        count(summary.dup_groups as u64, "duplicate group")
    );
    Ok(outcome_of(errors))
}

/// Problems when any item carries an error-severity flag (the flags stored, not derived now).
pub fn error_flag_outcome(catalog: &Catalog) -> anyhow::Result<Outcome> {
    Ok(outcome_of(files_with_error_flags(catalog)?))
}

fn files_with_error_flags(catalog: &Catalog) -> anyhow::Result<usize> {
    Ok(catalog
        .all_flags()?
        .values()
        .filter(|fs| fs.iter().any(|f| f.severity == Severity::Error))
        .count())
}

fn outcome_of(files_with_errors: usize) -> Outcome {
    if files_with_errors > 0 {
        Outcome::Problems
    } else {
        Outcome::Clean
    }
}
