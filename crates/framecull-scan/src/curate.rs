//! Curation over the whole catalog, shared by the window and the command line: duplicate
//! groups with the member each would keep, and the edits that keep it and reject the rest.

use std::collections::{BTreeMap, HashMap};

use framecull_analysis::dups::{BestBy, Member, best_member};
use framecull_catalog::{Catalog, CatalogError};
use framecull_model::{Decision, DupInfo, Edit, Item, ItemId, ItemStatus};

/// One duplicate group: its members (ascending id) and the one to keep.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DupGroup {
    /// The group's id: its smallest member id.
    pub group: ItemId,
    /// Byte-identical members only.
    pub exact: bool,
    pub members: Vec<ItemId>,
    pub best: ItemId,
}

/// Every duplicate group of the catalog's present files, ordered by group id.
pub fn dup_groups<'a>(
    items: impl IntoIterator<Item = &'a Item>,
    dups: &HashMap<ItemId, DupInfo>,
    order: &[BestBy],
) -> Vec<DupGroup> {
    let mut groups: BTreeMap<ItemId, Vec<&Item>> = BTreeMap::new();
    for item in items.into_iter().filter(|i| i.status == ItemStatus::Ok) {
        if let Some(d) = dups.get(&item.id) {
            groups.entry(d.group).or_default().push(item);
        }
    }
    // Members by path, groups by their first member's: the same order on every scan
    // (item ids follow the order files were recorded in).
    let mut groups: Vec<(ItemId, Vec<&Item>)> = groups
        .into_iter()
        .filter(|(_, members)| members.len() > 1)
        .map(|(group, mut members)| {
            members.sort_by(|a, b| a.path.cmp(&b.path));
            (group, members)
        })
        .collect();
    groups.sort_by(|a, b| a.1[0].path.cmp(&b.1[0].path));
    groups
        .into_iter()
        .filter_map(|(group, members)| {
            let candidates: Vec<Member> = members.iter().map(|i| member(i)).collect();
            Some(DupGroup {
                group,
                exact: members
                    .iter()
                    .all(|i| dups.get(&i.id).is_some_and(|d| d.exact)),
                best: best_member(&candidates, order)?,
                members: members.iter().map(|i| i.id).collect(),
            })
        })
        .collect()
}

fn member(item: &Item) -> Member {
    let info = &item.info;
    Member {
        id: item.id,
        pixels: info
            .width
            .zip(info.height)
            .map(|(w, h)| u64::from(w) * u64::from(h)),
        bit_rate: info.bit_rate,
        size_bytes: item.size_bytes,
        duration_secs: info.duration_secs,
    }
}

/// The edits that keep the best member of each group (of `only`, when given) and reject the
/// others that are not rejected already; the kept member's decision is left as it is.
/// Applied as one journal operation, one undo restores every decision.
pub fn keep_best_edits(
    catalog: &Catalog,
    order: &[BestBy],
    only: Option<&[ItemId]>,
) -> Result<Vec<Edit>, CatalogError> {
    let reviews = catalog.all_reviews()?;
    let groups = dup_groups(&catalog.items()?, &catalog.all_dups()?, order);
    let mut edits = Vec::new();
    for g in groups
        .iter()
        .filter(|g| only.is_none_or(|o| o.contains(&g.group)))
    {
        for &id in g.members.iter().filter(|&&id| id != g.best) {
            let before = reviews.get(&id).map(|r| r.decision).unwrap_or_default();
            if before != Decision::Rejected {
                edits.push(Edit::Decision {
                    item: id,
                    before,
                    after: Decision::Rejected,
                });
            }
        }
    }
    Ok(edits)
}
