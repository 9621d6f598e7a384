//! Damage done to a good video the ways storage and transfers do it, for the tests and the
//! benchmark of the triage's recall: bits flipped in keyframes or in predicted frames, a file
//! cut in the middle of a GOP, GOPs dropped, byte ranges zeroed, an MP4 index that points
//! beside its samples or is gone, timestamps rewritten. Each class damages the GOPs it is
//! given (their indexes in the file's order), so that the density of the damage is the
//! caller's choice; the same inputs give the same bytes.

use std::path::Path;

use ffmpeg_next as ff;

use super::{SynthError, best_video, ff_err, remux_video};
use crate::ffmpeg_log;

/// The ways a file is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Damage {
    /// 8 bits flipped in the keyframe of each GOP given.
    KeyFlips,
    /// 8 bits flipped in one predicted frame in the middle of each GOP given.
    PredictedFlips,
    /// The file cut in the middle of the first GOP given (the rest are not used).
    Truncated,
    /// The bytes of each GOP given cut out (the file's last GOP is never dropped). In an MP4
    /// the index is left as it was, so it points at the wrong bytes from there on: a lost
    /// range rather than a clean cut, which MPEG-TS and Matroska resynchronise after.
    DroppedGops,
    /// 4 KiB (at most half the packet) zeroed in the middle packet of each GOP given.
    ZeroedRanges,
    /// MP4 and MOV: 1 KiB inserted before the first sample, the `mdat` box grown to hold it,
    /// so that the index points 1 KiB before every sample. Other containers: not applicable.
    MovedIndex,
    /// MP4 and MOV: the `moov` box (the index) cut out, as a recording stopped before
    /// writing it leaves the file (renamed, FFmpeg would still find it). Other containers:
    /// not applicable.
    MissingIndex,
    /// One packet in each GOP given shows at the time of the next frame shown (a repeated
    /// presentation time), the file remuxed.
    Timestamps,
}

impl Damage {
    pub const ALL: [Damage; 8] = [
        Damage::KeyFlips,
        Damage::PredictedFlips,
        Damage::Truncated,
        Damage::DroppedGops,
        Damage::ZeroedRanges,
        Damage::MovedIndex,
        Damage::MissingIndex,
        Damage::Timestamps,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Damage::KeyFlips => "keyframe_bit_flips",
            Damage::PredictedFlips => "predicted_frame_bit_flips",
            Damage::Truncated => "truncated_mid_gop",
            Damage::DroppedGops => "dropped_gops",
            Damage::ZeroedRanges => "zeroed_ranges",
            Damage::MovedIndex => "moved_index",
            Damage::MissingIndex => "missing_index",
            Damage::Timestamps => "rewritten_timestamps",
        }
    }

    /// Whether the damage is done to each GOP given (its density is the caller's), rather
    /// than once to the file.
    pub fn per_gop(self) -> bool {
        !matches!(
            self,
            Damage::Truncated | Damage::MovedIndex | Damage::MissingIndex
        )
    }

    /// Whether the damage can be done to a file with this extension (the index classes need
    /// an MP4 or MOV).
    pub fn applies_to(self, path: &Path) -> bool {
        match self {
            Damage::MovedIndex | Damage::MissingIndex => is_iso_bmff(path),
            _ => true,
        }
    }
}

fn is_iso_bmff(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    ["mp4", "mov", "m4v"].contains(&ext.to_ascii_lowercase().as_str())
}

/// A packet of the video stream: where its bytes are, and its timestamps.
#[derive(Debug, Clone, Copy)]
pub struct Placed {
    pub pos: usize,
    pub size: usize,
    pub pts: Option<i64>,
    pub dts: Option<i64>,
}

/// The GOPs of the first video stream of `path`, in file order: each its packets in decode
/// order, the first a keyframe (packets before the first keyframe are left out).
pub fn gops(path: &Path) -> Result<Vec<Vec<Placed>>, SynthError> {
    ffmpeg_log::init();
    let mut ictx = ff::format::input(&path).map_err(ff_err("input container"))?;
    let index = best_video(&ictx)?;
    let mut gops: Vec<Vec<Placed>> = Vec::new();
    for (stream, packet) in ictx.packets() {
        if stream.index() != index || packet.position() < 0 {
            continue;
        }
        if packet.is_key() {
            gops.push(Vec::new());
        }
        if let Some(gop) = gops.last_mut() {
            gop.push(Placed {
                pos: packet.position() as usize,
                size: packet.size(),
                pts: packet.pts(),
                dts: packet.dts(),
            });
        }
    }
    Ok(gops)
}

/// `count` GOP indexes out of `total`, spread by `seed` (the same every run): the first and
/// the last GOP are never chosen, so that damage is not where every triage looks first.
pub fn pick(total: usize, count: usize, seed: u64) -> Vec<usize> {
    let inner: Vec<usize> = (1..total.saturating_sub(1)).collect();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut chosen: Vec<usize> = Vec::new();
    let mut left = inner;
    while chosen.len() < count && !left.is_empty() {
        let i = (xorshift(&mut state) % left.len() as u64) as usize;
        chosen.push(left.swap_remove(i));
    }
    chosen.sort_unstable();
    chosen
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Write `src` damaged by `damage` in the GOPs `at` (indexes into [`gops`]) as `dst`. An index
/// class on a file that is not an MP4 or MOV, or GOPs that do not exist, are an error.
pub fn write_damaged(
    src: &Path,
    dst: &Path,
    damage: Damage,
    at: &[usize],
) -> Result<(), SynthError> {
    let io = |source| SynthError::Io {
        path: src.to_path_buf(),
        source,
    };
    let invalid = |what: &'static str| SynthError::Ffmpeg {
        what,
        source: ff::Error::InvalidData,
    };
    if !damage.applies_to(src) {
        return Err(invalid("an MP4 or MOV file for an index damage"));
    }
    if damage == Damage::Timestamps {
        return repeat_timestamps(src, dst, at);
    }
    let gops = gops(src)?;
    if gops.is_empty() || at.iter().any(|&g| g >= gops.len()) || (damage.per_gop() && at.is_empty())
    {
        return Err(invalid("GOPs to damage that the file holds"));
    }
    let mut bytes = std::fs::read(src).map_err(io)?;
    let middle = |g: usize| gops[g][gops[g].len() / 2];
    match damage {
        Damage::KeyFlips => {
            for (n, &g) in at.iter().enumerate() {
                flip_bits(&mut bytes, gops[g][0], n as u64);
            }
        }
        Damage::PredictedFlips => {
            for (n, &g) in at.iter().enumerate() {
                if gops[g].len() < 2 {
                    return Err(invalid("GOPs with a predicted frame"));
                }
                // The middle packet of a GOP of two or more is never its keyframe.
                flip_bits(&mut bytes, middle(g), n as u64);
            }
        }
        Damage::Truncated => {
            let p = middle(at.first().copied().unwrap_or(gops.len() / 2));
            bytes.truncate(p.pos + p.size / 2);
        }
        Damage::DroppedGops => {
            // From the last, so that the positions of the earlier ones still hold.
            for &g in at.iter().rev() {
                if g + 1 >= gops.len() {
                    return Err(invalid("a GOP to drop that is not the file's last"));
                }
                bytes.drain(gops[g][0].pos..gops[g + 1][0].pos);
            }
        }
        Damage::ZeroedRanges => {
            for &g in at {
                let p = middle(g);
                let len = (p.size / 2).min(4096);
                let from = p.pos + p.size / 4;
                bytes[from..from + len].fill(0);
            }
        }
        Damage::MovedIndex => {
            let first = gops[0][0].pos;
            grow_box_around(&mut bytes, first, 1024).ok_or(invalid("an mdat box"))?;
            let mut state = 0x2545_F491_4F6C_DD1Du64;
            let junk: Vec<u8> = (0..1024).map(|_| xorshift(&mut state) as u8 | 1).collect();
            bytes.splice(first..first, junk);
        }
        Damage::MissingIndex => {
            let at = top_level_boxes(&bytes)
                .into_iter()
                .find(|b| &b.kind == b"moov")
                .ok_or(invalid("a moov box"))?;
            bytes.drain(at.start..at.start + at.size);
        }
        Damage::Timestamps => unreachable!("remuxed above"),
    }
    std::fs::write(dst, bytes).map_err(|source| SynthError::Io {
        path: dst.to_path_buf(),
        source,
    })
}

/// Flip 8 bits of packet `p` in its last three quarters (past the headers of its slices),
/// placed by `salt`.
fn flip_bits(bytes: &mut [u8], p: Placed, salt: u64) {
    let mut state = (0x9E37_79B9_7F4A_7C15u64 ^ salt.wrapping_mul(0xD6E8_FEB8_6659_FD93)) | 1;
    let span = p.size - p.size / 4;
    for _ in 0..8 {
        let r = xorshift(&mut state);
        let at = p.pos + p.size / 4 + (r as usize) % span.max(1);
        bytes[at] ^= 1 << (r >> 61);
    }
}

/// A top-level ISO BMFF box: where it starts, its header's length and its size.
struct BoxAt {
    start: usize,
    header: usize,
    size: usize,
    kind: [u8; 4],
}

fn top_level_boxes(bytes: &[u8]) -> Vec<BoxAt> {
    let mut boxes = Vec::new();
    let mut at = 0usize;
    while at + 8 <= bytes.len() {
        let size32 = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap_or_default());
        let kind: [u8; 4] = bytes[at + 4..at + 8].try_into().unwrap_or_default();
        let (header, size) = match size32 {
            0 => (8, bytes.len() - at),
            1 if at + 16 <= bytes.len() => {
                let large =
                    u64::from_be_bytes(bytes[at + 8..at + 16].try_into().unwrap_or_default());
                (16, large as usize)
            }
            n => (8, n as usize),
        };
        if size < header {
            break;
        }
        boxes.push(BoxAt {
            start: at,
            header,
            size,
            kind,
        });
        at += size;
    }
    boxes
}

/// Grow by `by` the size of the top-level box holding byte `pos`; `None` if none holds it.
fn grow_box_around(bytes: &mut [u8], pos: usize, by: usize) -> Option<()> {
    let b = top_level_boxes(bytes)
        .into_iter()
        .find(|b| (b.start + b.header..b.start + b.size).contains(&pos))?;
    match b.header {
        16 => {
            let field = &mut bytes[b.start + 8..b.start + 16];
            field.copy_from_slice(&((b.size + by) as u64).to_be_bytes());
        }
        _ if u32::from_be_bytes(bytes[b.start..b.start + 4].try_into().ok()?) == 0 => {}
        _ => {
            let field = &mut bytes[b.start..b.start + 4];
            field.copy_from_slice(&u32::try_from(b.size + by).ok()?.to_be_bytes());
        }
    }
    Some(())
}

/// Remux the video stream of `src` to `dst` (the same kind of container) with one packet in
/// each GOP `at` given the presentation time of the frame shown after it: two frames at one
/// time. A presentation time only grows, so that it stays at or after the decode time.
fn repeat_timestamps(src: &Path, dst: &Path, at: &[usize]) -> Result<(), SynthError> {
    ffmpeg_log::init();
    let gops = gops(src)?;
    if at.is_empty() || at.iter().any(|&g| g >= gops.len()) {
        return Err(SynthError::Ffmpeg {
            what: "GOPs to damage that the file holds",
            source: ff::Error::InvalidData,
        });
    }
    // Per GOP chosen: the packet (by its position in the file) and its new time.
    let mut rewrite: Vec<(usize, i64)> = Vec::new();
    for &g in at {
        let mut shown: Vec<i64> = gops[g].iter().filter_map(|p| p.pts).collect();
        shown.sort_unstable();
        let p = gops[g][gops[g].len() / 2];
        let next = p.pts.and_then(|t| shown.iter().copied().find(|&s| s > t));
        if let Some(next) = next {
            rewrite.push((p.pos, next));
        }
    }
    remux_video(src, dst, |packet| {
        let pos = packet.position();
        if let Some(&(_, t)) = rewrite.iter().find(|(p, _)| pos >= 0 && *p == pos as usize) {
            packet.set_pts(Some(t));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gops_are_picked_inside_the_file_the_same_every_run() {
        let a = pick(30, 3, 7);
        assert_eq!(a, pick(30, 3, 7));
        assert_eq!(a.len(), 3);
        assert!(a.iter().all(|&g| (1..29).contains(&g)), "{a:?}");
        assert_ne!(a, pick(30, 3, 8));
        assert_eq!(pick(30, 40, 1).len(), 28);
        assert!(pick(2, 1, 1).is_empty());
    }

    #[test]
    fn an_mdat_grown_and_a_moov_found() {
        // ftyp (16 bytes), mdat (8 + 8), moov (8).
        let mut bytes = Vec::new();
        bytes.extend(16u32.to_be_bytes());
        bytes.extend(b"ftypisom\0\0\0\0");
        bytes.extend(16u32.to_be_bytes());
        bytes.extend(b"mdat12345678");
        bytes.extend(8u32.to_be_bytes());
        bytes.extend(b"moov");
        let kinds: Vec<[u8; 4]> = top_level_boxes(&bytes).iter().map(|b| b.kind).collect();
        assert_eq!(kinds, [*b"ftyp", *b"mdat", *b"moov"]);
        grow_box_around(&mut bytes, 24, 4).unwrap();
        assert_eq!(&bytes[16..20], &20u32.to_be_bytes());
        assert!(grow_box_around(&mut bytes, 2, 4).is_none());
    }
}
