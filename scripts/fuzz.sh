#!/usr/bin/env bash
# Fuzz every target in fuzz/ for SECS seconds each (default 600), two at a time, then
# minimise each corpus. Needs a nightly toolchain and cargo-fuzz:
#   rustup toolchain install nightly && cargo install cargo-fuzz
# Built unoptimised with overflow checks and no sanitizer (`--dev -s none`): the targets are
# safe Rust, where a panic is the finding, and the build takes minutes instead of the better
# part of an hour (AddressSanitizer with optimisation over the whole dependency tree).
# A crash leaves its input in fuzz/artifacts/TARGET/: copy it to fuzz/regressions/TARGET/,
# where tests/it/fuzz_corpus.rs replays it in every test run, then fix the parser.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs="${1:-600}"
targets=(sniff image_header structure manifest config)
cargo +nightly fuzz build --dev -s none
run() {
  local t="$1"
  mkdir -p "corpus/$t"
  cargo +nightly fuzz run --dev -s none "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=4096 \
    > "target/fuzz-$t.log" 2>&1 || echo "$t: crashed, see fuzz/target/fuzz-$t.log and fuzz/artifacts/$t" >&2
  tail -n 3 "target/fuzz-$t.log" | sed "s/^/$t: /"
}
i=0
for t in "${targets[@]}"; do
  run "$t" &
  i=$((i + 1))
  if ((i % 2 == 0)); then wait; fi
done
wait
for t in "${targets[@]}"; do
  cargo +nightly fuzz cmin --dev -s none "$t" "corpus/$t" > /dev/null 2>&1 || true
done
du -sh corpus/*
