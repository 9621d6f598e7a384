"""Frames from Python equal PyAV's decode of the same frame indices, on the real-world videos
of ``../shared/media`` (or ``$FRAMECULL_MEDIA``). Skips with a message when the corpus or PyAV
is absent; with ``FRAMECULL_REQUIRE_MEDIA=1`` (CI) it fails instead."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import framecull
from conftest import REPO, run

MEDIA = Path(os.environ.get("FRAMECULL_MEDIA", REPO.parent / "shared" / "media"))
REQUIRED = os.environ.get("FRAMECULL_REQUIRE_MEDIA") == "1"


def need(condition: bool, why: str) -> None:
    if not condition:
        if REQUIRED:
            pytest.fail(f"{why} (FRAMECULL_REQUIRE_MEDIA=1)")
        pytest.skip(why)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    need((MEDIA / "video").is_dir(), f"no corpus at {MEDIA}: set FRAMECULL_MEDIA")
    project = tmp_path_factory.mktemp("corpus") / "project"
    run("scan", str(MEDIA / "video"), "--project", str(project))
    run("export", "--project", str(project), "--name", "videos", "--format", "jsonl")
    return project / "manifests" / "videos"


def one_file_manifest(folder: Path, manifest: Path, row: dict) -> Path:
    """A manifest version holding one row, in the documented format (docs/MANIFEST.md)."""
    meta = json.loads((manifest / "v0001.json").read_text())
    meta["files"] = {"jsonl": "v0001.jsonl"}
    meta.pop("frame_index", None)
    # Written by hand: no hashes of the data files (the loader checks them when present).
    meta.pop("file_hashes", None)
    meta["counts"] = {**meta["counts"], "rows": 1, "files": 1, "by_split": {}}
    folder.mkdir(parents=True)
    (folder / "v0001.jsonl").write_text(json.dumps(row) + "\n")
    (folder / "v0001.json").write_text(json.dumps(meta))
    return folder


# swscale's bilinear with chroma interpolated at full resolution and accurate rounding. Its
# default converts chroma at half the horizontal resolution, a few levels off on colour edges.
ACCURATE_BILINEAR = 0x2 | 0x2000 | 0x40000  # SWS_BILINEAR | SWS_FULL_CHR_H_INT | SWS_ACCURATE_RND


def pyav_frames(path: Path, index: int, wanted: set[int], matrix: int) -> dict[int, np.ndarray]:
    """RGB frames of stream ``index`` at the wanted indices (display order from the first
    frame), converted with the colour matrix and range framecull uses for the stream."""
    import av

    out = {}
    last = max(wanted)
    with av.open(str(path)) as container:
        stream = container.streams[index]
        stream.thread_type = "AUTO"
        for i, frame in enumerate(container.decode(stream)):
            if i in wanted:
                full = frame.color_range == 2  # AVCOL_RANGE_JPEG
                rgb = frame.reformat(
                    format="rgb24",
                    src_colorspace=matrix,
                    src_color_range=2 if full else 1,
                    dst_color_range=2,
                    interpolation=ACCURATE_BILINEAR,
                )
                out[i] = rgb.to_ndarray()
            if i >= last:
                break
    return out


def test_frames_equal_pyavs_decode(corpus, tmp_path):
    av = pytest.importorskip("av") if not REQUIRED else __import__("av")
    rows = [json.loads(line) for line in (corpus / "v0001.jsonl").read_text().splitlines()]
    videos = [r for r in rows if r["kind"] == "video" and r["width"] and r["height"]]
    assert len(videos) >= 20, f"only {len(videos)} videos exported from the corpus"
    compared, report, worst = 0, [], {}
    truth = [json.loads(l) for l in (MEDIA / "ground_truth.jsonl").read_text().splitlines() if l]
    clean = {t["file"].removeprefix("video/"): t.get("ffmpeg_error_lines") == 0 for t in truth}
    for n, row in enumerate(videos):
        manifest = one_file_manifest(tmp_path / f"m{n}", corpus, row)
        turns = (row["rotation_deg"] or 0) // 90 % 4
        w, h = row["width"], row["height"]
        if turns % 2:
            w, h = h, w
        loader = framecull.Loader(
            manifest, split=None, size=(h, w), crop="full", dtype="uint8", layout="bthwc",
            clip_len=6, stride=3, mode="uniform", batch_size=1, device="cpu", workers=1,
        )
        batches = [b for b in loader if len(b)]
        if not batches:
            errors = loader.stats()["errors"]
            # A file FFmpeg decodes without an error must give its window.
            assert not clean.get(row["path"]), f"{row['path']}: no window ({errors})"
            report.append(f"{row['path']}: no window ({errors}); FFmpeg reports errors too")
            continue
        batch = batches[0]
        got = np.asarray(batch.frames)[0]
        indices = [int(i) for i in batch.frame_indices[0, : batch.lengths[0]]]
        try:
            with av.open(str(MEDIA / "video" / row["path"])) as c:
                pass
        except Exception as e:  # PyAV's own FFmpeg may lack a demuxer or decoder
            report.append(f"{row['path']}: PyAV cannot open it ({e})")
            continue
        # The stream and the matrix the manifest row says the loader read it with (PyAV's
        # SWS_CS_* numbers: ITU709 1, ITU601 5, BT2020 9).
        matrix = {"bt709": 1, "bt601": 5, "bt2020": 9}[row["color_matrix"]]
        # The frames asked for and their neighbours: each delivered frame must be closer to
        # PyAV's frame of the same index than to the frames before and after it.
        wanted = {j for i in indices for j in (i - 1, i, i + 1) if j >= 0}
        expected = pyav_frames(MEDIA / "video" / row["path"], row["stream_index"], wanted, matrix)
        for slot, index in enumerate(indices):
            if index not in expected:
                report.append(f"{row['path']}: PyAV has no frame {index}")
                break
            frame = got[slot].astype(np.int16)

            def distance(j: int) -> float:
                return float(np.abs(np.rot90(expected[j], k=-turns).astype(np.int16) - frame).mean())

            if np.rot90(expected[index], k=-turns).shape != frame.shape:
                report.append(f"{row['path']}: shape {frame.shape} against PyAV's {expected[index].shape}")
                break
            mad = distance(index)
            worst[row["path"]] = max(worst.get(row["path"], 0.0), mad)
            for j in (index - 1, index + 1):
                apart = j in expected and np.abs(expected[j].astype(np.int16) - expected[index]).mean() > 1.0
                if apart:
                    assert mad < distance(j), f"{row['path']}: frame {index} looks like PyAV's frame {j}"
        else:
            compared += 1
    print(f"compared {compared} of {len(videos)} videos; not compared:\n" + "\n".join(report))
    for path, mad in sorted(worst.items(), key=lambda kv: -kv[1]):
        print(f"{mad:6.2f}  {path}")
    bad = {p: m for p, m in worst.items() if m > 2.0}
    assert not bad, f"mean absolute difference above 2 levels: {bad}"
    assert compared >= 0.8 * len(videos), "\n".join(report)
