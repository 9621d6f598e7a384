//! torchcodec's frame maps (`export --format frame-maps`): for each source video of a version
//! whose deep pass left a frame table, `{"frames": [{"pts", "duration", "key_frame"}]}` in
//! the stream's time base, every frame in presentation order, which torchcodec's
//! `VideoDecoder(..., custom_frame_mappings=open(file))` takes to seek exactly without
//! scanning the file first. An index (`vNNNN.frame-maps.json`) names each video's map.

use std::collections::BTreeMap;

use serde::Serialize;

use framecull_model::FrameTable;

/// What `vNNNN.frame-maps.json` says.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FrameMapIndex {
    /// The map of each video, by its path in the manifest.
    pub maps: BTreeMap<String, String>,
    /// Videos without a map, by reason, and how many.
    pub left_out: BTreeMap<String, u64>,
}

/// The map file of a video, by its content fingerprint.
pub fn file_name(stem: &str, fingerprint: &str) -> String {
    format!("{stem}.frame-map.{fingerprint}.json")
}

/// The map of a frame table, or why there is none: every frame needs a timestamp.
pub fn map_of(table: &FrameTable) -> Result<serde_json::Value, &'static str> {
    let pts: Vec<i64> = table
        .frames
        .iter()
        .map(|f| f.pts)
        .collect::<Option<_>>()
        .ok_or("frames without a timestamp")?;
    if pts.is_empty() {
        return Err("no frames");
    }
    let frames: Vec<serde_json::Value> = pts
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            // Until the next frame; the last lasts as long as the one before it.
            let duration = match (pts.get(i + 1), i.checked_sub(1).map(|j| pts[j])) {
                (Some(&next), _) => next - p,
                (None, Some(before)) => p - before,
                (None, None) => 0,
            };
            serde_json::json!({
                "pts": p,
                "duration": duration.max(0),
                "key_frame": i64::from(table.frames[i].clean_key),
            })
        })
        .collect();
    Ok(serde_json::json!({ "frames": frames }))
}
