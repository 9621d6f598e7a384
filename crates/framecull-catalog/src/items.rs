//! Reading every item: in parts on several connections at once, ordered by path with a sort
//! of short keys, and paired with what other tables hold of each.

use rayon::prelude::*;
use rusqlite::{OptionalExtension, params};

use framecull_model::{Item, ItemId, ItemStatus, Measure, MediaKind};

use crate::{Catalog, Result, columns};

impl Catalog {
    /// Every item ([`ItemFields`] of each), ordered by path, and what `also` reads meanwhile
    /// through another connection to the same catalog (the items' analysis, say): at a
    /// million files, reading rows is most of the time a listing or the window's view takes.
    pub fn items_and<T: Send>(
        &self,
        fields: ItemFields,
        also: impl FnOnce(&Catalog) -> Result<T> + Send,
    ) -> Result<(Vec<Item>, T)> {
        let (parts, also) = self.items_in_parts_and(fields, also)?;
        let mut items = Vec::with_capacity(parts.iter().map(Vec::len).sum());
        for part in parts {
            items.extend(part);
        }
        sort_by_path(&mut items, |i| &i.path);
        Ok((items, also))
    }

    /// Every item ([`ItemFields`] of each) in table order (ascending ids), in parts read on
    /// two more connections, and what `also` reads meanwhile on a third: for a caller that
    /// makes something smaller of each item before it orders them ([`sort_by_path`]).
    pub fn items_in_parts_and<T: Send>(
        &self,
        fields: ItemFields,
        also: impl FnOnce(&Catalog) -> Result<T> + Send,
    ) -> Result<(Vec<Vec<Item>>, T)> {
        let dir = self.project_dir.clone();
        let mmap: i64 = self
            .conn
            .pragma_query_value(None, "mmap_size", |r| r.get(0))?;
        // The id in the middle: rows below it are read here, the rest by the other thread.
        let middle: Option<ItemId> = self
            .conn
            .query_row(
                "SELECT id FROM items ORDER BY id LIMIT 1 OFFSET (SELECT COUNT(*) FROM items) / 2",
                [],
                |r| r.get(0),
            )
            .optional()?;
        let middle = middle.unwrap_or(ItemId::MAX);
        let open = || -> Result<Catalog> {
            let catalog = Catalog::open(&dir)?;
            catalog.conn.pragma_update(None, "mmap_size", mmap)?;
            Ok(catalog)
        };
        std::thread::scope(|s| {
            let second = s.spawn(|| open()?.items_between(middle, ItemId::MAX, fields));
            let also = s.spawn(|| also(&open()?));
            let first = match middle.checked_sub(1) {
                Some(last) => self.items_between(ItemId::MIN, last, fields),
                None => Ok(Vec::new()),
            };
            let second = join(second)?;
            let also = join(also)?;
            Ok((vec![first?, second], also))
        })
    }

    /// Every item, ordered by path.
    pub fn items(&self) -> Result<Vec<Item>> {
        let mut items = self.items_between(ItemId::MIN, ItemId::MAX, ItemFields::All)?;
        sort_by_path(&mut items, |i| &i.path);
        Ok(items)
    }

    /// The items with ids from `first` to `last` (both included), in table order.
    fn items_between(&self, first: ItemId, last: ItemId, fields: ItemFields) -> Result<Vec<Item>> {
        // The columns a brief read leaves out are read as NULL: no text decoded or allocated.
        let media = columns::MEDIA_FIELDS.iter().map(|&c| match fields {
            ItemFields::Brief if !BRIEF_MEDIA.contains(&c) => "NULL",
            _ => c,
        });
        let mtime = match fields {
            ItemFields::All => "mtime_ns",
            ItemFields::Brief => "0 AS mtime_ns",
        };
        let size = Measure::SizeBytes.name();
        let mut stmt = self.conn.prepare(&format!(
            "SELECT id, path, kind, status, error, {size}, {mtime}, fingerprint, {}
             FROM items WHERE id BETWEEN ?1 AND ?2",
            media.collect::<Vec<_>>().join(", ")
        ))?;
        let [id, path, kind, status, error, size, mtime, fingerprint] = columns::positions(
            &stmt,
            [
                "id",
                "path",
                "kind",
                "status",
                "error",
                size,
                "mtime_ns",
                "fingerprint",
            ],
        )?;
        // The media information follows, in its list's order.
        let media = fingerprint + 1;
        let rows = stmt.query_map(params![first, last], |r| {
            Ok(Item {
                id: r.get::<_, ItemId>(id)?,
                path: r.get(path)?,
                kind: MediaKind::parse(r.get_ref(kind)?.as_str()?).unwrap_or(MediaKind::Other),
                status: ItemStatus::parse(r.get_ref(status)?.as_str()?)
                    .unwrap_or(ItemStatus::Error),
                error: r.get(error)?,
                size_bytes: r.get::<_, i64>(size)? as u64,
                mtime_ns: r.get(mtime)?,
                fingerprint: r.get(fingerprint)?,
                info: columns::read_media(r, media)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}

/// The media information columns an [`ItemFields::Brief`] read reads.
const BRIEF_MEDIA: [&str; 9] = [
    "codec",
    Measure::Width.name(),
    Measure::Height.name(),
    "rotation_deg",
    Measure::Fps.name(),
    Measure::DurationSecs.name(),
    "bit_rate",
    "exif_orientation",
    "stream_index",
];

/// Which of an item's fields [`Catalog::items_and`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemFields {
    All,
    /// What the window shows and measures of a file: id, path, kind, status, error, size,
    /// fingerprint, codec, width, height, rotation, EXIF orientation, fps, duration and bit
    /// rate; the other fields are left empty (`mtime_ns` 0). A third less to read and no
    /// strings to allocate and free for the rest.
    Brief,
}

/// What a scoped thread returned; its panic goes on here.
fn join<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Orders `items` by their `path`, in byte order as SQLite's BINARY collation. Catalog rows
/// are read in table order and sorted here: `ORDER BY path` walks the path index and looks
/// each row up in the table, twice as slow at a million items. A sort of the items themselves
/// moved them (~370 bytes for an [`Item`]) at each step of the sort, 0.4 to 1.2 s for a
/// million; what is sorted here are 28-byte keys (the bytes past the prefix all paths share,
/// and the item's place), the full paths compared only where the keys tie, and the items are
/// then put in place by swaps along the permutation's cycles, each moved once.
pub fn sort_by_path<T: Send + Sync>(items: &mut [T], path: impl Fn(&T) -> &str + Sync) {
    let Some(first) = items.first() else {
        return;
    };
    let mut shared = path(first);
    for item in items.iter() {
        shared = &shared[..common_prefix(shared, path(item))];
    }
    let skip = shared.len();
    let mut keys: Vec<([u8; 24], u32)> = items
        .par_iter()
        .enumerate()
        .map(|(at, item)| {
            // Zero-padded: a path that is a prefix of another sorts first or ties.
            let mut key = [0u8; 24];
            let rest = &path(item).as_bytes()[skip..];
            let n = rest.len().min(key.len());
            key[..n].copy_from_slice(&rest[..n]);
            (key, at as u32)
        })
        .collect();
    keys.par_sort_unstable_by(|a, b| {
        a.0.cmp(&b.0).then_with(|| {
            let bytes = |at: u32| path(&items[at as usize]).as_bytes();
            bytes(a.1).cmp(bytes(b.1))
        })
    });
    // Position k takes the item now at source[k]; a position done points at itself.
    let mut source: Vec<u32> = keys.into_iter().map(|(_, at)| at).collect();
    for start in 0..source.len() {
        let mut k = start;
        loop {
            let from = source[k] as usize;
            source[k] = k as u32;
            if from == start {
                break;
            }
            items.swap(k, from);
            k = from;
        }
    }
}

/// The length of the longest common prefix of `a` and `b`, at a character boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// For each of `items`, its entry in `by_id` (ascending item ids, as
/// [`Catalog::metrics_by_id`] returns them): one merge walk in id order. A binary search per
/// item was a cache miss per step, seconds at a million items.
pub fn by_item<'a, T>(items: &[Item], by_id: &'a [(ItemId, T)]) -> Vec<Option<&'a T>> {
    let mut order: Vec<(ItemId, u32)> = items
        .iter()
        .zip(0u32..)
        .map(|(item, i)| (item.id, i))
        .collect();
    order.par_sort_unstable();
    let mut out = vec![None; items.len()];
    let mut k = 0;
    for (id, i) in order {
        while by_id.get(k).is_some_and(|(other, _)| *other < id) {
            k += 1;
        }
        if let Some((other, value)) = by_id.get(k)
            && *other == id
        {
            out[i as usize] = Some(value);
        }
    }
    out
}
