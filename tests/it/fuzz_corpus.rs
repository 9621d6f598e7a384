//! The fuzz targets (fuzz/, run with `cargo fuzz`) replayed on the stable toolchain over the
//! committed corpus and every input that once crashed them (fuzz/regressions/): a parser fix
//! that regresses fails here, in every test run.

#![allow(clippy::unwrap_used)]

#[path = "../../fuzz/src/targets.rs"]
mod targets;

#[test]
fn the_fuzz_corpus_and_every_past_crash_replay_cleanly() {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for (name, target) in targets::TARGETS {
        let mut inputs = 0;
        for kind in ["corpus", "regressions"] {
            let Ok(entries) = std::fs::read_dir(fuzz.join(kind).join(name)) else {
                continue;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                let bytes = std::fs::read(&path).unwrap();
                let replay = std::panic::catch_unwind(|| target(&bytes));
                assert!(replay.is_ok(), "{name}: {} fails", path.display());
                inputs += 1;
            }
        }
        assert!(
            inputs > 0,
            "no corpus for the {name} target in fuzz/corpus/{name}"
        );
    }
}

/// A smoke of every target on the stable toolchain, in every test run: a fixed number of
/// seeded mutations of the corpus (bit flips, cuts, inserted and repeated bytes, splices of
/// two inputs), the same inputs each run. `cargo fuzz` (scripts/fuzz.sh) searches far more
/// widely; this keeps every target exercised beyond its corpus where the nightly toolchain
/// is not.
#[test]
fn seeded_mutations_of_the_corpus_never_fail_a_target() {
    const MUTATIONS: usize = 3000;
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (name, target) in targets::TARGETS {
        let mut corpus: Vec<Vec<u8>> = std::fs::read_dir(fuzz.join("corpus").join(name))
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect();
        corpus.sort();
        for _ in 0..MUTATIONS {
            let mut input = corpus[next() as usize % corpus.len()].clone();
            for _ in 0..1 + next() % 4 {
                let at = |n: u64, len: usize| n as usize % (len + 1);
                match next() % 5 {
                    0 if !input.is_empty() => {
                        let i = next() as usize % input.len();
                        input[i] ^= 1 << (next() % 8);
                    }
                    1 => input.truncate(at(next(), input.len())),
                    2 => {
                        let i = at(next(), input.len());
                        let bytes: Vec<u8> = (0..1 + next() % 8).map(|_| next() as u8).collect();
                        input.splice(i..i, bytes);
                    }
                    3 if !input.is_empty() => {
                        let (a, b) = (at(next(), input.len()), at(next(), input.len()));
                        let chunk = input[a.min(b)..a.max(b)].to_vec();
                        let i = at(next(), input.len());
                        input.splice(i..i, chunk);
                    }
                    _ => {
                        let other = &corpus[next() as usize % corpus.len()];
                        let (i, j) = (at(next(), input.len()), at(next(), other.len()));
                        input.truncate(i);
                        input.extend_from_slice(&other[j..]);
                    }
                }
            }
            let replay = std::panic::catch_unwind(|| target(&input));
            if replay.is_err() {
                let out = std::env::temp_dir().join(format!("framecull-fuzz-{name}-failure"));
                std::fs::write(&out, &input).unwrap();
                panic!(
                    "{name}: a mutation fails; the input is in {}",
                    out.display()
                );
            }
        }
    }
}
