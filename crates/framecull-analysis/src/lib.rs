//! Pure analyses over frames and numbers: motion, cuts, quality, hashes, duplicates,
//! outliers, flags and histograms. No I/O.

pub mod bars;
pub mod cuts;
pub mod dups;
pub mod fields;
pub mod filter;
pub mod flags;
pub mod histogram;
pub mod image;
pub mod labels;
pub mod motion;
pub mod outliers;
pub mod phash;
pub mod proposals;
pub mod quality;
pub mod rules;
mod simd;
pub mod still;
pub mod triage;
pub mod video;
