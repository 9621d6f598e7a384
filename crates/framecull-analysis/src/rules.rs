//! What each flag means and which settings of `framecull.toml` decide it: one description per
//! flag code and the thresholds a user can move. The window draws them on the histograms and
//! previews a change before it is saved; `framecull flags --code` prints them.

use super::flags::Config;
use framecull_model::{FlagCode, Measure, MediaKind, OUTLIER, outlier_measure};

/// Which side of its threshold a flag catches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Below,
    Above,
}

/// Which files a setting is tested on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    All,
    Videos,
    /// Images (and any other kind that is not a video).
    NotVideos,
}

/// One threshold in `framecull.toml` that decides a flag.
pub struct Setting {
    /// The flag it decides.
    pub code: &'static str,
    /// Its place in `framecull.toml`: `quality.dark_below`.
    pub key: &'static str,
    /// The measure it is compared with, when that is one of the window's measures.
    pub measure: Option<Measure>,
    pub side: Side,
    pub applies: Applies,
    /// The setting in the measure's units is `value * scale` (pixels against megapixels).
    pub scale: f64,
    /// The largest meaningful value (1 for shares, 255 for brightness, 8 bits of entropy).
    pub max: f64,
    /// Whole numbers only (pixel counts).
    pub integer: bool,
    /// The rule may be turned off (no value); a required setting always has one.
    pub optional: bool,
    get: fn(&Config) -> Option<f64>,
    set: fn(&mut Config, Option<f64>),
}

impl Setting {
    /// Its value in `config` (`None`: not set, the rule is off).
    pub fn value(&self, config: &Config) -> Option<f64> {
        (self.get)(config)
    }

    /// Set it in `config` (`None` turns an optional rule off; a required setting keeps its
    /// value). Integers are rounded; values are clamped to 0..=max.
    pub fn set(&self, config: &mut Config, value: Option<f64>) {
        let value = value.map(|v| {
            let v = v.clamp(0.0, self.max);
            if self.integer { v.round() } else { v }
        });
        (self.set)(config, value)
    }

    /// Whether a file of `kind` with `measured` (in the measure's units) is caught at
    /// threshold `value` (in the setting's units).
    pub fn catches(&self, value: f64, kind: MediaKind, measured: f64) -> bool {
        let applies = match self.applies {
            Applies::All => true,
            Applies::Videos => kind == MediaKind::Video,
            Applies::NotVideos => kind != MediaKind::Video,
        };
        let t = value * self.scale;
        applies
            && match self.side {
                Side::Below => measured < t,
                Side::Above => measured > t,
            }
    }

    /// `quality.dark_below = 25`, or `rules.min_width (not set)`.
    pub fn describe(&self, config: &Config) -> String {
        match self.value(config) {
            Some(v) if self.integer => format!("{} = {v:.0}", self.key),
            Some(v) => format!("{} = {v}", self.key),
            None => format!("{} (not set)", self.key),
        }
    }
}

macro_rules! is_optional {
    (optional) => {
        true
    };
    (required) => {
        false
    };
}

macro_rules! is_integer {
    (f64) => {
        false
    };
    ($other:tt) => {
        true
    };
}

/// Reading and writing a setting's field: optional ones (`Option`) and required ones.
macro_rules! access {
    (get optional $section:ident $field:ident $ty:tt) => {
        |c| c.$section.$field.map(|v| v as f64)
    };
    (set optional $section:ident $field:ident $ty:tt) => {
        |c, v| c.$section.$field = v.map(|v| v as $ty)
    };
    (get required $section:ident $field:ident $ty:tt) => {
        |c| Some(c.$section.$field as f64)
    };
    (set required $section:ident $field:ident $ty:tt) => {
        |c, v| {
            if let Some(v) = v {
                c.$section.$field = v as $ty;
            }
        }
    };
}

macro_rules! setting {
    ($code:expr, $section:ident . $field:ident, $measure:expr, $side:ident, $applies:ident,
     $scale:expr, $max:expr, $presence:ident $ty:tt) => {
        Setting {
            code: $code,
            key: concat!(stringify!($section), ".", stringify!($field)),
            measure: $measure,
            side: Side::$side,
            applies: Applies::$applies,
            scale: $scale,
            max: $max,
            integer: is_integer!($ty),
            optional: is_optional!($presence),
            get: access!(get $presence $section $field $ty),
            set: access!(set $presence $section $field $ty),
        }
    };
}

/// Every threshold setting, by flag.
pub static SETTINGS: [Setting; 19] = [
    setting!(FlagCode::ResolutionBelowMin.as_str(), rules.min_width, Some(Measure::Width), Below, All, 1.0, f64::MAX, optional u32),
    setting!(FlagCode::ResolutionBelowMin.as_str(), rules.min_height, Some(Measure::Height), Below, All, 1.0, f64::MAX, optional u32),
    setting!(FlagCode::ResolutionAboveMax.as_str(), rules.max_width, Some(Measure::Width), Above, All, 1.0, f64::MAX, optional u32),
    setting!(FlagCode::ResolutionAboveMax.as_str(), rules.max_height, Some(Measure::Height), Above, All, 1.0, f64::MAX, optional u32),
    setting!(FlagCode::AspectOutOfRange.as_str(), rules.min_aspect, Some(Measure::Aspect), Below, All, 1.0, f64::MAX, optional f64),
    setting!(FlagCode::AspectOutOfRange.as_str(), rules.max_aspect, Some(Measure::Aspect), Above, All, 1.0, f64::MAX, optional f64),
    setting!(FlagCode::DurationBelowMin.as_str(), rules.min_duration_secs, Some(Measure::DurationSecs), Below, Videos, 1.0, f64::MAX, optional f64),
    setting!(FlagCode::DurationAboveMax.as_str(), rules.max_duration_secs, Some(Measure::DurationSecs), Above, Videos, 1.0, f64::MAX, optional f64),
    setting!(FlagCode::FpsBelowMin.as_str(), rules.min_fps, Some(Measure::Fps), Below, Videos, 1.0, f64::MAX, optional f64),
    setting!(FlagCode::FpsAboveMax.as_str(), rules.max_fps, Some(Measure::Fps), Above, Videos, 1.0, f64::MAX, optional f64),
    setting!(FlagCode::Dark.as_str(), quality.dark_below, Some(Measure::Brightness), Below, All, 1.0, 255.0, required f64),
    setting!(FlagCode::Overexposed.as_str(), quality.bright_above, Some(Measure::Brightness), Above, All, 1.0, 255.0, required f64),
    setting!(FlagCode::LowInformation.as_str(), quality.low_entropy_below, None, Below, All, 1.0, 8.0, required f64),
    setting!(FlagCode::Black.as_str(), quality.black_share_above, None, Above, Videos, 1.0, 1.0, required f64),
    setting!(FlagCode::Frozen.as_str(), quality.frozen_share_above, None, Above, Videos, 1.0, 1.0, required f64),
    setting!(FlagCode::DecodeErrors.as_str(), quality.decode_error_share, None, Above, Videos, 1.0, 1.0, required f64),
    setting!(FlagCode::TooLarge.as_str(), limits.max_image_pixels, Some(Measure::Megapixels), Above, NotVideos, 1e-6, f64::MAX, required u64),
    setting!(FlagCode::TooLarge.as_str(), limits.max_frame_pixels, Some(Measure::Megapixels), Above, Videos, 1e-6, f64::MAX, required u64),
    setting!(OUTLIER, statistics.max_mads, None, Above, All, 1.0, f64::MAX, required f64),
];

/// The settings that decide flag `code` (every `outlier_*` flag shares `statistics.max_mads`).
pub fn settings_of(code: &str) -> Vec<&'static Setting> {
    let code = if outlier_measure(code).is_some() {
        OUTLIER
    } else {
        code
    };
    SETTINGS.iter().filter(|s| s.code == code).collect()
}

/// The settings compared with `measure` that are set in `config`, with their value in the
/// measure's units: the lines the histograms draw.
pub fn lines_on(measure: Measure, config: &Config) -> Vec<(&'static Setting, f64)> {
    SETTINGS
        .iter()
        .filter(|s| s.measure == Some(measure))
        .filter_map(|s| Some((s, s.value(config)? * s.scale)))
        .collect()
}

/// What flag `code` means and where it comes from, in a sentence; `None` for a code this
/// version does not know.
pub fn describe(code: &str) -> Option<String> {
    if let Some(measure) = outlier_measure(code) {
        return Some(format!(
            "Statistical outlier: the file's {} is more than statistics.max_mads robust \
             deviations (MADs scaled to a standard deviation) from the median of files of its \
             kind",
            measure.name().replace('_', " ")
        ));
    }
    FlagCode::parse(code).map(|c| c.explanation().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_reads_and_writes_its_own_field() {
        for s in &SETTINGS {
            let mut config = Config::default();
            s.set(&mut config, Some(7.0));
            assert_eq!(s.value(&config), Some(7.0f64.min(s.max)), "{}", s.key);
            s.set(&mut config, Some(-1.0));
            assert_eq!(s.value(&config), Some(0.0), "{}", s.key);
            for other in SETTINGS.iter().filter(|o| o.key != s.key) {
                assert_eq!(
                    other.value(&config),
                    other.value(&Config::default()),
                    "setting {} changed {}",
                    s.key,
                    other.key
                );
            }
            assert!(
                describe(s.code).is_some() || s.code == "outlier",
                "{}",
                s.code
            );
            // `optional` says what turning it off does.
            s.set(&mut config, None);
            assert_eq!(s.value(&config).is_none(), s.optional, "{}", s.key);
        }
    }

    #[test]
    fn settings_are_found_by_their_keys_in_the_config_file() {
        let mut config = Config::default();
        for s in &SETTINGS {
            s.set(&mut config, Some(3.0));
        }
        let text = toml::to_string(&config).unwrap_or_default();
        let table: toml::Table = toml::from_str(&text).unwrap_or_default();
        for s in &SETTINGS {
            let (section, field) = s.key.split_once('.').unwrap_or_default();
            let v = &table[section][field];
            let want = 3f64.min(s.max);
            assert!(
                v.as_float() == Some(want) || v.as_integer() == Some(want as i64),
                "{} = {v}",
                s.key
            );
        }
    }

    #[test]
    fn a_threshold_catches_its_side_and_kind_only() {
        let dark = settings_of("dark")[0];
        assert!(dark.catches(25.0, MediaKind::Image, 24.9));
        assert!(!dark.catches(25.0, MediaKind::Image, 25.0));
        let frames = settings_of("too_large")
            .into_iter()
            .find(|s| s.applies == Applies::Videos)
            .map(|s| (s, s.scale));
        let (frames, scale) = frames.unwrap_or((dark, 1.0));
        assert_eq!(scale, 1e-6);
        assert!(frames.catches(1e6, MediaKind::Video, 1.5));
        assert!(!frames.catches(1e6, MediaKind::Image, 1.5));
        assert_eq!(settings_of("outlier_fps")[0].key, "statistics.max_mads");
    }
}
