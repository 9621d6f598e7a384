//! `triage-recall`: how many of the files the deep pass calls broken a triage finds, per
//! damage class and density, on generated damage (`media::synth::damage`, done to H.264 MP4,
//! HEVC MKV and H.264 MPEG-TS clips of 1 s GOPs) and on the media corpus's videos and broken
//! files; and how many files the deep pass calls clean get an integrity flag (a false alarm)
//! or `suspect` from the triage. Both levels run as `analyze` runs them (worker processes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use framecull::analysis::flags::is_integrity;
use framecull::media::synth::damage::{self, Damage};
use framecull::model::AnalysisLevel;
use serde::Serialize;

use crate::util::{TriageSets, analysed, pct, print};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    sets: TriageSets,
    /// Files per class, density and clip, each with its damage elsewhere.
    #[arg(long, default_value_t = 2)]
    seeds: u64,
    #[arg(long)]
    json: bool,
}

/// The clips damaged: file name, encoder and extra arguments.
const BASES: [(&str, &str, &[&str]); 3] = [
    ("h264.mp4", "libx264", &["-movflags", "+faststart"]),
    ("hevc.mkv", "libx265", &["-x265-params", "log-level=error"]),
    ("h264.ts", "libx264", &[]),
];

/// GOPs damaged per file: one, one in ten, one in three.
const DENSITIES: [(&str, f64); 3] = [("1 GOP", 0.0), ("1/10", 0.1), ("1/3", 1.0 / 3.0)];

/// One row of the report: the files of one damage class at one density (or of one corpus
/// folder).
#[derive(Serialize, Default)]
struct Row {
    class: String,
    density: String,
    files: usize,
    /// Files the deep pass gives an integrity flag.
    deep_flagged: usize,
    /// Of those, files the triage gives an integrity flag or `suspect`.
    triage_found: usize,
    /// ... and of those, found with an integrity flag (not only `suspect`).
    triage_proved: usize,
    recall: Option<f64>,
    /// Files the deep pass finds clean that the triage flags: with an integrity flag, with
    /// `suspect`.
    deep_clean: usize,
    false_alarms: usize,
    suspect_on_clean: usize,
    /// Files the deep pass flags and the triage does not: path and the deep pass's flags.
    missed: Vec<(String, Vec<String>)>,
    /// Files the deep pass finds clean and the triage calls suspect.
    suspected: Vec<String>,
}

#[derive(Serialize)]
struct Recall {
    rows: Vec<Row>,
    /// Over every file, and over the generated ones at a density of one GOP in ten or more.
    recall: Option<f64>,
    recall_dense: Option<f64>,
    false_alarm_rate: Option<f64>,
    suspect_rate_on_clean: Option<f64>,
    /// The same over the files no damage was done to (the clips, the corpus's videos): the
    /// rest of the deep pass's clean files are damaged ones it does not see.
    suspect_rate_on_undamaged: Option<f64>,
    triage_secs: f64,
    deep_secs: f64,
}

impl Row {
    /// Files no damage was done to: the clips themselves and the corpus.
    fn undamaged(&self) -> bool {
        self.class == "clean" || self.class.starts_with("corpus")
    }
}

fn rate(n: usize, of: usize) -> Option<f64> {
    (of > 0).then(|| n as f64 / of as f64)
}

impl Recall {
    fn text(&self) -> String {
        let mut s = String::from(
            "class                      density files deep-flagged found (proved) recall  \
             clean false-alarms suspect\n",
        );
        for r in &self.rows {
            s.push_str(&format!(
                "{:<26} {:<7} {:>5} {:>12} {:>5} ({:>3}) {:>9} {:>6} {:>12} {:>7}\n",
                r.class,
                r.density,
                r.files,
                r.deep_flagged,
                r.triage_found,
                r.triage_proved,
                pct(r.recall),
                r.deep_clean,
                r.false_alarms,
                r.suspect_on_clean
            ));
        }
        for r in &self.rows {
            for (path, flags) in &r.missed {
                s.push_str(&format!("missed: {path} (deep: {})\n", flags.join(", ")));
            }
        }
        for r in self.rows.iter().filter(|r| r.undamaged()) {
            for path in &r.suspected {
                s.push_str(&format!("suspect, deep clean, undamaged: {path}\n"));
            }
        }
        s.push_str(&format!(
            "recall {} (at 1/10 of GOPs or more: {}), false alarms {}, suspect on clean {} \
             (on undamaged files: {}); triage {:.1} s, deep {:.1} s",
            pct(self.recall),
            pct(self.recall_dense),
            pct(self.false_alarm_rate),
            pct(self.suspect_rate_on_clean),
            pct(self.suspect_rate_on_undamaged),
            self.triage_secs,
            self.deep_secs
        ));
        s
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let generated = generate(&args.sets.dir, args.sets.seconds, args.seeds)?;
    let mut roots = vec![("generated", generated)];
    for folder in ["video", "broken"] {
        let dir = args.sets.media.join(folder);
        if dir.is_dir() {
            roots.push((folder, dir));
        } else {
            eprintln!("note: {} is absent; left out", dir.display());
        }
    }
    let r = bench(&roots)?;
    print(&r, args.json, || r.text())
}

/// The damaged files' names: `CLASS@DENSITY@SEED@BASE` (`clean@-@0@BASE` for the clips
/// themselves), in `dir/recall-SECONDSs/`, made once.
fn generate(dir: &Path, seconds: u32, seeds: u64) -> anyhow::Result<PathBuf> {
    let dir = dir.join(format!("recall-{seconds}s"));
    let (bases, out) = (dir.join("bases"), dir.join("files"));
    std::fs::create_dir_all(&bases)?;
    std::fs::create_dir_all(&out)?;
    for (i, (name, codec, extra)) in BASES.iter().enumerate() {
        let base = bases.join(name);
        if !base.exists() {
            eprintln!("generating {}", base.display());
            let source = format!(
                "testsrc2=size=640x360:rate=30:duration={seconds},hue=h={}*t,noise=alls=12:allf=t",
                10 + 7 * i
            );
            let tmp = bases.join(format!("tmp.{name}"));
            let no_cuts: &[&str] = if *codec == "libx265" {
                &[]
            } else {
                &["-sc_threshold", "0"]
            };
            let status = Command::new("ffmpeg")
                .args([
                    "-v", "error", "-y", "-nostdin", "-f", "lavfi", "-i", &source,
                ])
                .args(["-c:v", codec, "-preset", "veryfast", "-pix_fmt", "yuv420p"])
                .args(["-g", "30", "-keyint_min", "30"])
                .args(no_cuts)
                .args(*extra)
                .arg(&tmp)
                .status()
                .context("ffmpeg is needed to generate the clips")?;
            anyhow::ensure!(status.success(), "ffmpeg failed on {name}");
            std::fs::rename(&tmp, &base)?;
        }
        let clean = out.join(format!("clean@-@0@{name}"));
        if !clean.exists() {
            std::fs::copy(&base, &clean)?;
        }
        let gops = damage::gops(&base)?.len();
        for class in Damage::ALL {
            if !class.applies_to(&base) {
                continue;
            }
            let densities: &[(&str, f64)] = if class.per_gop() {
                &DENSITIES
            } else {
                &[("once", 0.0)]
            };
            let seeds = if matches!(class, Damage::MovedIndex | Damage::MissingIndex) {
                1
            } else {
                seeds
            };
            for &(density, share) in densities {
                for seed in 0..seeds {
                    let label = density.replace('/', "in");
                    let path = out.join(format!("{}@{label}@{seed}@{name}", class.name()));
                    if path.exists() {
                        continue;
                    }
                    let count = ((gops as f64 * share).round() as usize).max(1);
                    let at = damage::pick(gops, count, seed + 1);
                    damage::write_damaged(&base, &path, class, &at)
                        .with_context(|| format!("damaging {}", path.display()))?;
                }
            }
        }
    }
    Ok(out)
}

/// The class and density a file counts under: from its name for generated files, the
/// corpus folder for the others.
fn group(root: &str, path: &str) -> (String, String) {
    if root != "generated" {
        return (format!("corpus {root}/"), "-".into());
    }
    let mut parts = path.split('@');
    let class = parts.next().unwrap_or("").to_string();
    let density = parts.next().unwrap_or("").replace("in", "/");
    (class, density)
}

fn bench(roots: &[(&str, PathBuf)]) -> anyhow::Result<Recall> {
    let integrity = |codes: &[String]| codes.iter().any(|c| is_integrity(c));
    let mut rows: BTreeMap<(String, String), Row> = BTreeMap::new();
    let (mut triage_secs, mut deep_secs) = (0.0, 0.0);
    for (name, dir) in roots {
        let dir = dir.canonicalize()?;
        eprintln!("{name}: triage");
        let triage = analysed(&dir, AnalysisLevel::Triage)?;
        eprintln!("{name}: deep ({} videos)", triage.flags.len());
        let deep = analysed(&dir, AnalysisLevel::Deep)?;
        triage_secs += triage.secs;
        deep_secs += deep.secs;
        let triaged = triage.flags;
        for (path, deep_codes) in &deep.flags {
            let (class, density) = group(name, path);
            let row = rows.entry((class.clone(), density.clone())).or_default();
            row.class = class;
            row.density = density;
            row.files += 1;
            let triage_codes = triaged.get(path).cloned().unwrap_or_default();
            let suspect = triage_codes
                .iter()
                .any(|c| c == framecull::model::FlagCode::Suspect.as_str());
            if integrity(deep_codes) {
                row.deep_flagged += 1;
                if integrity(&triage_codes) {
                    row.triage_proved += 1;
                }
                if integrity(&triage_codes) || suspect {
                    row.triage_found += 1;
                } else {
                    row.missed.push((path.clone(), deep_codes.clone()));
                }
            } else {
                row.deep_clean += 1;
                row.false_alarms += usize::from(integrity(&triage_codes));
                row.suspect_on_clean += usize::from(suspect);
                if suspect {
                    row.suspected.push(path.clone());
                }
            }
        }
    }
    let mut rows: Vec<Row> = rows.into_values().collect();
    for r in &mut rows {
        r.recall = rate(r.triage_found, r.deep_flagged);
    }
    let sum = |f: &dyn Fn(&Row) -> usize, only: &dyn Fn(&Row) -> bool| -> usize {
        rows.iter().filter(|r| only(r)).map(f).sum()
    };
    let all = |_: &Row| true;
    let dense = |r: &Row| r.density == "1/10" || r.density == "1/3" || r.density == "once";
    Ok(Recall {
        recall: rate(
            sum(&|r| r.triage_found, &all),
            sum(&|r| r.deep_flagged, &all),
        ),
        recall_dense: rate(
            sum(&|r| r.triage_found, &dense),
            sum(&|r| r.deep_flagged, &dense),
        ),
        false_alarm_rate: rate(sum(&|r| r.false_alarms, &all), sum(&|r| r.deep_clean, &all)),
        suspect_rate_on_clean: rate(
            sum(&|r| r.suspect_on_clean, &all),
            sum(&|r| r.deep_clean, &all),
        ),
        suspect_rate_on_undamaged: rate(
            sum(&|r| r.suspect_on_clean, &Row::undamaged),
            sum(&|r| r.deep_clean, &Row::undamaged),
        ),
        triage_secs,
        deep_secs,
        rows,
    })
}
