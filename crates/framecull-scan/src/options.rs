//! How a deep or triage analysis runs ([`AnalyzeOptions`]): what the analysis of a folder,
//! the worker that analyses one file and its parent all read.

use std::time::Duration;

use framecull_analysis::cuts::CutOptions;
use framecull_model::{AnalysisLevel, ItemId};

#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    /// Files analysed at once (each decodes on one thread).
    pub jobs: usize,
    /// Longest time one file may take; what was decoded by then is kept and flagged.
    pub file_budget: Duration,
    pub cuts: CutOptions,
    pub batch_size: usize,
    /// Decode in worker processes (`framecull worker scan`), so that a decoder's crash, endless
    /// loop or runaway allocation costs one file, not the run. Off: in this process.
    pub isolate: bool,
    /// [`AnalysisLevel::Deep`]: decode every frame. [`AnalysisLevel::Triage`]: read a video's
    /// packets only (a picture's triage is its deep analysis), leaving deep analyses in place.
    pub level: AnalysisLevel,
    /// Only these items (a filter's choice, `analyze --where`); `None`: every item.
    pub only: Option<std::collections::HashSet<ItemId>>,
    /// Decoder threads of each video: `None` gives a file a share of the `jobs` threads by
    /// its share of the work left ([`crate::deep::file_threads`]), so that a few long files keep every
    /// core busy; files in flight never hold more than `jobs` threads together.
    pub file_threads: Option<usize>,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
            file_budget: Duration::from_secs(300),
            cuts: CutOptions::default(),
            batch_size: 64,
            isolate: true,
            level: AnalysisLevel::Deep,
            only: None,
            file_threads: None,
        }
    }
}
