//! Which rows a version holds: the files a review lets in, one row per image and per chosen
//! clip of a video (the whole video when none is chosen, less the clips rejected), each with
//! its split.
//! [`select_rows`] runs the steps below in order.

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_64;

use super::{ClipFileColumns, Counts, ExportOptions, Include, ManifestError, ManifestRow};
use framecull_analysis::filter::Filter;
use framecull_catalog::{Catalog, Project};
use framecull_model::{
    AnalysisLevel, Clip, Decision, DupInfo, Flag, Item, ItemId, ItemStatus, Matrix, MatrixGuess,
    MediaInfo, MediaKind, Metrics, ReadAs, Review, Severity,
};

/// Build the rows an export would write (sorted by clip id) and the counts.
pub fn select_rows(
    catalog: &Catalog,
    options: &ExportOptions,
) -> Result<(Vec<ManifestRow>, Counts), ManifestError> {
    let tables = Tables::read(catalog)?;
    let guess = reading(catalog)?.color_matrix_guess;
    let fingerprints: HashMap<ItemId, &str> = tables
        .items
        .iter()
        .map(|i| (i.id, i.fingerprint.as_deref().unwrap_or("")))
        .collect();
    let mut counts = Counts::default();
    let mut rows = Vec::new();
    let matched = matched_by_filter(&tables, options.filter.as_ref());
    for (i, item) in tables.items.iter().enumerate() {
        if item.kind == MediaKind::Other {
            continue;
        }
        if !matched[i] {
            *counts
                .excluded
                .entry("not matching the filter".into())
                .or_default() += 1;
            continue;
        }
        let review = tables.reviews.get(&item.id).cloned().unwrap_or_default();
        let item_flags = tables
            .flags
            .get(&item.id)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if let Some(why) = exclusion(item, review.decision, item_flags, options.include) {
            *counts.excluded.entry(why).or_default() += 1;
            continue;
        }
        let group_key = group_key(item, tables.dups.get(&item.id), &fingerprints);
        let metrics = tables.metrics.get(&item.id);
        let base = base_row(item, &review, metrics, item_flags, group_key, guess);
        if item.kind == MediaKind::Image {
            rows.push(image_row(base));
        } else {
            let all = tables.clips.get(&item.id);
            let clips = chosen_clips(all, &review, options.include);
            if clips.is_empty() {
                let whole = whole_video_row(base, &item.info, metrics);
                let rejected: Vec<&Clip> = all
                    .into_iter()
                    .flatten()
                    .filter(|c| c.decision == Decision::Rejected)
                    .collect();
                rows.extend(outside_rejected(whole, &rejected));
            } else {
                rows.extend(clips.into_iter().map(|c| clip_row(&base, c)));
            }
        }
        counts.files += 1;
    }
    let previous = match options.split.as_ref().and_then(|s| s.stratify) {
        Some(_) => previous_splits(catalog, options)?,
        None => HashMap::new(),
    };
    assign_splits(&mut rows, options, &previous);
    Ok(sort_and_count(rows, counts))
}

/// What the selection reads from the catalog, each table once.
struct Tables {
    items: Vec<Item>,
    metrics: HashMap<ItemId, Metrics>,
    flags: HashMap<ItemId, Vec<Flag>>,
    dups: HashMap<ItemId, DupInfo>,
    reviews: HashMap<ItemId, Review>,
    clips: HashMap<ItemId, Vec<Clip>>,
}

impl Tables {
    /// Read every table the selection needs.
    fn read(catalog: &Catalog) -> Result<Tables, ManifestError> {
        Ok(Tables {
            items: catalog.items()?,
            metrics: catalog.all_metrics()?,
            flags: catalog.all_flags()?,
            dups: catalog.all_dups()?,
            reviews: catalog.all_reviews()?,
            clips: catalog.all_clips()?,
        })
    }
}

/// Which items the filter keeps (all without one).
fn matched_by_filter(tables: &Tables, filter: Option<&Filter>) -> Vec<bool> {
    let mut matched = vec![filter.is_none(); tables.items.len()];
    if let Some(f) = filter {
        let metrics: Vec<Option<&Metrics>> = tables
            .items
            .iter()
            .map(|i| tables.metrics.get(&i.id))
            .collect();
        let clip_labels: HashMap<ItemId, Vec<String>> = tables
            .clips
            .iter()
            .map(|(id, clips)| (*id, clips.iter().filter_map(|c| c.label.clone()).collect()))
            .collect();
        let chosen = f.select_items(
            &tables.items,
            &metrics,
            &tables.flags,
            &tables.reviews,
            &clip_labels,
        );
        for i in chosen {
            matched[i] = true;
        }
    }
    matched
}

/// Why a file stays out (the reason it is counted under in [`Counts::excluded`]), or `None`
/// when it goes in: a probe that failed, a rejection, or (by `include`) no acceptance or an
/// error or warning flag on an unreviewed file.
fn exclusion(item: &Item, decision: Decision, flags: &[Flag], include: Include) -> Option<String> {
    if item.status != ItemStatus::Ok {
        return Some(format!("status {}", item.status.as_str()));
    }
    match (decision, include) {
        (Decision::Rejected, _) => Some("rejected".to_string()),
        (Decision::Unreviewed, Include::Accepted) => Some("unreviewed".to_string()),
        (Decision::Unreviewed, Include::Unreviewed)
            if flags.iter().any(|f| f.severity <= Severity::Warning) =>
        {
            Some("unreviewed and flagged".to_string())
        }
        _ => None,
    }
}

/// How the project reads its videos now (`[video]` of `framecull.toml`): the rows' colour
/// matrices follow its guess. (The streams are those the last scan read.)
pub(crate) fn reading(catalog: &Catalog) -> Result<ReadAs, ManifestError> {
    Project::at(catalog.project_dir())
        .config()
        .map(|c| c.video)
        .map_err(|e| ManifestError::Invalid(e.to_string()))
}

/// The key that keeps related clips in one split: the fingerprint of the file's duplicate
/// group (its smallest item id's), else the file's own.
fn group_key(item: &Item, dup: Option<&DupInfo>, fingerprints: &HashMap<ItemId, &str>) -> String {
    match dup {
        Some(d) => format!(
            "dup:{}",
            fingerprints.get(&d.group).copied().unwrap_or_default()
        ),
        None => format!("file:{}", item.fingerprint.as_deref().unwrap_or_default()),
    }
}

/// The columns every row of a file shares: identity, media facts, tags, metrics and flag
/// codes; the clip's own columns are left empty.
fn base_row(
    item: &Item,
    review: &Review,
    m: Option<&Metrics>,
    item_flags: &[Flag],
    group_key: String,
    guess: MatrixGuess,
) -> ManifestRow {
    let info = &item.info;
    ManifestRow {
        clip_id: String::new(),
        path: item.path.clone(),
        file_fingerprint: item.fingerprint.clone().unwrap_or_default(),
        size_bytes: item.size_bytes as i64,
        kind: item.kind,
        start_secs: 0.0,
        end_secs: 0.0,
        start_frame: None,
        end_frame: None,
        start_pts: None,
        end_pts: None,
        time_base: info.time_base.map(|t| t.to_text()),
        fps: info.fps,
        width: info.width.map(i64::from),
        height: info.height.map(i64::from),
        rotation_deg: info
            .rotation_deg
            .map(i64::from)
            .filter(|_| item.kind == MediaKind::Video),
        stream_index: info
            .stream_index
            .map(i64::from)
            .filter(|_| item.kind == MediaKind::Video),
        color_matrix: (item.kind == MediaKind::Video).then(|| {
            Matrix::of_stream(info.color_space.as_deref(), info.height.unwrap_or(0), guess)
                .as_str()
                .to_string()
        }),
        analysis_level: Some(
            m.map_or(AnalysisLevel::None, |m| m.level)
                .as_str()
                .to_string(),
        ),
        label: review.label.clone(),
        tags: review.tags.clone(),
        split: None,
        group_key,
        motion: m.and_then(|m| m.motion_mean),
        brightness: m.and_then(|m| m.brightness),
        sharpness: m.and_then(|m| m.sharpness),
        flags: {
            let mut codes: Vec<String> = item_flags.iter().map(|f| f.code.clone()).collect();
            codes.sort();
            codes.dedup();
            codes
        },
        clip: ClipFileColumns::default(),
        frame_map: None,
        content_crop: m.and_then(|m| m.content_crop).map(|c| c.to_string()),
    }
}

/// An image's one row: frame 0 to 1.
fn image_row(base: ManifestRow) -> ManifestRow {
    ManifestRow {
        clip_id: clip_id(&base.file_fingerprint, "image"),
        start_frame: Some(0),
        end_frame: Some(1),
        ..base
    }
}

/// A video's clips that go in: never rejected ones; with [`Include::Accepted`], only accepted
/// clips or the clips of an accepted file.
fn chosen_clips<'a>(
    clips: Option<&'a Vec<Clip>>,
    review: &Review,
    include: Include,
) -> Vec<&'a Clip> {
    clips
        .map(|c| {
            c.iter()
                .filter(|c| c.decision != Decision::Rejected)
                .filter(|c| {
                    include == Include::Unreviewed
                        || c.decision == Decision::Accepted
                        || review.decision == Decision::Accepted
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A video with no clip chosen: the whole video is one clip, its length and frame count from
/// the decode when there was one, else from the headers. A file that declares no duration
/// (a live recording) lasts as long as its frames (counted from its packets at scan time)
/// at its frame rate.
fn whole_video_row(base: ManifestRow, info: &MediaInfo, m: Option<&Metrics>) -> ManifestRow {
    // A triage counted packets, not frames: the length comes from the headers then.
    let m = m.filter(|m| m.level == AnalysisLevel::Deep);
    let start = info.start_secs.unwrap_or(0.0);
    let frames = m
        .map(|m| m.decoded_frames as i64)
        .filter(|f| *f > 0)
        .or(info.frame_count);
    let decoded = m.and_then(|m| m.decoded_duration_secs);
    let duration = decoded
        .or(info.duration_secs)
        .or_else(|| Some(frames? as f64 / info.fps.filter(|f| *f > 0.0)?))
        .unwrap_or(0.0);
    // A declared duration may end where the last frame starts, or a rounding before it
    // (Matroska muxers that write the last timestamp, in milliseconds: 9.966 s for 300
    // frames at 30 fps whose last starts at 9.967 s): the whole video reaches half a frame
    // further, so its last frame is in it (no frame starts after a file's end), and a count
    // made from it is of the frames that start before that end: one too many where the
    // duration ends with the last frame, which the loader finds and leaves out, rather than
    // one too few, which it would never read.
    let fps = info.fps.filter(|f| *f > 0.0);
    let duration = match (decoded, fps) {
        (None, Some(fps)) => duration + 0.5 / fps,
        _ => duration,
    };
    let frames = frames.or_else(|| fps.map(|f| (f * duration - 1e-6).ceil().max(1.0) as i64));
    let (start_pts, end_pts) = match info.time_base {
        Some(tb) => {
            let per_sec = f64::from(tb.den) / f64::from(tb.num);
            let s = (start * per_sec).round() as i64;
            (Some(s), Some(s + (duration * per_sec).round() as i64))
        }
        None => (None, None),
    };
    let range = format!("{}-{}", start_pts.unwrap_or(0), end_pts.unwrap_or(0));
    ManifestRow {
        clip_id: clip_id(&base.file_fingerprint, &range),
        start_secs: start,
        end_secs: start + duration,
        start_frame: Some(0),
        end_frame: frames,
        start_pts,
        end_pts,
        ..base
    }
}

/// A video with no clip chosen but some rejected: the spans of `whole` between the rejected
/// clips (nothing a person rejected goes in); `whole` itself when none was rejected.
fn outside_rejected(whole: ManifestRow, rejected: &[&Clip]) -> Vec<ManifestRow> {
    if rejected.is_empty() {
        return vec![whole];
    }
    let mut rejected = rejected.to_vec();
    rejected.sort_by_key(|c| (c.start_pts, c.end_pts));
    // A bound of a span: seconds, frame, pts.
    type Bound = (f64, Option<i64>, Option<i64>);
    let mut spans: Vec<(Bound, Bound)> = Vec::new();
    let mut from: Bound = (whole.start_secs, whole.start_frame, whole.start_pts);
    for c in rejected {
        if c.start_secs > from.0 {
            spans.push((from, (c.start_secs, c.start_frame, Some(c.start_pts))));
        }
        if c.end_secs > from.0 {
            from = (c.end_secs, c.end_frame, Some(c.end_pts));
        }
    }
    if whole.end_secs > from.0 {
        spans.push((from, (whole.end_secs, whole.end_frame, whole.end_pts)));
    }
    spans
        .into_iter()
        .map(|(a, b)| {
            let range = format!(
                "{}-{}@{}",
                a.2.unwrap_or(0),
                b.2.unwrap_or(0),
                whole.time_base.as_deref().unwrap_or("")
            );
            ManifestRow {
                clip_id: clip_id(&whole.file_fingerprint, &range),
                start_secs: a.0,
                end_secs: b.0,
                start_frame: a.1,
                end_frame: b.1,
                start_pts: a.2,
                end_pts: b.2,
                ..whole.clone()
            }
        })
        .collect()
}

/// The row of one chosen clip of a video, with its boundaries and label (its file's when it
/// has none).
fn clip_row(base: &ManifestRow, c: &Clip) -> ManifestRow {
    let range = format!("{}-{}@{}", c.start_pts, c.end_pts, c.time_base.to_text());
    ManifestRow {
        clip_id: clip_id(&base.file_fingerprint, &range),
        start_secs: c.start_secs,
        end_secs: c.end_secs,
        start_frame: c.start_frame,
        end_frame: c.end_frame,
        start_pts: Some(c.start_pts),
        end_pts: Some(c.end_pts),
        time_base: Some(c.time_base.to_text()),
        // A clip without a label of its own takes its file's.
        label: c.label.clone().or_else(|| base.label.clone()),
        ..base.clone()
    }
}

/// The split of each group (by group key) in the latest version of the manifest, when it was
/// split with the same shares, stratification and seed: what a stratified split keeps.
fn previous_splits(
    catalog: &Catalog,
    options: &ExportOptions,
) -> Result<HashMap<String, String>, ManifestError> {
    let project = catalog.project_dir();
    let Some(last) = crate::versions(project, &options.name)?.pop() else {
        return Ok(HashMap::new());
    };
    if last.split != options.split || last.split_seed != options.split_seed {
        return Ok(HashMap::new());
    }
    // A version that cannot be read back (written as CSV only, or damaged since) keeps no
    // splits: this one is assigned afresh, as a first version is.
    let rows = match crate::read_version(project, &options.name, last.version) {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!(
                "{} v{:04}: its splits are not kept ({e})",
                options.name,
                last.version
            );
            return Ok(HashMap::new());
        }
    };
    Ok(rows
        .into_iter()
        .filter_map(|r| Some((r.group_key, r.split?)))
        .collect())
}

/// Give every row its split when the options ask for splits: from its group key and the seed,
/// or, stratified by label, from its group's label and the shares of that label
/// ([`crate::SplitSpec::assign_stratified`]; a group's label is the one most of its rows
/// have, on a tie a label rather than none, then the first in order; `previous` holds the
/// parent version's splits).
fn assign_splits(
    rows: &mut [ManifestRow],
    options: &ExportOptions,
    previous: &HashMap<String, String>,
) {
    let Some(spec) = &options.split else {
        return;
    };
    if spec.stratify.is_none() {
        for r in rows {
            r.split = Some(spec.assign(&r.group_key, options.split_seed).to_string());
        }
        return;
    }
    let mut labels: HashMap<&str, HashMap<Option<&str>, usize>> = HashMap::new();
    for r in rows.iter() {
        *labels
            .entry(&r.group_key)
            .or_default()
            .entry(r.label.as_deref())
            .or_default() += 1;
    }
    let mut groups: Vec<(&str, Option<&str>)> = labels
        .iter()
        .map(|(key, counts)| {
            let label = counts
                .iter()
                .max_by(|a, b| {
                    a.1.cmp(b.1)
                        .then_with(|| a.0.is_some().cmp(&b.0.is_some()))
                        .then_with(|| b.0.cmp(a.0))
                })
                .and_then(|(l, _)| *l);
            (*key, label)
        })
        .collect();
    groups.sort_unstable();
    let splits = spec.assign_stratified(&groups, options.split_seed, previous);
    let split_of: HashMap<String, String> = groups
        .iter()
        .zip(splits)
        .map(|((key, _), split)| (key.to_string(), split.to_string()))
        .collect();
    for r in rows {
        r.split = split_of.get(&r.group_key).cloned();
    }
}

/// Sort the rows by clip id, keep one row per clip id, and count the rows by kind and split.
fn sort_and_count(mut rows: Vec<ManifestRow>, mut counts: Counts) -> (Vec<ManifestRow>, Counts) {
    rows.sort_by(|a, b| a.clip_id.cmp(&b.clip_id));
    rows.dedup_by(|a, b| a.clip_id == b.clip_id);
    counts.rows = rows.len() as u64;
    for r in &rows {
        *counts
            .by_kind
            .entry(r.kind.as_str().to_string())
            .or_default() += 1;
        if let Some(s) = &r.split {
            *counts.by_split.entry(s.clone()).or_default() += 1;
        }
    }
    (rows, counts)
}

/// Stable clip identity: the file's content fingerprint and the clip's boundaries.
fn clip_id(fingerprint: &str, range: &str) -> String {
    format!(
        "{:016x}",
        xxh3_64(format!("{fingerprint}|{range}").as_bytes())
    )
}
