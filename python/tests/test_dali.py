"""DALI's file lists (`export --format dali`) against PyAV: a line's `START END` are the
frames a decoder gives out at those indices, in presentation order, the end excluded, on a
video with B-frames (decode order differs from presentation order)."""

from __future__ import annotations

import json
from pathlib import Path

import av

import framecull

from conftest import SOURCES, make_dataset, run


def test_a_dali_span_is_the_decoders_frames_start_included_end_excluded(tmp_path: Path) -> None:
    root = tmp_path / "data"
    project = make_dataset(root, SOURCES[:2])
    run("clips", "add", "a_testsrc2.mp4", "--start", "f7", "--end", "f31", "--label", "kick", cwd=root)
    run("export", "--name", "d", "--format", "jsonl,dali", cwd=root)
    folder = project / "manifests" / "d"
    index = json.loads((folder / "v0001.dali.json").read_text())
    assert index["reader_arguments"]["fn.experimental.readers.video"]["file_list_include_end"] is False
    lines = [l.split() for l in (folder / index["lists"]["all"]).read_text().splitlines() if l.strip()]
    rows = [json.loads(l) for l in (folder / "v0001.jsonl").read_text().splitlines()]
    row = next(r for r in rows if r["path"] == "a_testsrc2.mp4")
    line = next(l for l in lines if l[0].endswith("/a_testsrc2.mp4") and len(l) == 4)
    start, end = int(line[2]), int(line[3])
    assert (start, end) == (7, 31) == (row["start_frame"], row["end_frame"])
    assert index["labels"][int(line[1])] == "kick"
    with av.open(line[0]) as container:
        pts = [frame.pts for frame in container.decode(video=0)]
    # B-frames: the file's packets are not in presentation order, its decoded frames are.
    assert pts == sorted(pts)
    taken = pts[start:end]
    assert len(taken) == end - start == 24
    assert taken[0] == row["start_pts"] and pts[end] == row["end_pts"]


def test_frame_maps_hold_every_frames_pts_and_key_flag_as_pyav_reads_the_packets(tmp_path: Path) -> None:
    root = tmp_path / "data"
    project = make_dataset(root, SOURCES[:3])
    run("clips", "add", "a_testsrc2.mp4", "--start", "f3", "--end", "f40", cwd=root)
    run("export", "--name", "m", "--format", "jsonl,frame-maps", cwd=root)
    folder = project / "manifests" / "m"
    index = json.loads((folder / "v0001.frame-maps.json").read_text())
    rows = [json.loads(l) for l in (folder / "v0001.jsonl").read_text().splitlines()]
    videos = sorted({r["path"] for r in rows if r["kind"] == "video"})
    assert sorted(index["maps"]) == videos and not index["left_out"]
    # Each row names its video's map; a picture's row none.
    for row in rows:
        assert row.get("frame_map") == index["maps"].get(row["path"]), row
    assert any("frame_map" in row for row in rows)
    table = framecull.read_manifest(folder / "v0001.jsonl")
    assert table.column("frame_map").to_pylist() == [row.get("frame_map") for row in rows]
    for path in videos:
        frames = json.loads((folder / index["maps"][path]).read_text())["frames"]
        with av.open(str(root / path)) as container:
            stream = container.streams.video[0]
            packets = sorted(
                (p.pts, p.is_keyframe) for p in container.demux(stream) if p.pts is not None and p.size
            )
        assert [(f["pts"], bool(f["key_frame"])) for f in frames] == packets, path
        assert all(f["duration"] > 0 for f in frames), path
