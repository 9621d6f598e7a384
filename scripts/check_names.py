#!/usr/bin/env python3
"""Each flag code spelled once: no non-test source file but the registry
(crates/framecull-model/src/flag_codes.rs, `model::FlagCode`) holds a flag code as a string
literal; code elsewhere names a code through the registry. Test modules (a file from its first
`#[cfg(test)]` on), tests/ and fuzz/ are left out. usage: scripts/check_names.py"""
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
for path in files:
    if path == REGISTRY or path.startswith(("tests/", "fuzz/")) or "/tests/" in path:
        continue
    text = open(path, encoding="utf-8").read().split("#[cfg(test)]")[0]
    for code in codes:
        if f'"{code}"' in text and (path, code) not in ALLOWED:
            found.append(f"{path}: \"{code}\" (use model::FlagCode::..., or model::outlier_code)")
if found:
    print("flag codes spelled outside the registry:", *found, sep="\n  ")
    sys.exit(1)
print(f"ok: {len(codes)} flag codes, each spelled in {REGISTRY} only")
