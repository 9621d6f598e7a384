//! Duplicate groups: exact (same bytes) and near (pictures whose perceptual hashes are close
//! under any flip or 90-degree rotation; videos whose per-second frame hashes largely match,
//! which survives re-encoding, rate changes and trimming).
//!
//! Candidates come from multi-index hashing: hashes within 7 bits of each other share at
//! least one of their 8 bytes, so only items sharing a byte at the same position are compared.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::phash::{dihedral_distance, hamming};
use crate::model::ItemId;

/// Largest dihedral hash distance between near-duplicate pictures.
pub const IMAGE_MAX_DISTANCE: u32 = 8;
/// Largest distance between two matching video frames.
pub const FRAME_MAX_DISTANCE: u32 = 10;
/// Share of the shorter video's sampled frames that must match the other video.
pub const VIDEO_MIN_SHARE: f64 = 0.5;

pub enum DupInput<'a> {
    Picture {
        id: ItemId,
        content_hash: Option<&'a str>,
        /// Hashes of the 8 flips/rotations, the upright picture first.
        variants: [u64; 8],
    },
    Video {
        id: ItemId,
        content_hash: Option<&'a str>,
        frame_hashes: &'a [u64],
    },
    /// Only the bytes are known (no decodable picture).
    Bytes { id: ItemId, content_hash: &'a str },
}

impl DupInput<'_> {
    fn id(&self) -> ItemId {
        match self {
            DupInput::Picture { id, .. }
            | DupInput::Video { id, .. }
            | DupInput::Bytes { id, .. } => *id,
        }
    }

    fn content_hash(&self) -> Option<&str> {
        match self {
            DupInput::Picture { content_hash, .. } | DupInput::Video { content_hash, .. } => {
                *content_hash
            }
            DupInput::Bytes { content_hash, .. } => Some(content_hash),
        }
    }
}

/// How an item belongs to its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DupRelation {
    /// Byte-identical to another member.
    Exact,
    /// Same picture or footage, different bytes.
    Near,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DupMembership {
    /// The group's id: its smallest item id, stable while that item exists.
    pub group: ItemId,
    pub relation: DupRelation,
    /// A member this item duplicates (for messages).
    pub like: ItemId,
    /// For byte-identical members: the smallest id among the items with these exact bytes.
    /// An exact group never holds different content; `group` may also hold near duplicates.
    pub exact_group: Option<ItemId>,
}

struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }
}

/// Group duplicates. Items in no group are absent from the result.
pub fn group_duplicates(items: &[DupInput]) -> HashMap<ItemId, DupMembership> {
    let n = items.len();
    let mut uf = UnionFind {
        parent: (0..n).collect(),
    };
    let mut exact: Vec<Option<usize>> = vec![None; n];
    let mut like: Vec<Option<usize>> = vec![None; n];

    let mut by_content: HashMap<&str, usize> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        if let Some(h) = item.content_hash() {
            if let Some(&first) = by_content.get(h) {
                uf.union(first, i);
                exact[i] = Some(first);
                exact[first] = Some(first);
                like[i] = Some(first);
                like[first].get_or_insert(i);
            } else {
                by_content.insert(h, i);
            }
        }
    }

    // Pictures: index every variant's bytes; query with each upright hash.
    let mut index: HashMap<(u8, u8), Vec<usize>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        if let DupInput::Picture { variants, .. } = item {
            for v in variants {
                for (pos, byte) in v.to_be_bytes().iter().enumerate() {
                    let bucket = index.entry((pos as u8, *byte)).or_default();
                    if bucket.last() != Some(&i) {
                        bucket.push(i);
                    }
                }
            }
        }
    }
    for (i, item) in items.iter().enumerate() {
        let DupInput::Picture { variants, .. } = item else {
            continue;
        };
        let upright = variants[0];
        let mut candidates: Vec<usize> = upright
            .to_be_bytes()
            .iter()
            .enumerate()
            .filter_map(|(pos, b)| index.get(&(pos as u8, *b)))
            .flatten()
            .copied()
            .filter(|&j| j > i)
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        for j in candidates {
            if let DupInput::Picture {
                variants: other, ..
            } = &items[j]
                && dihedral_distance(upright, other) <= IMAGE_MAX_DISTANCE
            {
                uf.union(i, j);
                like[i].get_or_insert(j);
                like[j].get_or_insert(i);
            }
        }
    }

    // Videos: count, per pair, how many sampled frames of one match the other.
    let mut frame_index: HashMap<(u8, u8), Vec<usize>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        if let DupInput::Video { frame_hashes, .. } = item {
            for h in frame_hashes.iter() {
                for (pos, byte) in h.to_be_bytes().iter().enumerate() {
                    let bucket = frame_index.entry((pos as u8, *byte)).or_default();
                    if bucket.last() != Some(&i) {
                        bucket.push(i);
                    }
                }
            }
        }
    }
    for (i, item) in items.iter().enumerate() {
        let DupInput::Video { frame_hashes, .. } = item else {
            continue;
        };
        if frame_hashes.is_empty() {
            continue;
        }
        let mut candidates: Vec<usize> = frame_hashes
            .iter()
            .flat_map(|h| {
                h.to_be_bytes()
                    .into_iter()
                    .enumerate()
                    .filter_map(|(pos, b)| frame_index.get(&(pos as u8, b)))
                    .flatten()
                    .copied()
                    .collect::<Vec<_>>()
            })
            .filter(|&j| j > i)
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        for j in candidates {
            let DupInput::Video {
                frame_hashes: other,
                ..
            } = &items[j]
            else {
                continue;
            };
            if other.is_empty() {
                continue;
            }
            let (short, long) = if frame_hashes.len() <= other.len() {
                (*frame_hashes, *other)
            } else {
                (*other, *frame_hashes)
            };
            let matched = short
                .iter()
                .filter(|&&h| long.iter().any(|&g| hamming(h, g) <= FRAME_MAX_DISTANCE))
                .count();
            if matched as f64 >= VIDEO_MIN_SHARE * short.len() as f64 {
                uf.union(i, j);
                like[i].get_or_insert(j);
                like[j].get_or_insert(i);
            }
        }
    }

    let mut sizes: HashMap<usize, usize> = HashMap::new();
    for i in 0..n {
        *sizes.entry(uf.find(i)).or_default() += 1;
    }
    let mut out = HashMap::new();
    for i in 0..n {
        let root = uf.find(i);
        if sizes[&root] < 2 {
            continue;
        }
        let group = items[root].id();
        out.insert(
            items[i].id(),
            DupMembership {
                group,
                relation: if exact[i].is_some() {
                    DupRelation::Exact
                } else {
                    DupRelation::Near
                },
                like: items[like[i].unwrap_or(root)].id(),
                exact_group: exact[i].map(|first| items[first].id()),
            },
        );
    }
    out
}

/// What makes one member of a duplicate group better than another (larger is better).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BestBy {
    /// Width x height.
    Resolution,
    BitRate,
    /// File size.
    Size,
    Duration,
}

impl BestBy {
    pub fn label(self) -> &'static str {
        match self {
            BestBy::Resolution => "resolution",
            BestBy::BitRate => "bit rate",
            BestBy::Size => "size",
            BestBy::Duration => "duration",
        }
    }
}

/// The order "keep the best" compares members in, unless the project says otherwise.
pub const DEFAULT_BEST_ORDER: [BestBy; 3] = [BestBy::Resolution, BestBy::BitRate, BestBy::Size];

/// A member of a duplicate group, as "keep the best" compares them.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub id: ItemId,
    pub pixels: Option<u64>,
    pub bit_rate: Option<i64>,
    pub size_bytes: u64,
    pub duration_secs: Option<f64>,
}

/// The member to keep: the largest by the first criterion of `order`, ties broken by the
/// next (a known value beats an unknown one), then by the smallest id.
pub fn best_member(members: &[Member], order: &[BestBy]) -> Option<ItemId> {
    let compare = |a: &Member, b: &Member| -> Ordering {
        for by in order {
            let o = match by {
                BestBy::Resolution => a.pixels.cmp(&b.pixels),
                BestBy::BitRate => a.bit_rate.cmp(&b.bit_rate),
                BestBy::Size => a.size_bytes.cmp(&b.size_bytes),
                BestBy::Duration => match (a.duration_secs, b.duration_secs) {
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    (x, y) => x.is_some().cmp(&y.is_some()),
                },
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        b.id.cmp(&a.id)
    };
    members.iter().max_by(|a, b| compare(a, b)).map(|m| m.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pic(id: ItemId, h: u64, content: Option<&str>) -> DupInput<'_> {
        DupInput::Picture {
            id,
            content_hash: content,
            variants: [
                h,
                !h,
                h.rotate_left(7),
                h.rotate_left(13),
                h.rotate_left(21),
                h.rotate_left(29),
                h.rotate_left(37),
                h.rotate_left(43),
            ],
        }
    }

    #[test]
    fn exact_and_near_groups_and_loners() {
        let a = 0x0123_4567_89AB_CDEF;
        let items = vec![
            pic(1, a, Some("x")),
            pic(2, a, Some("x")),
            pic(3, a ^ 0b1011, Some("y")),
            pic(4, 0xFFFF_0000_FFFF_0000, Some("z")),
        ];
        let g = group_duplicates(&items);
        assert_eq!(g[&1].relation, DupRelation::Exact);
        assert_eq!(g[&2].relation, DupRelation::Exact);
        assert_eq!(g[&3].relation, DupRelation::Near);
        assert_eq!((g[&1].group, g[&2].group, g[&3].group), (1, 1, 1));
        assert_eq!(
            (g[&1].exact_group, g[&2].exact_group, g[&3].exact_group),
            (Some(1), Some(1), None)
        );
        assert!(!g.contains_key(&4));
    }

    #[test]
    fn a_trimmed_video_matches_its_source() {
        let full: Vec<u64> = (0..20u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let trimmed: Vec<u64> = full[5..15].iter().map(|h| h ^ 0b101).collect();
        let other: Vec<u64> = (100..110u64)
            .map(|i| i.wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
            .collect();
        let items = vec![
            DupInput::Video {
                id: 10,
                content_hash: Some("a"),
                frame_hashes: &full,
            },
            DupInput::Video {
                id: 11,
                content_hash: Some("b"),
                frame_hashes: &trimmed,
            },
            DupInput::Video {
                id: 12,
                content_hash: Some("c"),
                frame_hashes: &other,
            },
        ];
        let g = group_duplicates(&items);
        assert_eq!(g[&11].group, 10);
        assert_eq!(g[&11].relation, DupRelation::Near);
        assert!(!g.contains_key(&12));
    }

    #[test]
    fn the_best_member_is_the_largest_by_each_criterion_in_turn() {
        let m = |id, pixels, bit_rate, size_bytes| Member {
            id,
            pixels,
            bit_rate,
            size_bytes,
            duration_secs: None,
        };
        let group = [
            m(1, Some(640 * 360), Some(900_000), 5_000),
            m(2, Some(1280 * 720), Some(800_000), 4_000),
            m(3, Some(1280 * 720), Some(2_000_000), 3_000),
            m(4, None, Some(9_000_000), 9_000),
        ];
        assert_eq!(best_member(&group, &DEFAULT_BEST_ORDER), Some(3));
        assert_eq!(best_member(&group, &[BestBy::Size]), Some(4));
        assert_eq!(
            best_member(&group, &[BestBy::BitRate, BestBy::Size]),
            Some(4)
        );
        // All equal: the smallest id, so the choice is stable.
        let same = [m(7, None, None, 10), m(5, None, None, 10)];
        assert_eq!(best_member(&same, &DEFAULT_BEST_ORDER), Some(5));
        assert_eq!(best_member(&[], &DEFAULT_BEST_ORDER), None);
    }
}
