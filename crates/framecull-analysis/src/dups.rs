//! Duplicate groups: exact (same bytes) and near (pictures whose perceptual hashes are close
//! under any flip or 90-degree rotation; videos whose per-second frame hashes largely match,
//! which survives re-encoding, rate changes and trimming).
//!
//! Candidates come from multi-index hashing ([`HashIndex`]): each hash is cut into three
//! chunks, and only hashes whose chunks are close are compared, so a million pictures take
//! seconds instead of the days that comparing every pair would.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use rayon::prelude::*;

use super::phash::hamming;
use framecull_model::ItemId;

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

    let near = near_pictures(items)
        .into_iter()
        .chain(same_videos(items))
        .map(|(i, j)| (i as usize, j as usize));
    for (i, j) in near {
        uf.union(i, j);
        like[i].get_or_insert(j);
        like[j].get_or_insert(i);
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

/// Pairs of pictures within [`IMAGE_MAX_DISTANCE`] of each other, any flip or rotation.
fn near_pictures(items: &[DupInput]) -> Vec<(u32, u32)> {
    // Pictures: every flip and rotation indexed; each upright hash looks for the variants
    // within IMAGE_MAX_DISTANCE of it (all of them: the index's radius covers that distance).
    let pictures: Vec<(usize, &[u64; 8])> = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match item {
            DupInput::Picture { variants, .. } => Some((i, variants)),
            _ => None,
        })
        .collect();
    let index = HashIndex::new(
        pictures
            .iter()
            .flat_map(|&(i, variants)| variants.iter().map(move |&v| (v, i as u32))),
        IMAGE_MAX_DISTANCE / 3,
    );
    let uprights: Vec<(u64, u32)> = pictures.iter().map(|&(i, v)| (v[0], i as u32)).collect();
    index.near_pairs(&uprights, IMAGE_MAX_DISTANCE, |i, j| j > i)
}

/// Pairs of videos that show the same footage ([`same_footage`]).
fn same_videos(items: &[DupInput]) -> Vec<(u32, u32)> {
    // Videos: pairs with a frame in common (within FRAME_MAX_DISTANCE) are candidates, then
    // count how many sampled frames of the shorter match the other. The index finds every
    // frame pair within 5 bits and most up to 10; a pair of videos needs only one of its
    // matching frames found.
    let frames: Vec<(u64, u32)> = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match item {
            DupInput::Video { frame_hashes, .. } => Some((i, *frame_hashes)),
            _ => None,
        })
        .flat_map(|(i, hashes)| hashes.iter().map(move |&h| (h, i as u32)))
        .collect();
    let frame_index = HashIndex::new(frames.iter().copied(), 1);
    let candidates = frame_index.near_pairs(&frames, FRAME_MAX_DISTANCE, |i, j| j > i);
    let hashes_of = |i: u32| match &items[i as usize] {
        DupInput::Video { frame_hashes, .. } => *frame_hashes,
        _ => &[],
    };
    candidates
        .into_par_iter()
        .filter(|&(i, j)| same_footage(hashes_of(i), hashes_of(j)))
        .collect()
}

/// Whether two videos show the same footage: at least [`VIDEO_MIN_SHARE`] of the shorter's
/// sampled frames have a frame of the other within [`FRAME_MAX_DISTANCE`].
fn same_footage(a: &[u64], b: &[u64]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return false;
    }
    let matched = short
        .iter()
        .filter(|&&h| long.iter().any(|&g| hamming(h, g) <= FRAME_MAX_DISTANCE))
        .count();
    matched as f64 >= VIDEO_MIN_SHARE * short.len() as f64
}

/// Where each chunk of a hash lies: (lowest bit, width). Three chunks: two hashes that
/// differ in at most `3r + 2` bits differ in at most `r` bits of some chunk.
const CHUNKS: [(u32, u32); 3] = [(0, 21), (21, 21), (42, 22)];

/// Multi-index hashing over 64-bit hashes. Each chunk has a table of the entries sorted by
/// the chunk's top bits (as many bits as make buckets of about one entry, up to the
/// chunk's width). A query visits, in every table, the buckets whose bits are within
/// `radius` of its own, so it meets every entry within `3 * radius + 2` bits of it
/// (pigeonhole), and few others.
struct HashIndex {
    tables: Vec<ChunkTable>,
}

struct ChunkTable {
    low: u32,
    width: u32,
    /// Bucket bits: the top `bits` of the chunk.
    bits: u32,
    /// Bucket `b` holds `hashes[offsets[b]..offsets[b + 1]]`.
    offsets: Vec<u32>,
    hashes: Vec<u64>,
    ids: Vec<u32>,
    /// Bucket bits a query may differ in.
    radius: u32,
    /// Every pattern of at most `radius` bits among `bits`: the buckets a query visits.
    probes: Vec<u32>,
}

impl ChunkTable {
    fn bucket(&self, hash: u64) -> u32 {
        let chunk = (hash >> self.low) & ((1u64 << self.width) - 1);
        (chunk >> (self.width - self.bits)) as u32
    }

    /// Whether a query for `a` visits the bucket of `b`.
    fn finds(&self, a: u64, b: u64) -> bool {
        (self.bucket(a) ^ self.bucket(b)).count_ones() <= self.radius
    }
}

impl HashIndex {
    fn new(entries: impl Iterator<Item = (u64, u32)>, radius: u32) -> Self {
        let entries: Vec<(u64, u32)> = entries.collect();
        let wanted = usize::BITS - entries.len().max(1).leading_zeros();
        let tables = CHUNKS
            .par_iter()
            .map(|&(low, width)| {
                let bits = wanted.clamp(1, width);
                let mut table = ChunkTable {
                    low,
                    width,
                    bits,
                    offsets: vec![0; (1usize << bits) + 1],
                    hashes: vec![0; entries.len()],
                    ids: vec![0; entries.len()],
                    radius,
                    probes: probes(bits, radius),
                };
                // Counting sort by bucket.
                for &(hash, _) in &entries {
                    let b = table.bucket(hash) as usize;
                    table.offsets[b + 1] += 1;
                }
                for b in 1..table.offsets.len() {
                    table.offsets[b] += table.offsets[b - 1];
                }
                let mut next = table.offsets.clone();
                for &(hash, id) in &entries {
                    let b = table.bucket(hash) as usize;
                    let slot = next[b] as usize;
                    next[b] += 1;
                    table.hashes[slot] = hash;
                    table.ids[slot] = id;
                }
                table
            })
            .collect();
        HashIndex { tables }
    }

    /// Every pair (query id, entry id) whose hashes differ in at most `max_distance` bits
    /// and for which `keep(query id, entry id)` holds, sorted, each once. Complete up to
    /// `3 * radius + 2` bits; pairs further apart are found when a chunk happens to be close.
    ///
    /// The queries are taken in the order of their buckets, a few thousand at a time, and
    /// each such run visits its probed buckets together: the table is read nearly in order
    /// instead of one random bucket per probe (which made a million queries a minute of
    /// cache misses).
    fn near_pairs(
        &self,
        queries: &[(u64, u32)],
        max_distance: u32,
        keep: impl Fn(u32, u32) -> bool + Sync,
    ) -> Vec<(u32, u32)> {
        let mut pairs = Vec::new();
        for (t, table) in self.tables.iter().enumerate() {
            let earlier = &self.tables[..t];
            let mut sorted: Vec<(u32, u64, u32)> = queries
                .iter()
                .map(|&(hash, id)| (table.bucket(hash), hash, id))
                .collect();
            sorted.par_sort_unstable_by_key(|q| q.0);
            let found: Vec<(u32, u32)> = sorted
                .par_chunks(4096)
                .flat_map_iter(|run| {
                    let mut out = Vec::new();
                    for &p in &table.probes {
                        for &(own, hash, qid) in run {
                            let b = (own ^ p) as usize;
                            let (from, to) =
                                (table.offsets[b] as usize, table.offsets[b + 1] as usize);
                            for k in from..to {
                                let (other, id) = (table.hashes[k], table.ids[k]);
                                // A pair an earlier chunk's table finds is its to report.
                                if hamming(hash, other) <= max_distance
                                    && keep(qid, id)
                                    && !earlier.iter().any(|e| e.finds(hash, other))
                                {
                                    out.push((qid, id));
                                }
                            }
                        }
                    }
                    out
                })
                .collect();
            pairs.extend(found);
        }
        pairs.par_sort_unstable();
        pairs.dedup();
        pairs
    }
}

/// Every value of `bits` bits with at most `radius` (0 to 2) bits set.
fn probes(bits: u32, radius: u32) -> Vec<u32> {
    let mut out = vec![0];
    for a in 0..bits {
        if radius >= 1 {
            out.push(1 << a);
        }
        for b in a + 1..bits {
            if radius >= 2 {
                out.push(1 << a | 1 << b);
            }
        }
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

    /// A small deterministic generator (splitmix64).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// `h` with `n` distinct random bits flipped.
        fn flip(&mut self, h: u64, n: u32) -> u64 {
            let mut out = h;
            while (out ^ h).count_ones() < n {
                out ^= 1 << (self.next() % 64);
            }
            out
        }
    }

    /// Groups as sets of ids, in a canonical order.
    fn partition(groups: &HashMap<ItemId, DupMembership>) -> Vec<Vec<ItemId>> {
        let mut by_group: HashMap<ItemId, Vec<ItemId>> = HashMap::new();
        for (id, m) in groups {
            by_group.entry(m.group).or_default().push(*id);
        }
        let mut out: Vec<Vec<ItemId>> = by_group
            .into_values()
            .map(|mut g| {
                g.sort_unstable();
                g
            })
            .collect();
        out.sort();
        out
    }

    /// Groups by comparing every pair, as the index must find them.
    fn every_pair(items: &[DupInput]) -> Vec<Vec<ItemId>> {
        let mut uf = UnionFind {
            parent: (0..items.len()).collect(),
        };
        for i in 0..items.len() {
            for j in i + 1..items.len() {
                let near = match (&items[i], &items[j]) {
                    (
                        DupInput::Picture { variants: a, .. },
                        DupInput::Picture { variants: b, .. },
                    ) => super::super::phash::dihedral_distance(a[0], b) <= IMAGE_MAX_DISTANCE,
                    (
                        DupInput::Video {
                            frame_hashes: a, ..
                        },
                        DupInput::Video {
                            frame_hashes: b, ..
                        },
                    ) => same_footage(a, b),
                    _ => false,
                };
                if near {
                    uf.union(i, j);
                }
            }
        }
        let mut groups: HashMap<usize, Vec<ItemId>> = HashMap::new();
        for (i, item) in items.iter().enumerate() {
            groups.entry(uf.find(i)).or_default().push(item.id());
        }
        let mut out: Vec<Vec<ItemId>> = groups.into_values().filter(|g| g.len() > 1).collect();
        for g in &mut out {
            g.sort_unstable();
        }
        out.sort();
        out
    }

    #[test]
    fn pictures_within_the_distance_are_all_found_as_comparing_every_pair_finds_them() {
        for seed in 0..20 {
            let mut rng = Rng(seed);
            // Clusters of pictures around a few originals, at every distance from 0 to 12
            // bits (8 is the limit: pigeonhole on bytes missed some pairs at exactly 8), some
            // of them flipped or rotated.
            let originals: Vec<u64> = (0..12).map(|_| rng.next()).collect();
            let hashes: Vec<u64> = (0..300)
                .map(|k| {
                    let base = originals[k % originals.len()];
                    let bits = (rng.next() % 13) as u32;
                    let near = rng.flip(base, bits);
                    if k % 5 == 0 {
                        near.rotate_left(7)
                    } else {
                        near
                    }
                })
                .collect();
            let items: Vec<DupInput> = hashes
                .iter()
                .enumerate()
                .map(|(k, &h)| pic(k as ItemId + 1, h, None))
                .collect();
            let expected = every_pair(&items);
            assert!(
                expected.len() >= originals.len(),
                "seed {seed}: {expected:?}"
            );
            assert_eq!(
                partition(&group_duplicates(&items)),
                expected,
                "seed {seed}"
            );
        }
    }

    #[test]
    fn videos_sharing_frames_are_all_found_as_comparing_every_pair_finds_them() {
        for seed in 0..10 {
            let mut rng = Rng(seed);
            let sources: Vec<Vec<u64>> = (0..7)
                .map(|_| (0..20).map(|_| rng.next()).collect())
                .collect();
            // Re-encodes (every frame within 5 bits), trims, and unrelated videos.
            let videos: Vec<Vec<u64>> = (0..80)
                .map(|k| {
                    let source = &sources[k % sources.len()];
                    match k % 4 {
                        0 => (0..15).map(|_| rng.next()).collect(),
                        1 => source[5..15].to_vec(),
                        _ => {
                            let n = (rng.next() % 6) as u32;
                            source.iter().map(|&h| rng.flip(h, n)).collect()
                        }
                    }
                })
                .collect();
            let items: Vec<DupInput> = videos
                .iter()
                .enumerate()
                .map(|(k, hashes)| DupInput::Video {
                    id: k as ItemId + 1,
                    content_hash: None,
                    frame_hashes: hashes,
                })
                .collect();
            let expected = every_pair(&items);
            assert!(expected.len() >= sources.len(), "seed {seed}");
            assert_eq!(
                partition(&group_duplicates(&items)),
                expected,
                "seed {seed}"
            );
        }
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
