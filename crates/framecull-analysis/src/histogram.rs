//! Histograms shared by the CLI and the GUI.

use polars::prelude::*;
use serde::Serialize;

use framecull_model::Measure;

/// The measures the window and `framecull stats` draw histograms of, in order.
pub const HISTOGRAMS: [Measure; 7] = [
    Measure::DurationSecs,
    Measure::Fps,
    Measure::Aspect,
    Measure::MotionMean,
    Measure::Brightness,
    Measure::Sharpness,
    Measure::SizeBytes,
];

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Histogram {
    #[serde(rename = "column")]
    pub measure: Measure,
    pub label: String,
    /// `bins + 1` edges in the measure's own units (log-spaced when `log`).
    pub edges: Vec<f64>,
    pub counts: Vec<u64>,
    /// Items without a value.
    pub missing: u64,
    /// Far outliers below the first edge and above the last (outside the plotted range).
    pub underflow: u64,
    pub overflow: u64,
    pub log: bool,
}

impl Histogram {
    /// The bin `v` falls in, as [`histogram`] binned it; `None` for a missing value or one
    /// outside the plotted range (the under- and overflow).
    pub fn bin_of(&self, v: f64) -> Option<usize> {
        let (&lo, &hi) = (self.edges.first()?, self.edges.last()?);
        let n = self.counts.len();
        if n == 0 || v.is_nan() || (self.log && v <= 0.0) {
            return None;
        }
        let scale = |x: f64| if self.log { x.log10() } else { x };
        let (slo, shi) = (scale(lo), scale(hi));
        let t = if shi > slo {
            (scale(v) - slo) / (shi - slo)
        } else {
            0.0
        };
        // Edges of log histograms went through log10 and back: allow for that rounding.
        const EPS: f64 = 1e-9;
        if !(-EPS..=1.0 + EPS).contains(&t) {
            return None;
        }
        Some(((t.max(0.0) * n as f64) as usize).min(n - 1))
    }
}

/// 2-D histogram of resolution: bins of log2(width) x log2(height).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolutionGrid {
    /// Edges in pixels, powers of two.
    pub width_edges: Vec<f64>,
    pub height_edges: Vec<f64>,
    /// `counts[h][w]`.
    pub counts: Vec<Vec<u64>>,
}

/// Far outliers stay out of a histogram's range: values beyond this many interquartile ranges
/// past the quartiles (in the binning space) are counted as under- or overflow instead of
/// flattening the plot (a broken file that declares 90,000 fps).
const FENCE_IQRS: f64 = 10.0;

/// Equal-width bins (in log10 space for measures that span decades) between the smallest and
/// largest value of `measure`'s column in `df` that are not far outliers (see
/// [`FENCE_IQRS`]); those are counted in `underflow` and `overflow`.
pub fn histogram(df: &DataFrame, measure: Measure, bins: usize) -> PolarsResult<Histogram> {
    let column = df.column(measure.name())?.cast(&DataType::Float64)?;
    let values: Vec<f64> = column
        .f64()?
        .iter()
        .map(|v| v.unwrap_or(f64::NAN))
        .collect();
    Ok(histogram_of(measure, &values, bins))
}

/// [`histogram`] of one measure's column of values (NaN where an item has none), as the
/// window keeps them.
pub fn histogram_of(measure: Measure, values: &[f64], bins: usize) -> Histogram {
    let bins = bins.max(1);
    let log = measure.spans_decades();
    let transformed: Vec<f64> = values
        .iter()
        .filter(|v| !v.is_nan() && (!log || **v > 0.0))
        .map(|&v| if log { v.log10() } else { v })
        .collect();
    let missing = (values.len() - transformed.len()) as u64;
    let (min, hi) = robust_range(&transformed);
    let underflow = transformed.iter().filter(|&&v| v < min).count() as u64;
    let overflow = transformed.iter().filter(|&&v| v > hi).count() as u64;
    let in_range = || {
        transformed
            .iter()
            .copied()
            .filter(move |v| (min..=hi).contains(v))
    };
    if in_range().next().is_none() {
        return Histogram {
            measure,
            label: measure.title().into(),
            edges: Vec::new(),
            counts: Vec::new(),
            missing,
            underflow,
            overflow,
            log,
        };
    }
    let mut lo = min;
    let width = if hi > lo {
        (hi - lo) / bins as f64
    } else {
        // One value (one video, or all of the same length): a window around it, so that the
        // axis reads near it (a width of one unit a bin put 10^40 s on a log axis).
        let half = if log { 0.5 } else { (lo.abs() * 0.5).max(0.5) };
        lo -= half;
        2.0 * half / bins as f64
    };
    let mut counts = vec![0u64; bins];
    for t in in_range() {
        // Truncation of a non-negative quotient: the bin's floor; the largest value lands in
        // the last bin.
        let bin = (((t - lo) / width) as usize).min(bins - 1);
        counts[bin] += 1;
    }
    let edges = (0..=bins)
        .map(|i| {
            let e = lo + width * i as f64;
            if log { 10f64.powf(e) } else { e }
        })
        .collect();
    Histogram {
        measure,
        label: measure.title().into(),
        edges,
        counts,
        missing,
        underflow,
        overflow,
        log,
    }
}

/// Resolution heat map over the `width` and `height` columns of items with status `ok`,
/// one bin per power of two.
pub fn resolution_grid(df: &DataFrame) -> PolarsResult<ResolutionGrid> {
    let out = df
        .clone()
        .lazy()
        .filter(
            col("status")
                .eq(lit("ok"))
                .and(col(Measure::Width.name()).is_not_null())
                .and(col(Measure::Height.name()).is_not_null()),
        )
        .select([
            col(Measure::Width.name())
                .cast(DataType::Float64)
                .alias("w"),
            col(Measure::Height.name())
                .cast(DataType::Float64)
                .alias("h"),
        ])
        .collect()?;
    let ws: Vec<f64> = out.column("w")?.f64()?.into_no_null_iter().collect();
    let hs: Vec<f64> = out.column("h")?.f64()?.into_no_null_iter().collect();
    let bin = |v: f64| v.max(1.0).log2().floor() as usize;
    let (wmax, hmax) = (
        ws.iter().map(|&w| bin(w)).max().unwrap_or(0),
        hs.iter().map(|&h| bin(h)).max().unwrap_or(0),
    );
    let (wmin, hmin) = (
        ws.iter().map(|&w| bin(w)).min().unwrap_or(0),
        hs.iter().map(|&h| bin(h)).min().unwrap_or(0),
    );
    let mut counts = vec![vec![0u64; wmax - wmin + 1]; hmax - hmin + 1];
    for (w, h) in ws.iter().zip(&hs) {
        counts[bin(*h) - hmin][bin(*w) - wmin] += 1;
    }
    let edges = |lo: usize, hi: usize| (lo..=hi + 1).map(|e| 2f64.powi(e as i32)).collect();
    Ok(ResolutionGrid {
        width_edges: edges(wmin, wmax),
        height_edges: edges(hmin, hmax),
        counts,
    })
}

/// The smallest and largest values within [`FENCE_IQRS`] interquartile ranges of the
/// quartiles (the spread is at least a tenth of the quartile's size, so a column of equal
/// values with one neighbour keeps it). `(inf, -inf)` when there are none.
fn robust_range(values: &[f64]) -> (f64, f64) {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let (Some(&min), Some(&max)) = (sorted.first(), sorted.last()) else {
        return (f64::INFINITY, f64::NEG_INFINITY);
    };
    let n = sorted.len();
    let (q1, q3) = (sorted[n / 4], sorted[(3 * n / 4).min(n - 1)]);
    let spread = (q3 - q1).max(0.1 * q1.abs().max(q3.abs())).max(1e-9);
    let (lo_fence, hi_fence) = (q1 - FENCE_IQRS * spread, q3 + FENCE_IQRS * spread);
    let lo = sorted
        .iter()
        .copied()
        .find(|&v| v >= lo_fence)
        .unwrap_or(min);
    let hi = sorted
        .iter()
        .rev()
        .copied()
        .find(|&v| v <= hi_fence)
        .unwrap_or(max);
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_fall_in_the_right_bins() {
        let df = DataFrame::new(
            6,
            vec![Column::new(
                "fps".into(),
                [
                    Some(10.0),
                    Some(20.0),
                    Some(20.0),
                    Some(30.0),
                    Some(30.0),
                    None,
                ],
            )],
        )
        .unwrap();
        let h = histogram(&df, Measure::Fps, 2).unwrap();
        assert_eq!(h.edges, vec![10.0, 20.0, 30.0]);
        assert_eq!(h.counts, vec![1, 4]);
        assert_eq!(h.missing, 1);
        assert_eq!((h.underflow, h.overflow), (0, 0));
    }

    #[test]
    fn one_value_is_plotted_in_a_window_around_it() {
        for (measure, name, value) in [
            (Measure::DurationSecs, "duration_secs", 2.0),
            (Measure::Fps, "fps", 25.0),
        ] {
            let column: Vec<Option<f64>> = vec![Some(value); 3];
            let df = DataFrame::new(3, vec![Column::new(name.into(), column)]).unwrap();
            let h = histogram(&df, measure, 40).unwrap();
            let (first, last) = (h.edges[0], *h.edges.last().unwrap());
            assert!(
                first < value && value < last,
                "{measure:?}: {first}..{last}"
            );
            assert!(last / first <= 10.0 + 1e-9, "{measure:?}: {first}..{last}");
            assert_eq!(h.counts.iter().sum::<u64>(), 3);
            assert_eq!(h.bin_of(value), h.counts.iter().position(|&c| c == 3));
        }
    }

    #[test]
    fn absurd_values_are_counted_outside_instead_of_squashing_the_plot() {
        // Frame rates of a real mix (5 to 60 fps) and three broken files declaring 90,000.
        let mut fps: Vec<Option<f64>> = (0..247)
            .map(|i| Some([25.0, 30.0, 29.97, 24.0, 60.0, 5.0, 50.0][i % 7]))
            .collect();
        fps.extend([Some(90_000.0); 3]);
        let values: Vec<f64> = fps.iter().flatten().copied().collect();
        let df = DataFrame::new(fps.len(), vec![Column::new("fps".into(), fps)]).unwrap();
        let h = histogram(&df, Measure::Fps, 11).unwrap();
        assert_eq!((h.underflow, h.overflow), (0, 3));
        assert_eq!((h.edges[0], *h.edges.last().unwrap()), (5.0, 60.0));
        assert_eq!(h.counts.iter().sum::<u64>(), 247);
        // bin_of (the window's filtered subsets) bins exactly as the histogram did.
        let mut again = vec![0u64; h.counts.len()];
        for v in &values {
            if let Some(b) = h.bin_of(*v) {
                again[b] += 1;
            }
        }
        assert_eq!(again, h.counts);
        assert_eq!(h.bin_of(90_000.0), None);
        // A column of equal values with one neighbour keeps both.
        let same: Vec<Option<f64>> = (0..50)
            .map(|i| Some(if i == 0 { 30.0 } else { 25.0 }))
            .collect();
        let df = DataFrame::new(50, vec![Column::new("fps".into(), same)]).unwrap();
        let h = histogram(&df, Measure::Fps, 5).unwrap();
        assert_eq!((h.underflow, h.overflow), (0, 0));
        assert_eq!(*h.edges.last().unwrap(), 30.0);
    }
}
