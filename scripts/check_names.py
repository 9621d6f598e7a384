#!/usr/bin/env python3
"""Each flag code and measure name spelled once: no non-test source file but the registries
(crates/framecull-model/src/flag_codes.rs, `model::FlagCode`; crates/framecull-model/src/
measure.rs, `model::Measure`) holds a flag code or a measure's name as a string literal; code
elsewhere names them through the registries (`Measure::Fps.name()`). Words inside longer text
(SQL, messages) are not names. And errors are typed: no
`Result<_, String>` in non-test code (thiserror enums in the crates, anyhow in the front
ends). `#[cfg(test)]` items (to their closing brace), a module's unit tests in a file of their
own (`tests.rs`, declared `#[cfg(test)] mod tests;`), tests/ and fuzz/ are left out.
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


def without_tests(text):
    """`text` without its `#[cfg(test)]` items (a module or a function: to the brace that
    closes it; an item without a body: to the end of its line), their lines left empty."""
    out, at = [], 0
    while (start := text.find("#[cfg(test)]", at)) >= 0:
        out.append(text[at:start])
        cut = start
        brace, semi = text.find("{", start), text.find(";", start)
        if brace < 0 or 0 <= semi < brace:
            end = text.find("\n", start)
            at = len(text) if end < 0 else end + 1
            out.append("\n" * text[cut:at].count("\n"))
            continue
        depth, at = 0, len(text)
        for i in range(brace, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                at = i + 1
                break
        out.append("\n" * text[cut:at].count("\n"))
    out.append(text[at:])
    return "".join(out)


def string_results(text):
    """The `Result<_, String>` types in `text`, however wrapped: (line, type)."""
    found = []
    for m in re.finditer(r"\bResult<", text):
        depth, args, arg = 1, [], ""
        for c in text[m.end():]:
            if c in "<([":
                depth += 1
            elif c in ">)]":
                depth -= 1
                if depth == 0:
                    break
            if c == "," and depth == 1:
                args.append(arg)
                arg = ""
            else:
                arg += c
        args = [a for a in args + [arg] if a.strip()]
        if len(args) == 2 and args[1].strip() in ("String", "std::string::String"):
            line = text[: m.start()].count("\n") + 1
            found.append((line, "Result<" + ",".join(args) + ">"))
    return found


files = subprocess.check_output(["git", "ls-files", "*.rs"], text=True).split()
found = []
string_errors = []
for path in files:
    if path.startswith(("tests/", "fuzz/")) or "/tests/" in path or path.endswith("/tests.rs"):
        continue
    text = without_tests(open(path, encoding="utf-8").read())
    # The AppImage's launcher is a standalone binary on the standard library only.
    if not path.startswith("packaging/"):
        for line, ty in string_results(text):
            string_errors.append(f"{path}:{line}: {' '.join(ty.split())}")
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
