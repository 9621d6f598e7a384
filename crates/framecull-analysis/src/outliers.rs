//! Statistical outliers with robust z-scores: (x - median) / (1.4826 * MAD), computed with
//! polars per kind (images and videos separately).

use polars::prelude::*;

use super::flags::Statistics;
use framecull_model::{Flag, FlagSource, ItemId, Severity};

/// How a measure is tested and described.
pub struct Measure {
    pub name: &'static str,
    pub label: &'static str,
    /// Test on log10(1 + x) (heavy-tailed measures), report x.
    pub log: bool,
    pub low_hint: &'static str,
    pub high_hint: &'static str,
}

pub const MEASURES: &[Measure] = &[
    Measure {
        name: "log_resolution",
        label: "resolution (log2 pixels)",
        log: false,
        low_hint: " (unusually small)",
        high_hint: " (unusually large)",
    },
    Measure {
        name: "duration_secs",
        label: "duration (s)",
        log: true,
        low_hint: " (unusually short)",
        high_hint: " (unusually long)",
    },
    Measure {
        name: "fps",
        label: "frame rate",
        log: false,
        low_hint: " (unusually low frame rate)",
        high_hint: " (unusually high frame rate)",
    },
    Measure {
        name: "bits_per_pixel",
        label: "bits per pixel",
        log: true,
        low_hint: " (heavily compressed)",
        high_hint: " (unusually high bit rate)",
    },
    Measure {
        name: "motion_mean",
        label: "motion",
        log: true,
        low_hint: " (static clip)",
        high_hint: " (very fast motion or shaky camera)",
    },
    Measure {
        name: "brightness",
        label: "brightness",
        log: false,
        low_hint: " (dark)",
        high_hint: " (bright or washed out)",
    },
    Measure {
        name: "sharpness",
        label: "sharpness",
        log: true,
        low_hint: " (blurry)",
        high_hint: " (noisy or over-sharpened)",
    },
];

/// `df` holds `id` (i64), `kind` (str) and one f64 column per measure (nulls where the
/// measure does not apply). Returns one flag per outlying value.
pub fn outlier_flags(df: &DataFrame, config: &Statistics) -> PolarsResult<Vec<(ItemId, Flag)>> {
    let mut out = Vec::new();
    for kind in ["image", "video"] {
        for measure in MEASURES
            .iter()
            .filter(|m| config.measures.iter().any(|n| n == m.name))
        {
            if df.column(measure.name).is_err() {
                continue;
            }
            let x = col(measure.name);
            let values = df
                .clone()
                .lazy()
                .filter(col("kind").eq(lit(kind)).and(x.clone().is_not_null()))
                .select([col("id"), x.clone().alias("t"), x.alias("x")])
                .collect()?;
            if values.height() < config.min_items.max(3) {
                continue;
            }
            let t: Vec<f64> = values
                .column("t")?
                .f64()?
                .into_no_null_iter()
                .map(|v| {
                    if measure.log {
                        (1.0 + v.max(0.0)).log10()
                    } else {
                        v
                    }
                })
                .collect();
            // The tested value: log10(1 + x) for heavy-tailed measures.
            let mut values = values;
            values.with_column(Column::new("t".into(), t))?;
            let median = scalar(&values, col("t").median())?;
            let mad = scalar(&values, (col("t") - lit(median)).abs().median())?;
            let scale = if mad > 0.0 {
                1.4826 * mad
            } else {
                1.2533 * scalar(&values, (col("t") - lit(median)).abs().mean())?
            };
            if scale.is_nan() || scale <= 0.0 {
                continue;
            }
            let median_x = scalar(&values, col("x").median())?;
            let hits = values
                .lazy()
                .with_column(((col("t") - lit(median)) / lit(scale)).alias("z"))
                .filter(col("z").abs().gt(lit(config.max_mads)))
                .select([col("id"), col("x"), col("z")])
                .collect()?;
            let ids = hits.column("id")?.i64()?;
            let xs = hits.column("x")?.f64()?;
            let zs = hits.column("z")?.f64()?;
            for i in 0..hits.height() {
                let (Some(id), Some(x), Some(z)) = (ids.get(i), xs.get(i), zs.get(i)) else {
                    continue;
                };
                let (side, hint) = if z < 0.0 {
                    ("below", measure.low_hint)
                } else {
                    ("above", measure.high_hint)
                };
                out.push((
                    id,
                    Flag {
                        code: framecull_model::outlier_code(measure.name),
                        severity: Severity::Warning,
                        reason: format!(
                            "{} {} is {:.1} MADs {side} the {kind} median {}{hint}",
                            measure.label,
                            number(x),
                            z.abs(),
                            number(median_x)
                        ),
                        source: FlagSource::Statistics,
                    },
                ));
            }
        }
    }
    Ok(out)
}

fn scalar(df: &DataFrame, e: Expr) -> PolarsResult<f64> {
    let out = df
        .clone()
        .lazy()
        .select([e.cast(DataType::Float64).alias("v")])
        .collect()?;
    Ok(out.column("v")?.f64()?.get(0).unwrap_or(f64::NAN))
}

fn number(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_static_clip_among_moving_ones_is_flagged_with_a_reason() {
        let n = 40;
        let ids: Vec<i64> = (0..n).collect();
        let kinds: Vec<&str> = vec!["video"; n as usize];
        let mut motion: Vec<Option<f64>> =
            (0..n).map(|i| Some(2.0 + (i % 7) as f64 * 0.3)).collect();
        motion[5] = Some(0.01);
        motion[6] = None;
        let df = DataFrame::new(
            n as usize,
            vec![
                Column::new("id".into(), ids),
                Column::new("kind".into(), kinds),
                Column::new("motion_mean".into(), motion),
            ],
        )
        .unwrap();
        let flags = outlier_flags(&df, &Statistics::default()).unwrap();
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].0, 5);
        assert_eq!(flags[0].1.code, "outlier_motion_mean");
        assert!(
            flags[0].1.reason.starts_with("motion 0.010 is "),
            "{}",
            flags[0].1.reason
        );
        assert!(
            flags[0]
                .1
                .reason
                .contains("MADs below the video median 2.90 (static clip)"),
            "{}",
            flags[0].1.reason
        );
    }
}
