//! `framecull dups`: duplicate groups, each with the member "keep the best" would keep, and
//! `--keep-best` to keep it and reject the rest (one operation; `framecull undo` restores).

use std::collections::HashMap;

use super::{Outcome, ProjectArg};
use crate::model::{Item, ItemId, Measure, count, human_bytes};
use crate::scan::curate::{dup_groups, keep_best_edits};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    project: ProjectArg,
    /// Keep the best member of each group (by the project's `[duplicates] keep_best_by`:
    /// resolution, then bit rate, then size by default) and reject the others.
    #[arg(long)]
    keep_best: bool,
    /// Only these groups (the group id `dups` prints); all groups by default.
    #[arg(long, value_name = "ID")]
    group: Vec<ItemId>,
    /// Print the groups as JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let project = args.project.locate()?;
    let mut catalog = project.open()?;
    let order = project.config()?.duplicates.keep_best_by;
    let items = catalog.items()?;
    let mut groups = dup_groups(&items, &catalog.all_dups()?, &order);
    if !args.group.is_empty() {
        groups.retain(|g| args.group.contains(&g.group));
        anyhow::ensure!(
            !groups.is_empty(),
            "no duplicate group with id {:?}; `framecull dups` lists them",
            args.group
        );
    }
    if args.keep_best {
        let only = (!args.group.is_empty()).then_some(args.group.as_slice());
        let edits = keep_best_edits(&catalog, &order, only)?;
        if edits.is_empty() {
            eprintln!("nothing to reject: every other member is rejected already");
        } else {
            let n = edits.len();
            let op = catalog.apply(edits)?;
            eprintln!(
                "{} rejected in {}; operation {op} (undo: framecull undo)",
                count(n as u64, "file"),
                count(groups.len() as u64, "group")
            );
        }
        return Ok(Outcome::Clean);
    }
    if args.json {
        super::write_stdout(&serde_json::to_string_pretty(&groups)?)?;
        return Ok(Outcome::Clean);
    }
    let by_id: HashMap<ItemId, &Item> = items.iter().map(|i| (i.id, i)).collect();
    let mut text = String::new();
    for g in &groups {
        let kind = if g.exact { "exact" } else { "near" };
        let members = count(g.members.len() as u64, "file");
        text += &format!("group {} ({kind}, {members})\n", g.group);
        for id in &g.members {
            let Some(item) = by_id.get(id) else { continue };
            let info = &item.info;
            let resolution = info
                .width
                .zip(info.height)
                .map_or("-".into(), |(w, h)| format!("{w}x{h}"));
            let duration = Measure::DurationSecs
                .of(item, None)
                .map_or("-".into(), |d| Measure::DurationSecs.format(d));
            let rate = info
                .bit_rate
                .map_or("-".into(), |b| format!("{} kb/s", b / 1000));
            text += &format!(
                "  {} {:>10} {:>10} {:>11} {:>12}  {}\n",
                if *id == g.best { "keep" } else { "    " },
                human_bytes(item.size_bytes),
                resolution,
                duration,
                rate,
                item.path
            );
        }
    }
    if groups.is_empty() {
        text = "no duplicate groups\n".into();
    }
    super::write_stdout(&text)?;
    Ok(Outcome::Clean)
}
