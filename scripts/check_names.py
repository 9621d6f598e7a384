#!/usr/bin/env python3
"""Each flag code and measure name spelled once: no non-test source file but the registries
(crates/framecull-model/src/flag_codes.rs, `model::FlagCode`; crates/framecull-model/src/
measure.rs, `model::Measure`) holds a flag code or a measure's name as a string literal; code
elsewhere names them through the registries (`Measure::Fps.name()`). Schema migrations, whose
SQL is history, and words inside longer text are not names. And errors are typed: no
`Result<_, String>` in non-test code (thiserror enums in the crates, anyhow in the front
ends). Test modules (a file from its first `#[cfg(test)]` on), tests/ and fuzz/ are left out.
usage: scripts/check_names.py"""
import re
import subprocess
import sys

REGISTRY = "crates/framecull-model/src/flag_codes.rs"
MEASURES = "crates/framecull-model/src/measure.rs"
# Other words spelt as a code or a measure's name: (file, literal).
ALLOWED = {
    # An item's status (`model::ItemStatus`), whose flag says the same in other words.
    ("crates/framecull-model/src/item.rs", "unsupported"),
    # load-bench's --fps option (a rate to sample at), which clap names.
    ("src/cli/load_bench.rs", "fps"),
}

codes = re.findall(r'spec\(\s*"([a-z_]+)"', open(REGISTRY).read())
if len(codes) < 30:
    sys.exit(f"{REGISTRY}: found {len(codes)} codes; has the registry's form changed?")
measures = re.findall(r'Measure::\w+ => spec\(\s*"([a-z_]+)"', open(MEASURES).read())
if len(measures) < 12:
    sys.exit(f"{MEASURES}: found {len(measures)} measures; has the registry's form changed?")
files = subprocess.check_output(["git", "ls-files", "*.rs"], text=True).split()
found = []
string_errors = []
for path in files:
    if path.startswith(("tests/", "fuzz/")) or "/tests/" in path:
        continue
    text = open(path, encoding="utf-8").read().split("#[cfg(test)]")[0]
    # The AppImage's launcher is a standalone binary on the standard library only.
    for n, line in enumerate([] if path.startswith("packaging/") else text.splitlines(), 1):
        if re.search(r"Result<.*, String>", line) and not re.search(r"Map<String, String>", line):
            string_errors.append(f"{path}:{n}: {line.strip()}")
    if path != REGISTRY:
        for code in codes:
            if f'"{code}"' in text and (path, code) not in ALLOWED:
                found.append(f"{path}: \"{code}\" (use model::FlagCode::..., or model::outlier_code)")
    if path != MEASURES:
        for name in measures:
            if f'"{name}"' in text and (path, name) not in ALLOWED:
                found.append(f"{path}: \"{name}\" (use model::Measure::....name())")
if string_errors:
    print("errors as strings (a thiserror enum, or anyhow in a front end):", *string_errors, sep="\n  ")
if found:
    print("flag codes or measure names spelled outside their registry:", *found, sep="\n  ")
if found or string_errors:
    sys.exit(1)
print(
    f"ok: {len(codes)} flag codes and {len(measures)} measures, each spelled in its registry "
    "only; no Result<_, String>"
)
