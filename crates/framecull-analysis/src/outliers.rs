//! Statistical outliers with robust z-scores: (x - median) / (1.4826 * MAD), computed with
//! polars per kind (images and videos separately).

use polars::prelude::*;

use super::flags::Statistics;
use framecull_model::{Flag, FlagSource, ItemId, Severity};
#[cfg(doc)]
use framecull_model::{Measure, OutlierTest};

/// `df` holds `id` (i64), `kind` (str) and one f64 column per measure, named by
/// [`Measure::name`] (nulls where the measure does not apply); each measure is tested as its
/// [`OutlierTest`] says. Returns one flag per outlying value.
pub fn outlier_flags(df: &DataFrame, config: &Statistics) -> PolarsResult<Vec<(ItemId, Flag)>> {
    let mut out = Vec::new();
    for kind in ["image", "video"] {
        for (n, &measure) in config.measures.iter().enumerate() {
            if config.measures[..n].contains(&measure) {
                continue;
            }
            let test = measure.spec().outliers;
            if df.column(measure.name()).is_err() {
                continue;
            }
            let x = col(measure.name());
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
                    if test.log {
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
                    ("below", test.low_hint)
                } else {
                    ("above", test.high_hint)
                };
                out.push((
                    id,
                    Flag {
                        code: framecull_model::outlier_code(measure),
                        severity: Severity::Warning,
                        reason: format!(
                            "{} {} is {:.1} MADs {side} the {kind} median {}{hint}",
                            test.label,
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
    use framecull_model::Measure;

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
                Column::new(Measure::MotionMean.name().into(), motion),
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

    #[test]
    fn any_measure_the_settings_name_is_tested_and_a_name_that_is_none_is_refused() {
        let config: Statistics = toml::from_str("measures = [\"width\", \"width\"]").unwrap();
        assert_eq!(config.measures, [Measure::Width, Measure::Width]);
        let n = 30;
        let mut width: Vec<Option<f64>> = (0..n).map(|i| Some(1280.0 + (i % 5) as f64)).collect();
        width[3] = Some(64.0);
        let df = DataFrame::new(
            n,
            vec![
                Column::new("id".into(), (0..n as i64).collect::<Vec<_>>()),
                Column::new("kind".into(), vec!["image"; n]),
                Column::new(Measure::Width.name().into(), width),
            ],
        )
        .unwrap();
        let flags = outlier_flags(&df, &config).unwrap();
        assert_eq!(
            flags.len(),
            1,
            "a measure named twice is tested once: {flags:?}"
        );
        assert_eq!((flags[0].0, flags[0].1.code.as_str()), (3, "outlier_width"));
        assert!(
            flags[0].1.reason.starts_with("width (px) 64.00 is ")
                && flags[0]
                    .1
                    .reason
                    .ends_with("below the image median 1282 (unusually narrow)"),
            "{}",
            flags[0].1.reason
        );
        let error = toml::from_str::<Statistics>("measures = [\"blurriness\"]").unwrap_err();
        let error = error.to_string();
        assert!(
            error.contains("blurriness") && error.contains("bits_per_pixel"),
            "{error}"
        );
    }
}
