//! Flags with reasons: integrity findings from decoding, rules from the project config, and
//! duplicates. Statistical outliers are in [`super::outliers`]. Pure: the caller loads the
//! config and the catalog.

use framecull_model::{
    AnalysisLevel, DupInfo, FieldOrder, Flag, FlagCode, FlagSource, Item, ItemStatus, MediaKind,
    Metrics, Severity, count,
};

mod config;
pub use config::{Config, Duplicates, Limits, QualityRules, Rules, Statistics};

fn flag(code: FlagCode, severity: Severity, source: FlagSource, reason: String) -> Flag {
    Flag {
        code: code.as_str().to_string(),
        severity,
        reason,
        source,
    }
}

fn secs(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2} s")
    } else {
        format!("{v:.1} s")
    }
}

/// Colourfulness (Hasler and Süsstrunk) below which a picture or video has no colour.
const GRAYSCALE_BELOW: f64 = 2.0;

/// The flags that say a file is broken (not merely odd): what a triage must find wherever the
/// deep pass finds it, `suspect` aside.
pub const INTEGRITY: [FlagCode; 8] = [
    FlagCode::Undecodable,
    FlagCode::Unreadable,
    FlagCode::DecodeErrors,
    FlagCode::Truncated,
    FlagCode::FrameCountMismatch,
    FlagCode::Timestamps,
    FlagCode::RepeatFrames,
    FlagCode::ResolutionChange,
];

/// Whether `code` is one of the [`INTEGRITY`] flags'.
pub fn is_integrity(code: &str) -> bool {
    INTEGRITY.iter().any(|f| f.as_str() == code)
}

/// Flags from the probe, the decode pass and the config rules for one item.
pub fn item_flags(item: &Item, metrics: Option<&Metrics>, config: &Config) -> Vec<Flag> {
    let mut out = Vec::new();
    let reason = || {
        item.error
            .clone()
            .unwrap_or_else(|| "no reason recorded".into())
    };
    match item.status {
        ItemStatus::Missing => return out,
        ItemStatus::Error => out.push(flag(
            FlagCode::Unreadable,
            Severity::Error,
            FlagSource::Probe,
            reason(),
        )),
        ItemStatus::Unsupported => out.push(flag(
            FlagCode::Unsupported,
            Severity::Warning,
            FlagSource::Probe,
            reason(),
        )),
        ItemStatus::Ok => {}
    }
    if let Some(m) = metrics {
        decode_flags(item, m, config, &mut out);
    }
    if item.status == ItemStatus::Ok {
        rule_flags(item, metrics, config, &mut out);
    }
    out
}

/// What the interlacing tests showed (`analysis::fields`), and whether the frames say so.
fn interlaced_reason(order: FieldOrder, m: &Metrics) -> String {
    let combed = if order == FieldOrder::Tff {
        m.tff_frames
    } else {
        m.bff_frames
    };
    let undetermined =
        m.fields_tested - (m.tff_frames + m.bff_frames + m.progressive_frames).min(m.fields_tested);
    let marks = match m.declared_field_order {
        Some(declared) if declared == order => "; the frames are marked so".to_string(),
        Some(FieldOrder::Progressive) => {
            "; the frames are marked progressive, so what reads the marks will not deinterlace"
                .to_string()
        }
        Some(declared) => format!(
            "; the frames are marked {}, so deinterlacing by the marks swaps the fields",
            declared.words()
        ),
        None => String::new(),
    };
    format!(
        "combed, {}, in {combed} of {} frames tested ({} tff, {} bff, {} progressive, \
         {undetermined} undetermined; {} with a repeated field){marks}",
        order.words(),
        m.fields_tested,
        m.tff_frames,
        m.bff_frames,
        m.progressive_frames,
        m.repeated_fields,
    )
}

fn decode_flags(item: &Item, m: &Metrics, config: &Config, out: &mut Vec<Flag>) {
    let d = match m.level {
        AnalysisLevel::Triage => FlagSource::Triage,
        AnalysisLevel::None | AnalysisLevel::Deep => FlagSource::Decode,
    };
    // The triage read packets, the deep pass decoded frames: the reasons say which.
    let (decode, frames) = if m.level == AnalysisLevel::Triage {
        ("are in the packets", "packet")
    } else {
        ("decode", "frame")
    };
    if let Some(why) = &m.undecodable {
        // A probe error already says the file is unreadable.
        if item.status == ItemStatus::Ok {
            out.push(flag(FlagCode::Undecodable, Severity::Error, d, why.clone()));
        }
        return;
    }
    if let Some(why) = &m.no_decoder {
        out.push(flag(FlagCode::NoDecoder, Severity::Warning, d, why.clone()));
        return;
    }
    if let Some(why) = &m.structure_error {
        out.push(flag(
            FlagCode::ImageTruncated,
            Severity::Error,
            d,
            why.clone(),
        ));
    }
    decode_error_flags(item, m, config, d, frames, out);
    if item.kind != MediaKind::Video {
        return;
    }
    frame_count_flags(item, m, d, decode, frames, out);
    stream_flags(m, d, out);
    picture_flags(item, m, config, d, out);
    if let Some(why) = &m.suspect {
        out.push(flag(
            FlagCode::Suspect,
            Severity::Warning,
            d,
            format!("{why}: deepen to know (framecull analyze --where 'flag:suspect')"),
        ));
    }
    if m.timed_out {
        out.push(flag(
            FlagCode::TimedOut,
            Severity::Warning,
            d,
            format!(
                "analysis stopped at the per-file time budget after {}",
                count(m.decoded_frames, frames)
            ),
        ));
    }
}

/// The errors met decoding the file or, where every frame decoded, the decoder's messages.
fn decode_error_flags(
    item: &Item,
    m: &Metrics,
    config: &Config,
    d: FlagSource,
    frames: &str,
    out: &mut Vec<Flag>,
) {
    if m.decode_errors > 0 {
        let share = m.decode_errors as f64 / m.decoded_frames.max(1) as f64;
        let severity =
            if share >= config.quality.decode_error_share || item.kind == MediaKind::Image {
                Severity::Error
            } else {
                Severity::Warning
            };
        let first = m
            .first_error
            .as_deref()
            .map(|e| format!("; first: {e}"))
            .unwrap_or_default();
        let what = if item.kind == MediaKind::Image {
            "the image decodes with errors".to_string()
        } else {
            format!(
                "{} in {}",
                count(m.decode_errors, "decode error"),
                count(m.decoded_frames, frames)
            )
        };
        out.push(flag(
            FlagCode::DecodeErrors,
            severity,
            d,
            format!("{what}{first}"),
        ));
    } else if m.decoder_messages > 0 {
        let first = m
            .first_message
            .as_deref()
            .map(|e| format!("; first: {e}"))
            .unwrap_or_default();
        // Damaged metadata (EXIF, APP segments) does not touch the picture.
        let metadata_only = m.first_message.as_deref().is_some_and(|e| {
            let e = e.to_ascii_lowercase();
            e.contains("exif") || e.contains("app fields")
        });
        let (code, severity) = if metadata_only {
            (FlagCode::MetadataErrors, Severity::Info)
        } else {
            (FlagCode::DecoderMessages, Severity::Warning)
        };
        out.push(flag(
            code,
            severity,
            d,
            format!(
                "FFmpeg reported {} error{} while reading the file, though every frame decoded{first}",
                m.decoder_messages,
                if m.decoder_messages == 1 { "" } else { "s" }
            ),
        ));
    }
}

/// A video's length against its header: truncated, frames that repeat, or fewer or more
/// frames than it declares.
fn frame_count_flags(
    item: &Item,
    m: &Metrics,
    d: FlagSource,
    decode: &str,
    frames: &str,
    out: &mut Vec<Flag>,
) {
    if m.truncated {
        let declared = item.info.duration_secs.unwrap_or(0.0);
        let decoded = m.decoded_duration_secs.unwrap_or(0.0);
        out.push(flag(
            FlagCode::Truncated,
            Severity::Error,
            d,
            format!(
                "only {} of the declared {} {decode}: the file is truncated",
                secs(decoded),
                secs(declared)
            ),
        ));
    }
    if m.repeat_frames > 0 {
        out.push(flag(
            FlagCode::RepeatFrames,
            Severity::Info,
            d,
            format!(
                "{} of the {} the header declares carry no data (repeats of the previous frame); {} {decode}",
                m.repeat_frames,
                count(item.info.frame_count.unwrap_or(0).max(0) as u64, "frame"),
                m.decoded_frames
            ),
        ));
    } else if let Some(declared) = item.info.frame_count {
        // Frames an edit list discards are counted by the header and shown never.
        let discarded = m.discarded_frames as i64;
        let shown = declared - discarded;
        let decoded = m.decoded_frames as i64;
        let tolerance = 1.max(shown / 100);
        if (decoded - shown).abs() > tolerance && !m.timed_out && !m.truncated {
            let before_start = if discarded > 0 {
                format!(", {discarded} of them before its edit list's start")
            } else {
                String::new()
            };
            out.push(flag(
                FlagCode::FrameCountMismatch,
                Severity::Warning,
                d,
                format!(
                    "{} {decode}; the header declares {declared}{before_start}",
                    count(decoded.max(0) as u64, frames)
                ),
            ));
        }
    }
}

/// A video's timestamps out of order, a variable frame rate, and a frame size that changes.
fn stream_flags(m: &Metrics, d: FlagSource, out: &mut Vec<Flag>) {
    if m.pts_backwards > 0 || m.pts_repeats > 0 {
        out.push(flag(
            FlagCode::Timestamps,
            Severity::Warning,
            d,
            timestamp_reason(m.pts_backwards, m.pts_repeats),
        ));
    }
    if m.vfr == Some(true) {
        out.push(flag(
            FlagCode::Vfr,
            Severity::Info,
            d,
            format!(
                "variable frame rate: frame intervals vary by {:.0}% (sample by timestamp, not by frame index)",
                m.interval_cv.unwrap_or(0.0) * 100.0
            ),
        ));
    }
    if m.resolution_changes > 0 {
        out.push(flag(
            FlagCode::ResolutionChange,
            Severity::Warning,
            d,
            match m.level {
                AnalysisLevel::Triage => format!(
                    "the frame size changes mid-stream ({} in the frames decoded)",
                    count(m.resolution_changes, "change")
                ),
                _ => format!(
                    "the frame size changes {} times mid-stream",
                    m.resolution_changes
                ),
            },
        ));
    }
}

/// What a video's frames show: black, frozen, bars around the picture, interlacing.
fn picture_flags(item: &Item, m: &Metrics, config: &Config, d: FlagSource, out: &mut Vec<Flag>) {
    if let Some(share) = m
        .black_share
        .filter(|s| *s >= config.quality.black_share_above)
    {
        out.push(flag(
            FlagCode::Black,
            Severity::Warning,
            d,
            format!("{:.0}% of frames are black", share * 100.0),
        ));
    }
    if let Some(share) = m
        .frozen_share
        .filter(|s| *s >= config.quality.frozen_share_above && m.decoded_frames > 10)
    {
        out.push(flag(
            FlagCode::Frozen,
            Severity::Warning,
            d,
            format!(
                "{:.0}% of frames repeat the previous frame exactly (frozen picture)",
                share * 100.0
            ),
        ));
    }
    if let (Some(crop), Some(w), Some(h)) = (m.content_crop, item.info.width, item.info.height) {
        let content = format!(
            "the content is {}x{} at ({}, {}) of {w}x{h} (crop={crop})",
            crop.width, crop.height, crop.x, crop.y
        );
        // A barred side always moves the crop's edge (bars are on both sides); an axis
        // without bars keeps the picture's size.
        if crop.y > 0 {
            out.push(flag(
                FlagCode::Letterbox,
                Severity::Info,
                FlagSource::Rule,
                format!("bars above and below the picture: {content}"),
            ));
        }
        if crop.x > 0 {
            out.push(flag(
                FlagCode::Pillarbox,
                Severity::Info,
                FlagSource::Rule,
                format!("bars left and right of the picture: {content}"),
            ));
        }
    }
    if let Some(order) = m.field_order.filter(|o| o.interlaced()) {
        out.push(flag(
            FlagCode::Interlaced,
            Severity::Warning,
            FlagSource::Rule,
            interlaced_reason(order, m),
        ));
    }
}

fn rule_flags(item: &Item, metrics: Option<&Metrics>, config: &Config, out: &mut Vec<Flag>) {
    size_flags(item, config, out);
    if item.kind == MediaKind::Video {
        duration_and_fps_flags(item, &config.rules, out);
    }
    let Some(m) = metrics else { return };
    quality_flags(item, m, &config.quality, out);
}

/// A picture too large to decode, smaller or larger than the rules allow, or with an aspect
/// ratio outside theirs.
fn size_flags(item: &Item, config: &Config, out: &mut Vec<Flag>) {
    let r = &config.rules;
    let s = FlagSource::Rule;
    let i = &item.info;
    if let (Some(w), Some(h)) = (i.width, i.height) {
        if let Some(why) = config.limits.over(item.kind, w, h) {
            out.push(flag(FlagCode::TooLarge, Severity::Error, s, why));
        }
        let mut small = Vec::new();
        if let Some(min) = r.min_width.filter(|m| w < *m) {
            small.push(format!("width {w} is below the minimum {min}"));
        }
        if let Some(min) = r.min_height.filter(|m| h < *m) {
            small.push(format!("height {h} is below the minimum {min}"));
        }
        if !small.is_empty() {
            out.push(flag(
                FlagCode::ResolutionBelowMin,
                Severity::Warning,
                s,
                small.join("; "),
            ));
        }
        let mut large = Vec::new();
        if let Some(max) = r.max_width.filter(|m| w > *m) {
            large.push(format!("width {w} is above the maximum {max}"));
        }
        if let Some(max) = r.max_height.filter(|m| h > *m) {
            large.push(format!("height {h} is above the maximum {max}"));
        }
        if !large.is_empty() {
            out.push(flag(
                FlagCode::ResolutionAboveMax,
                Severity::Warning,
                s,
                large.join("; "),
            ));
        }
        let turned = matches!(i.rotation_deg, Some(90) | Some(270))
            || matches!(i.exif_orientation, Some(5..=8));
        let aspect = if turned {
            f64::from(h) / f64::from(w)
        } else {
            f64::from(w) / f64::from(h)
        };
        let below = r.min_aspect.is_some_and(|m| aspect < m);
        let above = r.max_aspect.is_some_and(|m| aspect > m);
        if below || above {
            out.push(flag(
                FlagCode::AspectOutOfRange,
                Severity::Warning,
                s,
                format!(
                    "aspect ratio {aspect:.2} is outside {:.2}-{:.2}",
                    r.min_aspect.unwrap_or(0.0),
                    r.max_aspect.unwrap_or(f64::INFINITY)
                ),
            ));
        }
    }
}

/// A video's duration and frame rate below the rules' minimum or above their maximum.
fn duration_and_fps_flags(item: &Item, r: &Rules, out: &mut Vec<Flag>) {
    let s = FlagSource::Rule;
    let i = &item.info;
    if let Some(d) = i.duration_secs {
        if let Some(min) = r.min_duration_secs.filter(|m| d < *m) {
            out.push(flag(
                FlagCode::DurationBelowMin,
                Severity::Warning,
                s,
                format!("duration {} is below the minimum {}", secs(d), secs(min)),
            ));
        }
        if let Some(max) = r.max_duration_secs.filter(|m| d > *m) {
            out.push(flag(
                FlagCode::DurationAboveMax,
                Severity::Warning,
                s,
                format!("duration {} is above the maximum {}", secs(d), secs(max)),
            ));
        }
    }
    if let Some(f) = i.fps {
        if let Some(min) = r.min_fps.filter(|m| f < *m) {
            out.push(flag(
                FlagCode::FpsBelowMin,
                Severity::Warning,
                s,
                format!("{f:.2} fps is below the minimum {min}"),
            ));
        }
        if let Some(max) = r.max_fps.filter(|m| f > *m) {
            out.push(flag(
                FlagCode::FpsAboveMax,
                Severity::Warning,
                s,
                format!("{f:.2} fps is above the maximum {max}"),
            ));
        }
    }
}

/// What the picture shows against the quality rules: dark, overexposed, greyscale, nearly
/// uniform.
fn quality_flags(item: &Item, m: &Metrics, q: &QualityRules, out: &mut Vec<Flag>) {
    let s = FlagSource::Rule;
    if let Some(b) = m.brightness {
        if b < q.dark_below {
            out.push(flag(
                FlagCode::Dark,
                Severity::Warning,
                s,
                format!("mean brightness {b:.0} is below {:.0} (dark)", q.dark_below),
            ));
        } else if b > q.bright_above {
            out.push(flag(
                FlagCode::Overexposed,
                Severity::Warning,
                s,
                format!(
                    "mean brightness {b:.0} is above {:.0} (overexposed)",
                    q.bright_above
                ),
            ));
        }
    }
    // Videos: of the frames sampled (a frame a second; a triage's keyframes).
    let (what, mean) = match item.kind {
        MediaKind::Video => ("video", "mean "),
        _ => ("picture", ""),
    };
    if m.colorfulness.is_some_and(|c| c < GRAYSCALE_BELOW) {
        out.push(flag(
            FlagCode::Grayscale,
            Severity::Info,
            s,
            format!("greyscale {what} (no colour)"),
        ));
    }
    if let Some(e) = m.entropy.filter(|e| *e < q.low_entropy_below) {
        out.push(flag(
            FlagCode::LowInformation,
            Severity::Warning,
            s,
            format!(
                "{mean}luma entropy {e:.2} bits is below {:.1} (nearly uniform {what})",
                q.low_entropy_below
            ),
        ));
    }
}

fn timestamp_reason(backwards: u64, repeats: u64) -> String {
    let times = |n: u64| {
        if n == 1 {
            "once".to_string()
        } else {
            format!("{n} times")
        }
    };
    match (backwards, repeats) {
        (0, r) => format!("frame timestamps repeat {}", times(r)),
        (b, 0) => format!("frame timestamps go backwards {}", times(b)),
        (b, r) => format!(
            "frame timestamps go backwards {} and repeat {}",
            times(b),
            times(r)
        ),
    }
}

/// Duplicate flags: byte-identical copies are warnings, near duplicates are information.
pub fn dup_flag(info: &DupInfo, like_path: &str, kind: MediaKind) -> Flag {
    if info.exact {
        flag(
            FlagCode::DuplicateExact,
            Severity::Warning,
            FlagSource::Duplicates,
            format!("byte-identical to {like_path}"),
        )
    } else {
        let what = if kind == MediaKind::Video {
            "footage"
        } else {
            "picture"
        };
        flag(
            FlagCode::DuplicateNear,
            Severity::Info,
            FlagSource::Duplicates,
            format!("same {what} as {like_path} (re-encoded, resized, rotated or trimmed)"),
        )
    }
}
