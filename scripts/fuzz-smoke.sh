#!/usr/bin/env bash
# CI's fuzz smoke: every target in fuzz/ under libFuzzer for SECS seconds (default 30), all at
# once, from its committed corpus; a crash, a timeout or a leak of memory fails the run and
# leaves the input in fuzz/target/smoke/artifacts/TARGET/.
# Built with the stable toolchain and the coverage instrumentation `cargo fuzz build --dev
# -s none` adds (scripts/fuzz.sh), so CI needs neither nightly nor cargo-fuzz. New inputs go to
# a scratch folder, not the committed corpus.
# `fuzz-smoke.sh --build` only builds the targets (CI does it early, at the lowest priority, so
# the build fills the cores the tests leave idle).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
build_only=false
if [ "${1:-}" = "--build" ]; then build_only=true; shift; fi
secs="${1:-30}"
targets=(sniff image_header structure manifest config)
triple="$(rustc -vV | sed -n 's/^host: //p')"
export CARGO_TARGET_DIR=target/smoke
# libFuzzer itself is C++, built by libfuzzer-sys with `c++`: a machine with only clang (what
# packaging/deps.sh installs) builds it with clang++.
if ! command -v c++ >/dev/null 2>&1 && command -v clang++ >/dev/null 2>&1; then
  export CXX=clang++
fi
# --target keeps the flags off build scripts and procedural macros, as cargo-fuzz does.
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
  cargo build --target "$triple" --bins
if $build_only; then exit 0; fi
bins="$CARGO_TARGET_DIR/$triple/debug"
failed=()
run() {
  local t="$1" scratch="$CARGO_TARGET_DIR/new/$1" artifacts="$CARGO_TARGET_DIR/artifacts/$1/"
  rm -rf "$scratch" && mkdir -p "$scratch" "$artifacts"
  if "$bins/$t" "$scratch" "corpus/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts" > "$CARGO_TARGET_DIR/$t.log" 2>&1; then
    echo "$t: $(grep -Eo '^Done [0-9]+ runs in [0-9]+ second' "$CARGO_TARGET_DIR/$t.log" | tail -n 1)"
  else
    tail -n 30 "$CARGO_TARGET_DIR/$t.log" | sed "s/^/$t: /"
    return 1
  fi
}
# All at once, each for SECS seconds of wall time, the cores shared.
pids=()
for t in "${targets[@]}"; do
  run "$t" &
  pids+=("$!:$t")
done
for p in "${pids[@]}"; do wait "${p%%:*}" || failed+=("${p#*:}"); done
if ((${#failed[@]})); then
  echo "fuzz smoke: ${failed[*]} failed; the inputs are in fuzz/target/smoke/artifacts/ (copy each to fuzz/regressions/TARGET/ and fix the parser)" >&2
  exit 1
fi
