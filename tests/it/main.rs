//! The integration tests, one binary: a module per area (linking one binary instead of one per
//! file saved minutes and gigabytes of every CI run; docs/ARCHITECTURE.md).

mod common;

mod analysis;
mod chaos;
mod cli;
mod cli_text;
mod corpus;
mod exactness;
mod fuzz_corpus;
mod gui;
// Crash, hang and memory faults in worker processes (FRAMECULL_FAULT_INJECTION).
mod isolation;
mod kill;
mod labels;
mod library;
mod loader;
mod loader_gpu;
mod manifest;
mod names;
mod probe;
mod reading;
mod review;
mod scan;
mod shard;
mod storage;
mod triage;
