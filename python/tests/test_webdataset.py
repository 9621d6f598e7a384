"""WebDataset shards (`--format webdataset`) of a version's clip files, read back by the
`webdataset` package: every shard of every split iterated, every row's sample found once
with its clip file (the clip file's very bytes, a video PyAV decodes to the row's frame
count) and its metadata (label, source path, frames); shards under the size asked for.
(tests/it/manifest/webdataset.rs stops a shard write with SIGTERM and resumes it.)"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from conftest import run
from test_layouts import make_project

av = pytest.importorskip("av")
wds = pytest.importorskip("webdataset")


def export(project: Path, clips: Path, name: str, *extra: str) -> subprocess.CompletedProcess:
    return run("export", "--project", str(project), "--name", name, "--format", "jsonl,webdataset",
               "--split", "train=0.5,validation=0.5", "--json", "--materialize", str(clips), *extra)


def test_shards_are_read_by_webdataset_with_every_sample_once(tmp_path):
    _, project = make_project(tmp_path)
    clips = tmp_path / "clips"
    # Small shards: several a split, whichever files its split draws (the splits follow the
    # files' content hashes, which the encoders' output on this CPU decides).
    done = export(project, clips, "set", "--shard-size", "8k")
    assert done.returncode == 0, done.stderr
    meta = json.loads(done.stdout)
    manifests = project / "manifests" / "set"
    rows = {r["clip_id"]: r for r in map(json.loads, (manifests / "v0001.jsonl").read_text().splitlines())}
    assert len(rows) == 14
    shards = manifests / meta["files"]["webdataset.dir"]
    index = json.loads((manifests / meta["files"]["webdataset"]).read_text())
    assert index["key"] == "clip_id" and index["left_out"] == {}, index
    assert set(index["splits"]) == {"train", "validation"}, index
    seen: dict[str, str] = {}
    for split, info in index["splits"].items():
        listed = (shards / info["list"]).read_text().split()
        assert listed == [s["file"] for s in info["shards"]], info
        assert len(listed) >= min(2, info["samples"]), info
        for shard in info["shards"]:
            size = (shards / shard["file"]).stat().st_size
            assert size == shard["bytes"], shard
            # Under the size asked for, but where one sample alone is larger.
            assert size <= 8_000 or shard["samples"] == 1, shard
        urls = [str(shards / name) for name in listed]
        for sample in wds.WebDataset(urls, shardshuffle=False, empty_check=False):
            key = sample["__key__"]
            assert key not in seen, key
            seen[key] = split
            row = rows[key]
            assert row["split"] == split, (row, split)
            info = json.loads(sample["json"])
            assert info["clip_id"] == key and info["path"] == row["path"], info
            assert info.get("label") == row.get("label"), (info, row)
            assert (info["start_frame"], info["end_frame"]) == (row.get("start_frame"), row.get("end_frame"))
            ext = Path(row["clip_file"]).suffix[1:]
            data = sample[ext]
            # The clip file's very bytes.
            assert data == (clips / row["clip_file"]).read_bytes(), key
            if ext == "mp4":
                with av.open(io.BytesIO(data)) as container:
                    frames = sum(1 for _ in container.decode(video=0))
                assert frames == row["end_frame"] - row["start_frame"], (key, frames)
    assert set(seen) == set(rows), set(rows) - set(seen)


def test_the_loader_reads_a_split_from_its_shards_as_from_its_clip_files(tmp_path):
    import framecull

    _, project = make_project(tmp_path)
    clips = tmp_path / "clips"
    done = export(project, clips, "set", "--shard-size", "20k")
    assert done.returncode == 0, done.stderr
    manifests = project / "manifests" / "set"
    settings = dict(split="train", batch_size=2, size=(32, 32), clip_len=4, workers=2, device="cpu",
                    checksum=True, shuffle=False)
    stats = {}
    for how in ("clip_files", "shards"):
        loader = framecull.Loader(manifests, **settings, **{how: True})
        batches = sum(1 for _ in loader)
        stats[how] = loader.stats()
        assert batches > 1, stats[how]
    assert stats["shards"]["checksum"] == stats["clip_files"]["checksum"] != "", stats
    assert stats["shards"]["frames"] == stats["clip_files"]["frames"] > 0, stats
    index = json.loads((manifests / "v0001.webdataset.json").read_text())
    train = index["splits"]["train"]
    assert stats["shards"]["shards_read"] == len(train["shards"]), stats
    assert stats["shards"]["shard_bytes_read"] == train["bytes"], stats
