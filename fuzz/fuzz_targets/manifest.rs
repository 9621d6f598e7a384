#![no_main]

#[path = "../src/targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(
    init: {
        // libfuzzer-sys aborts on every panic, even one the code catches and turns into an
        // error (read_parquet does, for polars' decoder): only uncaught ones are findings.
        std::panic::set_hook(Box::new(|_| ()));
    },
    |data: &[u8]| targets::manifest(data)
);
