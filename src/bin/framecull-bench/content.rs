//! `triage-content`: how the triage's content measures agree with the deep pass's, on
//! generated clips of each content class (black, dark, overexposed, greyscale, low
//! information, frozen, still and fast-moving footage, each whole and as a section inside a
//! longer clip of ordinary footage) and on the media corpus's videos: per flag code, the
//! files the deep pass flags that the triage flags with the same code, and the files the
//! deep pass leaves unflagged that the triage flags; the Spearman rank correlation of the two
//! levels' `motion_mean`; and whether their near-duplicate groups are the same.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use framecull::model::AnalysisLevel;
use serde::Serialize;

use crate::util::{Analysed, TriageSets, analysed, pct, print};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    sets: TriageSets,
    #[arg(long)]
    json: bool,
}

/// The content flags compared.
fn codes() -> Vec<String> {
    use framecull::model::FlagCode;
    [
        FlagCode::Black,
        FlagCode::Dark,
        FlagCode::Overexposed,
        FlagCode::Grayscale,
        FlagCode::LowInformation,
        FlagCode::Frozen,
    ]
    .iter()
    .map(|c| c.as_str().to_string())
    .chain([framecull::model::outlier_code(
        framecull::model::Measure::MotionMean,
    )])
    .collect()
}

/// Ordinary footage: a moving, colourful test pattern with sensor grain.
const ORDINARY: &str = "testsrc2=size=640x360:rate=30,noise=alls=12:allf=t";

/// Each class: its name and the lavfi graph of its footage (from `ORDINARY` where it is
/// made of it), as a whole clip; a section is the class's footage for the middle 60% of a
/// clip of ordinary footage.
fn classes() -> Vec<(&'static str, String)> {
    let lut = |f: &str| {
        format!("testsrc2=size=640x360:rate=30,format=rgb24,lutrgb={f},noise=alls=4:allf=t")
    };
    // Each class named after the flag it is made to raise.
    use framecull::model::FlagCode;
    vec![
        ("ordinary", ORDINARY.to_string()),
        (
            FlagCode::Black.as_str(),
            "color=black:size=640x360:rate=30,noise=alls=3:allf=t".into(),
        ),
        (
            FlagCode::Dark.as_str(),
            lut("r=val*0.17:g=val*0.17:b=val*0.17"),
        ),
        (
            FlagCode::Overexposed.as_str(),
            lut("r=255-(255-val)*0.08:g=255-(255-val)*0.08:b=255-(255-val)*0.08"),
        ),
        (
            FlagCode::Grayscale.as_str(),
            "testsrc2=size=640x360:rate=30,format=gray,noise=alls=12:allf=t".into(),
        ),
        (
            FlagCode::LowInformation.as_str(),
            "color=0x505050:size=640x360:rate=30,noise=alls=1:allf=t".into(),
        ),
        // Two seconds of motion, then the last frame held.
        (
            FlagCode::Frozen.as_str(),
            format!("{ORDINARY},trim=duration=2,tpad=stop_mode=clone:stop_duration=3600"),
        ),
        (
            "still",
            "smptebars=size=640x360:rate=30,noise=alls=12:allf=t".into(),
        ),
        (
            "fast",
            "testsrc2=size=640x360:rate=30,scroll=h=0.01:v=0.005,noise=alls=12:allf=t".into(),
        ),
    ]
}

/// The clips' names: `CLASS@whole.mp4` (H.264) and `CLASS@section.mkv` (HEVC), in
/// `dir/content-SECONDSs/`, made once.
fn generate(dir: &Path, seconds: u32) -> anyhow::Result<PathBuf> {
    let out = dir.join(format!("content-{seconds}s"));
    std::fs::create_dir_all(&out)?;
    let s = f64::from(seconds);
    let (lead, middle) = (0.2 * s, 0.6 * s);
    for (class, graph) in classes() {
        let section = format!(
            "{ORDINARY},trim=duration={lead}[a];{graph},trim=duration={middle},setpts=PTS-STARTPTS,\
             format=yuv420p[b];{ORDINARY},trim=start={lead}:duration={lead},setpts=PTS-STARTPTS[c];\
             [a][b][c]concat=n=3:v=1"
        );
        for (name, graph, codec) in [
            (format!("{class}@whole.mp4"), graph.clone(), "libx264"),
            (format!("{class}@section.mkv"), section, "libx265"),
        ] {
            let path = out.join(&name);
            if path.exists() || (class == "ordinary" && name.contains("section")) {
                continue;
            }
            eprintln!("generating {}", path.display());
            let tmp = out.join(format!("tmp.{name}"));
            let status = Command::new("ffmpeg")
                .args(["-v", "error", "-y", "-nostdin", "-f", "lavfi", "-i", &graph])
                .args(["-t", &seconds.to_string()])
                .args(["-c:v", codec, "-preset", "veryfast", "-pix_fmt", "yuv420p"])
                .args(["-g", "60", "-x265-params", "log-level=error"])
                .arg(&tmp)
                .status()
                .context("ffmpeg is needed to generate the clips")?;
            anyhow::ensure!(status.success(), "ffmpeg failed on {name}");
            std::fs::rename(&tmp, &path)?;
        }
    }
    Ok(out)
}

/// One flag code's agreement.
#[derive(Serialize, Default)]
struct Agreement {
    code: String,
    /// Files the deep pass flags with it, and of those, the triage does too.
    deep_flagged: usize,
    found: usize,
    recall: Option<f64>,
    /// Files the deep pass does not flag with it, and of those, the triage does.
    deep_unflagged: usize,
    false_flags: usize,
    missed: Vec<String>,
    extra: Vec<String>,
}

#[derive(Serialize)]
struct Content {
    codes: Vec<Agreement>,
    /// Over the videos both levels measured motion on.
    motion_files: usize,
    motion_spearman: Option<f64>,
    /// Per file: path, triage and deep `motion_mean`.
    motion: Vec<(String, f64, f64)>,
    /// The near-duplicate groups of the corpus at each level.
    groups_triage: Vec<Vec<String>>,
    groups_deep: Vec<Vec<String>>,
    groups_equal: bool,
    triage_secs: f64,
    deep_secs: f64,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut roots = vec![("generated", generate(&args.sets.dir, args.sets.seconds)?)];
    let corpus = args.sets.media.join("video");
    if corpus.is_dir() {
        roots.push(("corpus", corpus));
    } else {
        eprintln!("note: {} is absent; left out", corpus.display());
    }
    let mut both: Vec<(&str, Analysed, Analysed)> = Vec::new();
    for (name, dir) in roots {
        let dir = dir.canonicalize()?;
        eprintln!("{name}: triage");
        let t = analysed(&dir, AnalysisLevel::Triage)?;
        eprintln!("{name}: deep ({} videos)", t.flags.len());
        let d = analysed(&dir, AnalysisLevel::Deep)?;
        both.push((name, t, d));
    }
    let r = compare(&both);
    print(&r, args.json, || r.text())
}

fn compare(both: &[(&str, Analysed, Analysed)]) -> Content {
    let mut codes: BTreeMap<String, Agreement> = codes()
        .into_iter()
        .map(|c| {
            (
                c.clone(),
                Agreement {
                    code: c,
                    ..Agreement::default()
                },
            )
        })
        .collect();
    let mut motion = Vec::new();
    for (root, t, d) in both {
        for (path, deep_codes) in &d.flags {
            let named = format!("{root}/{path}");
            let triage_codes = t.flags.get(path).cloned().unwrap_or_default();
            for (code, a) in codes.iter_mut() {
                let (deep, triage) = (
                    deep_codes.iter().any(|c| c == code),
                    triage_codes.iter().any(|c| c == code),
                );
                if deep {
                    a.deep_flagged += 1;
                    a.found += usize::from(triage);
                    if !triage {
                        a.missed.push(named.clone());
                    }
                } else {
                    a.deep_unflagged += 1;
                    a.false_flags += usize::from(triage);
                    if triage {
                        a.extra.push(named.clone());
                    }
                }
            }
            let mm = |a: &Analysed| a.metrics.get(path).and_then(|m| m.motion_mean);
            if let (Some(tm), Some(dm)) = (mm(t), mm(d)) {
                motion.push((named, tm, dm));
            }
        }
    }
    let mut codes: Vec<Agreement> = codes.into_values().collect();
    for a in &mut codes {
        a.recall = (a.deep_flagged > 0).then(|| a.found as f64 / a.deep_flagged as f64);
    }
    let listed = |a: &Analysed| -> Vec<Vec<String>> {
        a.groups
            .iter()
            .map(|g| g.iter().cloned().collect())
            .collect()
    };
    let (groups_triage, groups_deep) = both
        .iter()
        .find(|(root, ..)| *root == "corpus")
        .map_or((Vec::new(), Vec::new()), |(_, t, d)| (listed(t), listed(d)));
    let xs: Vec<f64> = motion.iter().map(|m| m.1).collect();
    let ys: Vec<f64> = motion.iter().map(|m| m.2).collect();
    Content {
        codes,
        motion_files: motion.len(),
        motion_spearman: spearman(&xs, &ys),
        motion,
        groups_equal: groups_triage == groups_deep,
        groups_triage,
        groups_deep,
        triage_secs: both.iter().map(|b| b.1.secs).sum(),
        deep_secs: both.iter().map(|b| b.2.secs).sum(),
    }
}

/// Ranks from 1, ties given their mean rank.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for k in i..=j {
            r[order[k]] = mean;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation: Pearson's over the ranks.
fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() < 3 {
        return None;
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mx, my) = (mean(&rx), mean(&ry));
    let cov: f64 = rx.iter().zip(&ry).map(|(a, b)| (a - mx) * (b - my)).sum();
    let var = |v: &[f64], m: f64| v.iter().map(|a| (a - m).powi(2)).sum::<f64>();
    let d = (var(&rx, mx) * var(&ry, my)).sqrt();
    (d > 0.0).then(|| cov / d)
}

impl Content {
    fn text(&self) -> String {
        let mut s = String::from(
            "code                  deep-flagged found recall  deep-unflagged triage-flagged\n",
        );
        for a in &self.codes {
            s.push_str(&format!(
                "{:<21} {:>12} {:>5} {:>6} {:>15} {:>14}\n",
                a.code,
                a.deep_flagged,
                a.found,
                pct(a.recall),
                a.deep_unflagged,
                a.false_flags
            ));
        }
        for a in &self.codes {
            for p in &a.missed {
                s.push_str(&format!("{}: missed {p}\n", a.code));
            }
            for p in &a.extra {
                s.push_str(&format!("{}: triage only {p}\n", a.code));
            }
        }
        for (path, t, d) in &self.motion {
            s.push_str(&format!("motion {path}: triage {t:.3}, deep {d:.3}\n"));
        }
        s.push_str(&format!(
            "motion: Spearman {} over {} videos; corpus near-duplicate groups {} (triage {:?}, deep {:?}); triage {:.1} s, deep {:.1} s",
            self.motion_spearman
                .map_or("-".into(), |r| format!("{r:.3}")),
            self.motion_files,
            if self.groups_equal { "equal" } else { "differ" },
            self.groups_triage,
            self.groups_deep,
            self.triage_secs,
            self.deep_secs
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_of_ranks_with_ties() {
        assert_eq!(ranks(&[3.0, 1.0, 1.0, 2.0]), vec![4.0, 1.5, 1.5, 3.0]);
        let r = spearman(&[1.0, 2.0, 3.0, 4.0], &[10.0, 20.0, 30.0, 40.0]).unwrap();
        assert!((r - 1.0).abs() < 1e-12);
        let r = spearman(&[1.0, 2.0, 3.0, 4.0], &[4.0, 3.0, 2.0, 1.0]).unwrap();
        assert!((r + 1.0).abs() < 1e-12);
    }
}
