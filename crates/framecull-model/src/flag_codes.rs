//! Every flag code framecull sets, defined once: the text that catalogs, manifests, `list` and
//! filters hold, where the flag comes from, how bad it usually is, and what it means. A new
//! flag is its computation plus one entry here. Outlier flags are one per measure
//! (`outlier_MEASURE`, [`outlier_code`]).

use crate::measure::Measure;
use crate::metrics::{FlagSource, Severity};

/// The enum of codes and [`FlagCode::ALL`], from one list.
macro_rules! flag_codes {
    ($($code:ident),* $(,)?) => {
        /// A flag code (not an outlier's: see [`outlier_code`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum FlagCode {
            $($code),*
        }

        impl FlagCode {
            /// Every code, in the order `flags` lists them.
            pub const ALL: &'static [FlagCode] = &[$(FlagCode::$code),*];
        }
    };
}

flag_codes!(
    Unreadable,
    Unsupported,
    Undecodable,
    NoDecoder,
    ImageTruncated,
    DecodeErrors,
    DecoderMessages,
    MetadataErrors,
    Truncated,
    Suspect,
    RepeatFrames,
    FrameCountMismatch,
    Timestamps,
    Vfr,
    ResolutionChange,
    Black,
    Frozen,
    Letterbox,
    Pillarbox,
    Interlaced,
    TimedOut,
    TooLarge,
    ResolutionBelowMin,
    ResolutionAboveMax,
    AspectOutOfRange,
    DurationBelowMin,
    DurationAboveMax,
    FpsBelowMin,
    FpsAboveMax,
    Dark,
    Overexposed,
    Grayscale,
    LowInformation,
    DuplicateExact,
    DuplicateNear,
);

/// What a flag code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagSpec {
    /// Its text, as every output holds it.
    pub name: &'static str,
    /// The pass that sets it (a decode flag of a triaged file says `triage`).
    pub source: FlagSource,
    /// Its usual severity (`decode_errors` is an error or a warning by its share of frames).
    pub severity: Severity,
    /// What it means and where it comes from, in a sentence.
    pub explanation: &'static str,
}

const fn spec(
    name: &'static str,
    source: FlagSource,
    severity: Severity,
    explanation: &'static str,
) -> FlagSpec {
    FlagSpec {
        name,
        source,
        severity,
        explanation,
    }
}

impl FlagCode {
    /// The registry itself: one arm per flag code with its name, source, severity and
    /// explanation, each defined here once. Long because it is the table, not an algorithm.
    pub const fn spec(self) -> FlagSpec {
        use FlagSource::{Decode, Duplicates, Probe, Rule};
        use Severity::{Error, Info, Warning};
        match self {
            FlagCode::Unreadable => spec(
                "unreadable",
                Probe,
                Error,
                "The file could not be opened or its header read (probe error)",
            ),
            FlagCode::Unsupported => spec(
                "unsupported",
                Probe,
                Warning,
                "A format or codec this FFmpeg build cannot read",
            ),
            FlagCode::Undecodable => spec(
                "undecodable",
                Decode,
                Error,
                "The header reads, but no picture decodes",
            ),
            FlagCode::NoDecoder => spec(
                "no_decoder",
                Decode,
                Warning,
                "FFmpeg has no decoder for the codec",
            ),
            FlagCode::ImageTruncated => spec(
                "image_truncated",
                Decode,
                Error,
                "The picture's data ends before its structure says it should",
            ),
            FlagCode::DecodeErrors => spec(
                "decode_errors",
                Decode,
                Error,
                "Frames decode with errors; an error when their share of the frames reaches \
                 quality.decode_error_share (always for images), else a warning",
            ),
            FlagCode::DecoderMessages => spec(
                "decoder_messages",
                Decode,
                Warning,
                "FFmpeg reported errors while reading, but every frame decoded",
            ),
            FlagCode::MetadataErrors => spec(
                "metadata_errors",
                Decode,
                Info,
                "Damaged metadata (EXIF, APP segments); the picture is intact",
            ),
            FlagCode::Truncated => spec(
                "truncated",
                Decode,
                Error,
                "Fewer seconds decode than the header declares: the file is cut short",
            ),
            FlagCode::Suspect => spec(
                "suspect",
                FlagSource::Triage,
                Warning,
                "The triage saw what may be damage without proof (runs of zero bytes in \
                 packets, jumps in the timestamps); the deep pass decides",
            ),
            FlagCode::RepeatFrames => spec(
                "repeat_frames",
                Decode,
                Info,
                "Frames the header declares carry no data (repeats of the previous)",
            ),
            FlagCode::FrameCountMismatch => spec(
                "frame_count_mismatch",
                Decode,
                Warning,
                "The decoded frame count differs from the declared by over 1%",
            ),
            FlagCode::Timestamps => spec(
                "timestamps",
                Decode,
                Warning,
                "Timestamps go backwards or repeat: frame order by time is unreliable",
            ),
            FlagCode::Vfr => spec(
                "vfr",
                Decode,
                Info,
                "Variable frame rate: sample by timestamp, not by frame index",
            ),
            FlagCode::ResolutionChange => spec(
                "resolution_change",
                Decode,
                Warning,
                "The frame size changes mid-stream",
            ),
            FlagCode::Black => spec(
                "black",
                Decode,
                Warning,
                "Black frames make up at least quality.black_share_above of the video",
            ),
            FlagCode::Frozen => spec(
                "frozen",
                Decode,
                Warning,
                "Frames repeat exactly for at least quality.frozen_share_above of the video",
            ),
            FlagCode::Letterbox => spec(
                "letterbox",
                Rule,
                Info,
                "Flat bars of one colour above and below the picture in every sampled frame; \
                 the content without them is the row's content_crop",
            ),
            FlagCode::Pillarbox => spec(
                "pillarbox",
                Rule,
                Info,
                "Flat bars of one colour left and right of the picture in every sampled frame; \
                 the content without them is the row's content_crop",
            ),
            FlagCode::Interlaced => spec(
                "interlaced",
                Rule,
                Warning,
                "The picture's two fields (even and odd lines) come from different instants: \
                 moving edges comb unless deinterlaced; field_order says which comes first",
            ),
            FlagCode::TimedOut => spec(
                "timed_out",
                Decode,
                Warning,
                "Deep analysis stopped at the per-file time budget",
            ),
            FlagCode::TooLarge => spec(
                "too_large",
                Rule,
                Error,
                "The picture is larger than the limits (pixels): not decoded, so that a \
                 decompression bomb cannot exhaust memory",
            ),
            FlagCode::ResolutionBelowMin => spec(
                "resolution_below_min",
                Rule,
                Warning,
                "Width or height below rules.min_width / rules.min_height",
            ),
            FlagCode::ResolutionAboveMax => spec(
                "resolution_above_max",
                Rule,
                Warning,
                "Width or height above rules.max_width / rules.max_height",
            ),
            FlagCode::AspectOutOfRange => spec(
                "aspect_out_of_range",
                Rule,
                Warning,
                "Display aspect ratio outside rules.min_aspect-rules.max_aspect",
            ),
            FlagCode::DurationBelowMin => spec(
                "duration_below_min",
                Rule,
                Warning,
                "A video shorter than rules.min_duration_secs",
            ),
            FlagCode::DurationAboveMax => spec(
                "duration_above_max",
                Rule,
                Warning,
                "A video longer than rules.max_duration_secs",
            ),
            FlagCode::FpsBelowMin => spec(
                "fps_below_min",
                Rule,
                Warning,
                "A video frame rate below rules.min_fps",
            ),
            FlagCode::FpsAboveMax => spec(
                "fps_above_max",
                Rule,
                Warning,
                "A video frame rate above rules.max_fps",
            ),
            FlagCode::Dark => spec(
                "dark",
                Rule,
                Warning,
                "Mean brightness (0-255) below quality.dark_below",
            ),
            FlagCode::Overexposed => spec(
                "overexposed",
                Rule,
                Warning,
                "Mean brightness (0-255) above quality.bright_above",
            ),
            FlagCode::Grayscale => spec("grayscale", Rule, Info, "An image without colour"),
            FlagCode::LowInformation => spec(
                "low_information",
                Rule,
                Warning,
                "Luma entropy below quality.low_entropy_below: a nearly uniform image",
            ),
            FlagCode::DuplicateExact => spec(
                "duplicate_exact",
                Duplicates,
                Warning,
                "Byte-identical to another file of the dataset",
            ),
            FlagCode::DuplicateNear => spec(
                "duplicate_near",
                Duplicates,
                Info,
                "The same picture or footage as another file, re-encoded or resized",
            ),
        }
    }

    /// Its text, as every output holds it.
    pub const fn as_str(self) -> &'static str {
        self.spec().name
    }

    pub const fn explanation(self) -> &'static str {
        self.spec().explanation
    }

    /// The code whose text is `name` (not an outlier's).
    pub fn parse(name: &str) -> Option<FlagCode> {
        FlagCode::ALL.iter().copied().find(|c| c.as_str() == name)
    }
}

impl std::fmt::Display for FlagCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outliers' setting's code (`statistics.max_mads` decides every outlier flag).
pub const OUTLIER: &str = "outlier";

/// The code of the outlier flag on `measure`: `outlier_MEASURE`.
pub fn outlier_code(measure: Measure) -> String {
    format!("{OUTLIER}_{}", measure.name())
}

/// The measure an outlier flag's code names, if `code` is one.
pub fn outlier_measure(code: &str) -> Option<Measure> {
    Measure::parse(code.strip_prefix(OUTLIER)?.strip_prefix('_')?)
}

/// Whether `code` is a flag this version sets (an outlier's included).
pub fn is_flag_code(code: &str) -> bool {
    FlagCode::parse(code).is_some() || outlier_measure(code).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_from_its_text_and_no_two_share_one() {
        let mut names: Vec<&str> = FlagCode::ALL.iter().map(|c| c.as_str()).collect();
        for &code in FlagCode::ALL {
            assert_eq!(FlagCode::parse(code.as_str()), Some(code));
            assert_eq!(code.to_string(), code.as_str());
            assert!(!code.explanation().is_empty());
            assert!(is_flag_code(code.as_str()));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FlagCode::ALL.len());
        assert_eq!(outlier_code(Measure::Brightness), "outlier_brightness");
        assert_eq!(
            outlier_measure("outlier_motion_mean"),
            Some(Measure::MotionMean)
        );
        assert_eq!(outlier_measure("outliers"), None);
        assert_eq!(outlier_measure("outlier_frobs"), None);
        for m in Measure::ALL {
            assert_eq!(outlier_measure(&outlier_code(m)), Some(m));
        }
        assert!(!is_flag_code("outlier_") && !is_flag_code("frozn"));
    }
}
