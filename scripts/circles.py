#!/usr/bin/env python3
"""No import circles: within each crate (crates/*/src, and src/), no files refer to each other
in a loop through `crate::` and `super::` paths (a file's own `mod tests` excluded). Prints each
loop found and exits 1; 0 when there are none."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATH = re.compile(r"\b((?:crate|super)(?:::super)*)::(\{|[A-Za-z_][\w:]*)")


def group_at(text: str, start: int) -> str:
    """The brace group that opens at `start`, nested groups included."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start : i + 1]
    return text[start:]


def module_of(src: Path, file: Path) -> list[str]:
    """The module path of `file` in its crate (`[]` for lib.rs / main.rs)."""
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return parts


def file_of(src: Path, path: list[str]) -> Path | None:
    """The file that holds the module `path`, or the nearest one above it."""
    for n in range(len(path), 0, -1):
        for candidate in (src.joinpath(*path[:n]).with_suffix(".rs"), src.joinpath(*path[:n], "mod.rs")):
            if candidate.is_file():
                return candidate
    return None


def items(group: str) -> list[list[str]]:
    """The paths a `{a::b, c}` group names (first levels are enough), or the one path."""
    if not group.startswith("{"):
        return [group.split("::")]
    inner = group[1:-1]
    depth, start, out = 0, 0, []
    for i, c in enumerate(inner + ","):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            item = inner[start:i].strip()
            start = i + 1
            if item:
                out.append(re.split(r"::|\s", item.replace("{", " "))[:1] + [""])
    return [[p for p in o if p] for o in out]


def without_tests(text: str) -> str:
    """The text without `#[cfg(test)] mod NAME { ... }` blocks."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def edges(src: Path) -> dict[Path, set[Path]]:
    graph: dict[Path, set[Path]] = {}
    for file in sorted(src.rglob("*.rs")):
        here = module_of(src, file)
        # `super` of a file is its parent module; of a mod.rs / lib.rs, the one above that.
        parent = here[:-1]
        text = without_tests(re.sub(r"//[^\n]*", "", file.read_text()))
        targets = graph.setdefault(file, set())
        for m in PATH.finditer(text):
            head, rest = m.group(1), m.group(2)
            if rest == "{":
                rest = group_at(text, m.start(2))
            if head == "crate":
                base = []
            else:
                ups = head.count("super")
                base = parent[: len(parent) - (ups - 1)] if ups - 1 <= len(parent) else []
            for item in items(rest):
                target = file_of(src, base + item)
                if target and target != file and module_of(src, target):
                    targets.add(target)
    return graph


def loops(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """The strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    found = 0
    roots = sorted(ROOT.glob("crates/*/src")) + [ROOT / "src"] + sorted(ROOT.glob("src/bin/*/"))
    for src in roots:
        graph = edges(src)
        if src == ROOT / "src":
            # Each folder of src/bin is a crate of its own.
            graph = {f: {t for t in ts if "bin" not in t.relative_to(src).parts[:1]}
                     for f, ts in graph.items() if "bin" not in f.relative_to(src).parts[:1]}
        for component in loops(graph):
            found += 1
            names = ", ".join(str(p.relative_to(ROOT)) for p in component)
            print(f"circles: these files refer to each other in a loop: {names}")
    if not found:
        print("ok: no import circles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
