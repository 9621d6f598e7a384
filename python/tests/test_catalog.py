"""Manifests and catalogs as Arrow tables."""

from __future__ import annotations

import json
import subprocess

import pyarrow as pa
import pytest

import framecull
from conftest import SOURCES, make_dataset, run


def test_read_manifest_matches_the_command_lines_export(dataset):
    table = framecull.read_manifest(dataset["all"])
    assert table.schema.equals(framecull.MANIFEST_SCHEMA)
    meta = framecull.manifest_meta(table)
    assert meta["name"] == "all" and meta["version"] == 1
    # The same rows as the version's JSON lines, written by the export.
    jsonl = dataset["all"] / "v0001.jsonl"
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert table.num_rows == len(rows) == 6
    assert table.column("clip_id").to_pylist() == [r["clip_id"] for r in rows]
    assert table.column("tags").type == pa.list_(pa.string())
    assert framecull.read_manifest(dataset["all"], version=1).equals(table)
    with pytest.raises(framecull.ManifestError, match="v0002"):
        framecull.read_manifest(dataset["all"], version=2)


def test_catalog_items_are_the_list_command(dataset):
    catalog = framecull.Catalog(dataset["root"])
    items = catalog.items()
    listed = [json.loads(l) for l in run("list", "--project", str(dataset["project"]), "--format", "jsonl").stdout.splitlines()]
    assert items.num_rows == len(listed) == 6
    assert items.column("path").to_pylist() == [r["path"] for r in listed]
    assert items.column("motion_mean").to_pylist() == [r["motion_mean"] for r in listed]
    assert items.column_names == list(listed[0])
    assert catalog.items(all=True).num_rows == 6  # no other files in this dataset
    life = catalog.items('path:"c_life"')
    assert life.column("path").to_pylist() == ["c_life.mkv"]
    with pytest.raises(framecull.ConfigError):
        catalog.items("motion_mean >>> 2")
    with pytest.raises(framecull.CatalogError):
        framecull.Catalog("/")


def test_reviews_clips_flags_and_diffs(dataset, copy_of):
    root = copy_of(dataset["root"])
    project = root / ".framecull"
    run("review", "reject", "d_cellauto.mp4", "--project", str(project))
    run("tag", "add", "night", "a_testsrc2.mp4", "--project", str(project))
    run("clips", "add", "a_testsrc2.mp4", "--start", "f12", "--end", "f60", "--project", str(project))
    run("export", "--project", str(project), "--name", "all")
    catalog = framecull.Catalog(project)
    decisions = {r["path"]: r for r in catalog.decisions().to_pylist()}
    assert decisions["d_cellauto.mp4"]["decision"] == "rejected"
    assert decisions["a_testsrc2.mp4"]["tags"] == ["night"]
    clips = catalog.clips().to_pylist()
    assert [(c["path"], c["start_frame"], c["end_frame"]) for c in clips] == [("a_testsrc2.mp4", 12, 60)]
    assert clips[0]["start_secs"] == pytest.approx(12 / 25) and clips[0]["time_base"] == "1/12800"
    assert catalog.flags().num_rows == sum(len(r["flags"]) for r in catalog.items().to_pylist())
    assert [m["version"] for m in catalog.manifests()["all"]] == [1, 2]
    diff = catalog.diff("all", 1, 2)
    # The rejected file leaves; the marked clip replaces its file's whole-file row.
    assert sorted(c["path"] for c in diff["removed"]) == ["a_testsrc2.mp4", "d_cellauto.mp4"]
    assert [c["path"] for c in diff["added"]] == ["a_testsrc2.mp4"]
    cli = json.loads(run("diff", "all", "1", "2", "--json", "--project", str(project)).stdout)
    assert diff == cli


def test_files_that_are_not_media_are_listed_with_all(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    (root / "README.txt").write_text("one video\n")
    make_dataset(root, SOURCES[:1])
    catalog = framecull.Catalog(root)
    assert catalog.items().column("path").to_pylist() == [SOURCES[0][0]]
    everything = catalog.items(all=True).to_pylist()
    assert [r["path"] for r in everything] == [SOURCES[0][0], "README.txt"]
    readme = everything[-1]
    assert (readme["kind"], readme["status"], readme["size_bytes"]) == ("other", "not_media", 10)
    assert readme["error"] == "not media: .txt files are not images or videos"


def test_to_polars_when_polars_is_installed(dataset):
    pl = pytest.importorskip("polars")
    frame = framecull.Catalog(dataset["root"]).to_polars()
    assert isinstance(frame, pl.DataFrame) and frame.height == 6
