//! The command line's view of an ingest: one progress bar on stderr (rate and ETA) that
//! follows the pipeline's stages.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::scan::pipeline::{Dataset, IngestOptions, IngestSummary, Progress, Stage};

/// A progress bar on stderr drawn with `template` (indicatif's), of no length yet.
pub fn bar(template: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}

/// Run the stages `options` asks for, drawing their progress on stderr.
pub fn ingest(
    dataset: &mut Dataset,
    options: &IngestOptions,
    cancel: &AtomicBool,
) -> anyhow::Result<IngestSummary> {
    let bar = bar("{spinner} {prefix} [{bar:30}] {pos}/{len} files  {per_sec}  ETA {eta}  {msg}");
    bar.enable_steady_tick(Duration::from_millis(120));
    let summary = dataset.ingest(options, cancel, &mut |p| match p {
        Progress::Stage(stage) => {
            bar.reset();
            bar.set_length(0);
            bar.set_message("");
            bar.set_prefix(match stage {
                Stage::Scan => "walking",
                other => other.label(),
            });
        }
        Progress::Walked { files, to_probe } => {
            bar.set_length(to_probe);
            bar.set_prefix(format!("probing ({files} found)"));
        }
        Progress::Files { done, total, path } => {
            bar.set_length(total);
            bar.set_position(done);
            if let Some(path) = path {
                bar.set_message(path);
            }
        }
        Progress::Stored => {}
    });
    bar.finish_and_clear();
    Ok(summary?)
}
