"""Clip-loading throughput from Python: the framecull package against the loaders a PyTorch
user would otherwise write, on the same files, windows and output.

Output for every loader: windows of 16 consecutive frames, bilinear-resized (stretched) to
224x224, normalised with ImageNet's mean and std, float32 ``[B, T, C, H, W]``, batches of 8.
Peers, each in a ``multiprocessing.Pool`` of 2 processes (one per core here), one task per
clip so each decodes its file once, in order:
  (a) PyAV: decode, ``to_ndarray("rgb24")``, NumPy bilinear resize;
  (b) decord: ``VideoReader.get_batch(indices)``, NumPy bilinear resize.

Run (after ``bash scripts/python.sh --no-test``; decord: ``pip install decord``):
  target/python-venv/bin/python python/benches/bench_loader.py [--clips 8] [--repeat 3]
For figures, build the package with ``maturin develop --release``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SIZE = 224
T = 16
BATCH = 8
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(1, 3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(1, 3, 1, 1)
REPO = Path(__file__).resolve().parents[2]


def make_clips(folder: Path, count: int, seconds: int) -> None:
    sources = ["testsrc2", "mandelbrot", "life=mold=10:ratio=0.3", "cellauto=rule=110", "smptehdbars", "rgbtestsrc", "testsrc", "yuvtestsrc"]
    for i in range(count):
        name = sources[i % len(sources)]
        src, _, extra = name.partition("=")
        options = f"size=1280x720:rate=30{':' + extra if extra else ''}"
        path = folder / f"clip{i:02d}_{src}.mp4"
        if path.exists():
            continue
        vf = f"hue=h={i * 37},noise=alls=8:allf=t"
        subprocess.run(
            ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"{src}={options}", "-t", str(seconds),
             "-vf", vf, "-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-pix_fmt", "yuv420p", str(path)],
            check=True,
        )


def bilinear(rgb: np.ndarray) -> np.ndarray:
    """``[H, W, 3]`` uint8 to ``[3, SIZE, SIZE]`` float32 in [0, 1]: bilinear at pixel centres
    (half-pixel convention, edges clamped), as the loader samples."""
    h, w, _ = rgb.shape

    def taps(n_in: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = (np.arange(SIZE) + 0.5) * (n_in / SIZE) - 0.5
        x = np.clip(x, 0, n_in - 1)
        lo = np.floor(x).astype(np.int64)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, (x - lo).astype(np.float32)

    y0, y1, wy = taps(h)
    x0, x1, wx = taps(w)
    img = rgb.astype(np.float32) * (1 / 255)
    rows = img[y0] * (1 - wy)[:, None, None] + img[y1] * wy[:, None, None]
    out = rows[:, x0] * (1 - wx)[None, :, None] + rows[:, x1] * wx[None, :, None]
    return out.transpose(2, 0, 1)


def finish(frames: list[np.ndarray]) -> np.ndarray:
    window = np.stack([bilinear(f) for f in frames])
    return (window - MEAN) / STD


def pyav_clip(task: tuple[str, list[list[int]]]) -> list[np.ndarray]:
    import av

    path, windows = task
    wanted = {i for w in windows for i in w}
    last = max(wanted)
    frames = {}
    with av.open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        for i, frame in enumerate(container.decode(stream)):
            if i in wanted:
                frames[i] = frame.to_ndarray(format="rgb24")
            if i >= last:
                break
    return [finish([frames[i] for i in w]) for w in windows]


def decord_clip(task: tuple[str, list[list[int]]]) -> list[np.ndarray]:
    import decord

    path, windows = task
    reader = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=1)
    out = []
    for w in windows:
        frames = reader.get_batch(w).asnumpy()
        out.append(finish(list(frames)))
    return out


def peer(kind: str, tasks: list, batch: int) -> tuple[float, int, list[np.ndarray]]:
    fn = {"pyav": pyav_clip, "decord": decord_clip}[kind]
    started = time.perf_counter()
    frames = 0
    sample = []
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pending: list[np.ndarray] = []
        for windows in pool.imap(fn, tasks):
            pending.extend(windows)
            while len(pending) >= batch:
                out = np.stack(pending[:batch])
                pending = pending[batch:]
                frames += out.shape[0] * out.shape[1]
                if not sample:
                    sample = list(out)
        if pending:
            frames += len(pending) * T
    return time.perf_counter() - started, frames, sample


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clips", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "framecull-pybench")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import framecull

    bin_ = os.environ.get("FRAMECULL_BIN", str(REPO / "target" / "debug" / "framecull"))
    args.data.mkdir(parents=True, exist_ok=True)
    make_clips(args.data, args.clips, args.seconds)
    subprocess.run([bin_, "scan", str(args.data)], check=True, capture_output=True)
    subprocess.run([bin_, "export", "--project", str(args.data / ".framecull"), "--name", "bench"], check=True, capture_output=True)
    manifest = args.data / ".framecull" / "manifests" / "bench"
    settings = dict(split=None, mode="all", clip_len=T, size=SIZE, crop="full", batch_size=BATCH,
                    workers=2, device="cpu", shuffle=False, bucket=False)

    # framecull's windows, in order, tell the peers what to read.
    loader = framecull.Loader(manifest, **settings)
    by_clip: dict[str, list[list[int]]] = {}
    first = None
    for b in loader:
        if first is None:
            first = np.from_dlpack(b.frames).copy()
        for path, idx, n in zip(b.paths, b.frame_indices, b.lengths):
            by_clip.setdefault(str(args.data / path), []).append([int(i) for i in idx[:n]])
    tasks = list(by_clip.items())
    windows = sum(len(w) for _, w in tasks)

    results: dict[str, list[float]] = {"framecull": [], "pyav": [], "decord": []}
    frames_of: dict[str, int] = {}
    samples: dict[str, list] = {}
    peers = ["pyav"]
    try:
        import decord  # noqa: F401

        peers.append("decord")
    except ImportError:
        print("decord is not installed: skipped (pip install decord)", file=sys.stderr)
    for _ in range(args.repeat):
        loader = framecull.Loader(manifest, **settings)
        started = time.perf_counter()
        frames = 0
        for b in loader:
            a = np.from_dlpack(b.frames)
            frames += int(b.lengths.sum())
            a[0, 0, 0, 0, 0]  # touch it, as a training step would
        results["framecull"].append(frames / (time.perf_counter() - started))
        frames_of["framecull"] = frames
        for kind in peers:
            secs, frames, sample = peer(kind, tasks, BATCH)
            results[kind].append(frames / secs)
            frames_of[kind] = frames
            samples[kind] = sample
    best = {k: max(v) for k, v in results.items() if v}
    # Same output: the first windows agree (colour conversion and rounding apart).
    agreement = {}
    for kind, sample in samples.items():
        if sample and first is not None:
            agreement[kind] = float(np.abs(np.stack(sample[: len(first)]) - first).mean())
    report = {
        "clips": len(tasks),
        "windows": windows,
        "frames_per_run": frames_of,
        "frames_per_sec": results,
        "best_frames_per_sec": best,
        "speedup": {k: best["framecull"] / best[k] for k in best if k != "framecull"},
        "mean_abs_difference_first_batch": agreement,
        "framecull_stats": loader.stats(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{len(tasks)} clips, {windows} windows of {T} frames, 224x224 float32, batches of {BATCH}")
        for k, v in results.items():
            if v:
                runs = ", ".join(f"{x:.0f}" for x in v)
                print(f"  {k:10s} {best[k]:7.1f} frames/s (runs: {runs})")
        for k, s in report["speedup"].items():
            print(f"  framecull / {k}: {s:.2f}x; first batch differs by {agreement.get(k, float('nan')):.4f} (normalised units)")


if __name__ == "__main__":
    main()
