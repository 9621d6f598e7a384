//! Flag rules: limits, picture and video measures, decode errors and files that did not probe.

use framecull::analysis::flags::{Config, QualityRules, Rules, item_flags};
use framecull::model::{
    Flag, FlagSource, Item, ItemStatus, MediaInfo, MediaKind, Metrics, Severity,
};

use super::fake;

fn item(kind: MediaKind, width: u32, height: u32) -> Item {
    let update = fake("f", kind);
    Item {
        id: 1,
        path: "f".into(),
        kind,
        status: ItemStatus::Ok,
        error: None,
        size_bytes: update.size_bytes,
        mtime_ns: 0,
        fingerprint: None,
        info: MediaInfo {
            width: Some(width),
            height: Some(height),
            ..update.probe.info
        },
    }
}

fn video(width: u32, height: u32) -> Item {
    item(MediaKind::Video, width, height)
}

fn image(width: u32, height: u32) -> Item {
    item(MediaKind::Image, width, height)
}

/// `item` changed by `change`.
fn with(mut item: Item, change: impl FnOnce(&mut Item)) -> Item {
    change(&mut item);
    item
}

fn rules(rules: Rules) -> Config {
    Config {
        rules,
        ..Config::default()
    }
}

fn quality(quality: QualityRules) -> Config {
    Config {
        quality,
        ..Config::default()
    }
}

/// Metrics of 100 decoded frames, changed by `set`.
fn measured(set: impl FnOnce(&mut Metrics)) -> Metrics {
    let mut m = Metrics {
        decoded_frames: 100,
        ..Metrics::default()
    };
    set(&mut m);
    m
}

/// The flag `code` on `item`, if it has it (once).
fn flag(item: &Item, metrics: Option<&Metrics>, config: &Config, code: &str) -> Option<Flag> {
    let all = item_flags(item, metrics, config);
    let mut found = all.iter().filter(|f| f.code == code);
    let first = found.next().cloned();
    assert!(found.next().is_none(), "{code} twice: {all:?}");
    first
}

/// Settings, a flag code, a file, what it measured, and the reason the warning should
/// give (`None`: it must not fire).
type Case<'a> = (&'a Config, &'a str, Item, Option<Metrics>, Option<&'a str>);

/// Each case gets its warning from `source` with the reason given, or not at all.
fn expect(source: FlagSource, cases: &[Case]) {
    for (n, (config, code, item, metrics, reason)) in cases.iter().enumerate() {
        let found = flag(item, metrics.as_ref(), config, code).map(|f| {
            assert_eq!((f.severity, f.source), (Severity::Warning, source));
            f.reason
        });
        assert_eq!(found.as_deref(), *reason, "{code}, case {n}");
    }
}

/// Every limit of `Rules` and the picture limits of `QualityRules`: past the limit the
/// warning names the value and the limit; at the limit there is none.
#[test]
fn rule_limits_fire_past_them_and_not_at_them() {
    let sizes = &rules(Rules {
        min_width: Some(640),
        min_height: Some(360),
        max_width: Some(1920),
        max_height: Some(1080),
        ..Rules::default()
    });
    let (small, large) = ("resolution_below_min", "resolution_above_max");
    let narrow = Some("width 639 is below the minimum 640");
    let low = Some("height 359 is below the minimum 360");
    let both = Some("width 320 is below the minimum 640; height 200 is below the minimum 360");
    let wide = Some("width 1921 is above the maximum 1920");
    let tall = Some("height 1081 is above the maximum 1080");

    // Aspect: of the picture as displayed (a quarter turn from the container or EXIF).
    let aspects = &rules(Rules {
        min_aspect: Some(1.5),
        max_aspect: Some(2.0),
        ..Rules::default()
    });
    // One bound only: the other is shown open.
    let min_aspect = &rules(Rules {
        min_aspect: Some(1.0),
        ..Rules::default()
    });
    let aspect = "aspect_out_of_range";
    let portrait = Some("aspect ratio 0.56 is outside 1.50-2.00");
    let panorama = Some("aspect ratio 2.10 is outside 1.50-2.00");
    let open = Some("aspect ratio 0.90 is outside 1.00-inf");
    let turned = with(video(1080, 1920), |i| i.info.rotation_deg = Some(90));
    let exif = |o| with(image(1080, 1920), |i| i.info.exif_orientation = Some(o));

    // Duration and frame rate: videos only.
    let times = &rules(Rules {
        min_duration_secs: Some(0.5),
        max_duration_secs: Some(10.0),
        min_fps: Some(24.0),
        max_fps: Some(60.0),
        ..Rules::default()
    });
    let timed = |kind, duration_secs: f64, fps: f64| {
        with(item(kind, 640, 360), |i| {
            i.info.duration_secs = Some(duration_secs);
            i.info.fps = Some(fps);
        })
    };
    let clip = |duration_secs, fps| timed(MediaKind::Video, duration_secs, fps);
    let short = Some("duration 0.40 s is below the minimum 0.50 s");
    let long = Some("duration 12.5 s is above the maximum 10.0 s");
    let slow = Some("23.98 fps is below the minimum 24");
    let fast = Some("60.50 fps is above the maximum 60");

    // Brightness (pictures and videos) and entropy (pictures), with the default limits
    // and with others from the config.
    let lit = |b| Some(measured(|m| m.brightness = Some(b)));
    let entropy = |e| Some(measured(|m| m.entropy = Some(e)));
    let d = &Config::default();
    let dim = &quality(QualityRules {
        dark_below: 10.0,
        bright_above: 200.0,
        ..QualityRules::default()
    });
    let strict = &quality(QualityRules {
        low_entropy_below: 4.0,
        ..QualityRules::default()
    });
    let (dark, bright, flat) = ("dark", "overexposed", "low_information");
    let pic = || image(64, 64);
    let dark_24 = Some("mean brightness 24 is below 25 (dark)");
    let dark_10 = Some("mean brightness 10 is below 25 (dark)");
    let bright_236 = Some("mean brightness 236 is above 235 (overexposed)");
    let bright_201 = Some("mean brightness 201 is above 200 (overexposed)");
    let flat_1 = Some("luma entropy 1.50 bits is below 2.0 (nearly uniform picture)");
    let flat_3 = Some("luma entropy 3.00 bits is below 4.0 (nearly uniform picture)");
    let flat_video = Some("mean luma entropy 0.50 bits is below 2.0 (nearly uniform video)");

    expect(
        FlagSource::Rule,
        &[
            (sizes, small, video(640, 360), None, None),
            (sizes, large, video(1920, 1080), None, None),
            (sizes, small, video(639, 360), None, narrow),
            (sizes, small, image(640, 359), None, low),
            (sizes, small, video(320, 200), None, both),
            (aspects, aspect, turned, None, None),
            (sizes, large, video(1921, 1080), None, wide),
            (sizes, large, image(1920, 1081), None, tall),
            (aspects, aspect, exif(6), None, None),
            (aspects, aspect, video(1920, 1080), None, None),
            (aspects, aspect, exif(3), None, portrait),
            (aspects, aspect, video(1500, 1000), None, None),
            (aspects, aspect, video(2000, 1000), None, None),
            (aspects, aspect, video(1080, 1920), None, portrait),
            (min_aspect, aspect, video(900, 1000), None, open),
            (aspects, aspect, video(2100, 1000), None, panorama),
            (times, "duration_below_min", clip(0.4, 25.0), None, short),
            (times, "duration_above_max", clip(12.5, 25.0), None, long),
            (times, "fps_below_min", clip(1.0, 23.976), None, slow),
            (times, "fps_above_max", clip(1.0, 60.5), None, fast),
            (d, dark, pic(), lit(24.4), dark_24),
            (d, dark, video(64, 64), lit(10.0), dark_10),
            (d, dark, pic(), lit(25.0), None),
            (d, bright, pic(), lit(235.0), None),
            (d, bright, pic(), lit(235.6), bright_236),
            (dim, dark, pic(), lit(20.0), None),
            (dim, bright, pic(), lit(201.0), bright_201),
            (d, flat, pic(), entropy(1.5), flat_1),
            (d, flat, pic(), entropy(2.0), None),
            (d, flat, video(64, 64), entropy(0.5), flat_video),
            (d, flat, video(64, 64), entropy(2.0), None),
            (strict, flat, pic(), entropy(3.0), flat_3),
        ],
    );
    // No limits set, nothing checked; fine files get nothing.
    assert!(item_flags(&video(1, 1), None, &Config::default()).is_empty());
    for fine in [
        clip(0.5, 24.0),
        clip(10.0, 60.0),
        // A picture with a duration and a rate (animated) is held to no video limit.
        timed(MediaKind::Image, 0.1, 100.0),
    ] {
        assert!(item_flags(&fine, None, times).is_empty(), "{fine:?}");
    }
}

#[test]
fn black_and_frozen_shares_fire_from_their_limits_on_videos() {
    let black = |share| Some(measured(|m| m.black_share = Some(share)));
    let frozen = |share, frames| {
        Some(measured(|m| {
            m.frozen_share = Some(share);
            m.decoded_frames = frames;
        }))
    };
    let d = &Config::default();
    let lenient = &quality(QualityRules {
        black_share_above: 0.9,
        frozen_share_above: 0.9,
        ..QualityRules::default()
    });
    let half_black = Some("50% of frames are black");
    let mostly_frozen = Some("60% of frames repeat the previous frame exactly (frozen picture)");
    let clip = video(64, 64);
    expect(
        FlagSource::Decode,
        &[
            (d, "black", clip.clone(), black(0.5), half_black),
            (d, "black", clip.clone(), black(0.49), None),
            (d, "black", image(64, 64), black(1.0), None),
            (lenient, "black", clip.clone(), black(0.8), None),
            (d, "frozen", clip.clone(), frozen(0.6, 11), mostly_frozen),
            (d, "frozen", clip.clone(), frozen(0.49, 100), None),
            // Too few frames to tell a frozen picture from a short still shot.
            (d, "frozen", clip.clone(), frozen(1.0, 10), None),
            (lenient, "frozen", clip, frozen(0.8, 100), None),
        ],
    );
}

#[test]
fn decode_errors_are_errors_from_their_share_and_warnings_below_it() {
    let errors = |n| {
        measured(|m| {
            m.decoded_frames = 1000;
            m.decode_errors = n;
            m.first_error = Some("Invalid NAL unit size".into());
        })
    };
    let found = |file: &Item, m: &Metrics, config: &Config| {
        flag(file, Some(m), config, "decode_errors").map(|f| {
            assert_eq!(f.source, FlagSource::Decode);
            (f.severity, f.reason)
        })
    };
    let defaults = Config::default();
    let reason = |n| format!("{n} decode errors in 1000 frames; first: Invalid NAL unit size");
    assert_eq!(
        found(&video(64, 64), &errors(10), &defaults),
        Some((Severity::Error, reason(10)))
    );
    assert_eq!(
        found(&video(64, 64), &errors(9), &defaults),
        Some((Severity::Warning, reason(9)))
    );
    assert_eq!(found(&video(64, 64), &errors(0), &defaults), None);
    let strict = quality(QualityRules {
        decode_error_share: 0.005,
        ..QualityRules::default()
    });
    assert_eq!(
        found(&video(64, 64), &errors(9), &strict),
        Some((Severity::Error, reason(9)))
    );
    // A picture has one frame: any error is an error.
    let one = measured(|m| {
        m.decoded_frames = 1;
        m.decode_errors = 1;
    });
    assert_eq!(
        found(&image(64, 64), &one, &defaults),
        Some((Severity::Error, "the image decodes with errors".into()))
    );
}

#[test]
fn files_that_did_not_probe_get_their_probe_error_and_no_rules() {
    let config = rules(Rules {
        min_width: Some(640),
        ..Rules::default()
    });
    let flags = |status, error: Option<&str>| -> Vec<(String, Severity, String)> {
        let file = with(video(16, 16), |i| {
            i.status = status;
            i.error = error.map(str::to_string);
        });
        item_flags(&file, None, &config)
            .into_iter()
            .map(|f| (f.code, f.severity, f.reason))
            .collect()
    };
    let one = |code: &str, severity, reason: &str| vec![(code.into(), severity, reason.into())];
    assert_eq!(
        flags(ItemStatus::Error, Some("cannot open: moov atom not found")),
        one(
            "unreadable",
            Severity::Error,
            "cannot open: moov atom not found"
        )
    );
    assert_eq!(
        flags(ItemStatus::Unsupported, None),
        one("unsupported", Severity::Warning, "no reason recorded")
    );
    assert!(flags(ItemStatus::Missing, Some("gone")).is_empty());
}
