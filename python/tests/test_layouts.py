"""Class folders (`--format folders`) and Hugging Face folders (`--format hf`) of a version's
clip files, read back by their consumers: every labelled clip once in its split's label
folder, hard-linked to its clip file; `datasets.load_dataset("imagefolder")` reads the
pictures with their labels and rows, the video folders' metadata names files that are there
and hold the clip's frames (PyAV)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import ffmpeg, run

av = pytest.importorskip("av")


def make_project(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "data"
    data.mkdir()
    for i in range(6):
        ffmpeg("-f", "lavfi", "-i", f"testsrc2=size={64 + 8 * i}x48:rate=1", "-frames:v", "1",
               str(data / f"cat_{i}.png"))
        ffmpeg("-f", "lavfi", "-i", f"mandelbrot=size={64 + 8 * i}x48:rate=1", "-frames:v", "1",
               str(data / f"dog {i}.jpg"))
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=160x96:rate=25:duration=3,noise=alls=6:allf=t",
           "-c:v", "libx264", "-g", "12", "-bf", "2", "-pix_fmt", "yuv420p", str(data / "walk.mp4"))
    project = tmp_path / "project"
    run("scan", str(data), "--deep", "--project", str(project))
    run("labels", "set", "cat", *[f"cat_{i}.png" for i in range(6)], "--project", str(project))
    # One picture without a label: left out of the class folders, in the Hugging Face ones.
    run("labels", "set", "dog/puppy", *[f"dog {i}.jpg" for i in range(5)], "--project", str(project))
    for start, end, label in [(2, 30, "walk"), (20, 60, "run")]:
        run("clips", "--project", str(project), "add", "walk.mp4", "--start", f"f{start}",
            "--end", f"f{end}", "--label", label)
    run("review", "accept", "walk.mp4", "--project", str(project))
    return data, project


def test_class_folders_and_hugging_face_folders(tmp_path):
    data, project = make_project(tmp_path)
    clips = tmp_path / "clips"
    done = run("export", "--project", str(project), "--name", "set", "--format",
               "parquet,jsonl,folders,hf", "--split", "train=0.5,validation=0.5", "--json",
               "--materialize", str(clips))
    assert done.returncode == 0, done.stderr
    meta = json.loads(done.stdout)
    manifests = project / "manifests" / "set"
    rows = [json.loads(line) for line in (manifests / "v0001.jsonl").read_text().splitlines()]
    assert len(rows) == 14, rows

    # Class folders: every labelled row once, as SPLIT/LABEL/CLIP_ID.EXT, a hard link to its
    # clip file (the same file system); the row without a label left out and counted.
    folders = manifests / meta["files"]["folders.dir"]
    index = json.loads((manifests / meta["files"]["folders"]).read_text())
    found = {p.name: p.relative_to(folders) for p in folders.rglob("*") if p.is_file()}
    labelled = [r for r in rows if r.get("label")]
    assert len(labelled) == 13 and len(found) == 13, found
    for r in labelled:
        split, label, name = found[r["clip_file"]].parts
        assert split == r["split"], (r, split)
        # A label that is not a folder name as it is ("dog/puppy") is one with its hash.
        if "/" in r["label"]:
            assert label.startswith(r["label"].replace("/", "_") + "~") and len(label) == 18, label
        else:
            assert label == r["label"], (r, label)
        assert os.path.samefile(folders / split / label / name, clips / r["clip_file"])
    # One folder per label in each split.
    assert len({found[r["clip_file"]].parts[:2] for r in labelled}) == len(
        {(r["split"], r["label"]) for r in labelled})
    assert index["linked"] == 13 and index["copied"] == 0, index
    assert index["left_out"] == {"no label": 1}, index
    assert sum(index["by_split"].values()) == 13, index

    # Hugging Face folders: pictures under images/, videos under videos/, one metadata.jsonl
    # per split folder whose file_name names a file beside it.
    hf = manifests / meta["files"]["hf.dir"]
    for kind in ("images", "videos"):
        for split_dir in (hf / kind).iterdir():
            lines = [json.loads(line) for line in (split_dir / "metadata.jsonl").read_text().splitlines()]
            names = sorted(p.name for p in split_dir.iterdir() if p.name != "metadata.jsonl")
            assert sorted(line["file_name"] for line in lines) == names, split_dir
            for line in lines:
                row = next(r for r in rows if r["clip_id"] == line["clip_id"])
                assert row["split"] == split_dir.name and line["label"] == row.get("label")
                if kind == "videos":
                    # The clip's frames, as the row says.
                    with av.open(str(split_dir / line["file_name"])) as c:
                        frames = sum(1 for _ in c.decode(video=0))
                    assert frames == row["end_frame"] - row["start_frame"] == line["end_frame"] - line["start_frame"]

    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset("imagefolder", data_dir=str(hf / "images"))
    pictures = [r for r in rows if r["kind"] == "image"]
    assert sum(len(loaded[s]) for s in loaded) == len(pictures), loaded
    for split in loaded:
        assert split in ("train", "validation"), loaded
        for example in loaded[split]:
            row = next(r for r in rows if r["clip_id"] == example["clip_id"])
            assert example["label"] == row.get("label")
            assert example["image"].size == (row["width"], row["height"])
    # The video folders as "videofolder" reads them (not decoded: that needs torchcodec): a
    # row per clip, with its label, at a path that is there.
    videos = datasets.load_dataset("videofolder", data_dir=str(hf / "videos"))
    clips_rows = [r for r in rows if r["kind"] == "video"]
    assert sum(len(videos[s]) for s in videos) == len(clips_rows), videos
    for split in videos:
        table = videos[split].cast_column("video", datasets.Video(decode=False))
        for example in table:
            row = next(r for r in rows if r["clip_id"] == example["clip_id"])
            assert example["label"] == row["label"] and Path(example["video"]["path"]).is_file()
