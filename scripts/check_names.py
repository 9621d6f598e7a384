#!/usr/bin/env python3
"""Each flag code spelled once: no non-test source file but the registry
(crates/framecull-model/src/flag_codes.rs, `model::FlagCode`) holds a flag code as a string
literal; code elsewhere names a code through the registry. And errors are typed: no
`Result<_, String>` in non-test code (thiserror enums in the crates, anyhow in the front
ends). Test modules (a file from its first `#[cfg(test)]` on), tests/ and fuzz/ are left out.
usage: scripts/check_names.py"""
import re
import subprocess
import sys

REGISTRY = "crates/framecull-model/src/flag_codes.rs"
# Other words spelt as a code: (file, literal).
ALLOWED = {
    # An item's status (`model::ItemStatus`), whose flag says the same in other words.
    ("crates/framecull-model/src/item.rs", "unsupported"),
}

codes = re.findall(r'spec\(\s*"([a-z_]+)"', open(REGISTRY).read())
if len(codes) < 30:
    sys.exit(f"{REGISTRY}: found {len(codes)} codes; has the registry's form changed?")
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
    if path == REGISTRY:
        continue
    for code in codes:
        if f'"{code}"' in text and (path, code) not in ALLOWED:
            found.append(f"{path}: \"{code}\" (use model::FlagCode::..., or model::outlier_code)")
if string_errors:
    print("errors as strings (a thiserror enum, or anyhow in a front end):", *string_errors, sep="\n  ")
if found:
    print("flag codes spelled outside the registry:", *found, sep="\n  ")
if found or string_errors:
    sys.exit(1)
print(f"ok: {len(codes)} flag codes, each spelled in {REGISTRY} only; no Result<_, String>")
