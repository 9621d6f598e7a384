"""The loader from Python: zero copy, the same batches as the command line, determinism,
sharding, the GIL, fork and spawn, memory, errors."""

from __future__ import annotations

import gc
import hashlib
import multiprocessing
import os
import pickle
import threading
import time

import numpy as np
import pytest

import framecull
from conftest import load_bench

SMALL = dict(split=None, size=(64, 64), batch_size=2, device="cpu")


def digest(loader: framecull.Loader) -> tuple[str, int]:
    """A hash over every batch of an epoch (shapes, frames named, bytes) and the count."""
    h = hashlib.sha256()
    n = 0
    for batch in loader:
        a = np.asarray(batch.frames)
        h.update(repr(a.shape).encode())
        h.update(batch.frame_indices.tobytes())
        h.update(repr(batch.clip_ids).encode())
        h.update(a.tobytes())
        n += 1
    return h.hexdigest(), n


def windows(loader: framecull.Loader) -> set:
    out = set()
    for batch in loader:
        for clip, frames, length in zip(batch.clip_ids, batch.frame_indices, batch.lengths):
            out.add((clip, tuple(frames[:length])))
    return out


def test_frames_are_handed_over_without_a_copy(dataset):
    loader = framecull.Loader(dataset["all"], **SMALL, workers=2)
    batch = next(iter(loader))
    via_dlpack = np.from_dlpack(batch.frames)
    via_interface = np.asarray(batch.frames)
    address = batch.frames.data_ptr
    assert via_dlpack.__array_interface__["data"][0] == address
    assert via_interface.__array_interface__["data"][0] == address
    assert via_dlpack.shape == tuple(batch.frames.shape) == (2, 16, 3, 64, 64)
    assert via_dlpack.dtype == np.float32 and via_dlpack.nbytes == batch.frames.nbytes
    # A view keeps the memory alive after the batch is gone, and nothing reuses it meanwhile.
    expected = via_dlpack.copy()
    del batch, via_interface
    gc.collect()
    for _ in loader:
        pass
    assert np.array_equal(via_dlpack, expected)
    assert np.isfinite(expected).all() and expected.std() > 0.1


def test_dtypes_and_layouts_reach_numpy_as_declared(dataset):
    for dtype, layout, shape in [
        ("uint8", "bthwc", (2, 16, 64, 64, 3)),
        ("float16", "bcthw", (2, 16, 3, 64, 64)),
    ]:
        loader = framecull.Loader(dataset["all"], **SMALL, dtype=dtype, layout=layout)
        batch = next(iter(loader))
        a = np.from_dlpack(batch.frames)
        assert a.dtype == np.dtype(dtype) and a.shape == shape
        assert np.asarray(batch.frames).dtype == np.dtype(dtype)
        if dtype == "uint8":
            assert a.max() > 200 and a.min() < 50


def test_batches_equal_the_command_lines_checksum(dataset):
    args = dict(split=None, batch_size=3, size=(96, 128), workers=2, device="cpu", checksum=True, mode="all", clip_len=8, stride=2)
    loader = framecull.Loader(dataset["all"], **args)
    count = sum(1 for _ in loader)
    stats = loader.stats()
    report = load_bench(
        dataset["all"], "--batch-size", "3", "--size", "128x96", "--workers", "2",
        "--device", "cpu", "--batches", "0", "--mode", "all", "--clip-len", "8", "--stride", "2",
    )
    assert count == report["batches"] == report["batches_planned"] > 3
    assert stats["checksum"] == report["checksum"] != ""
    assert stats["frames"] == report["frames"]


def test_one_and_four_workers_give_identical_batches(dataset):
    args = dict(SMALL, mode="all", clip_len=8, crop="random", hflip=0.5, seed=7)
    one = digest(framecull.Loader(dataset["all"], **args, workers=1))
    four = digest(framecull.Loader(dataset["all"], **args, workers=4))
    again = digest(framecull.Loader(dataset["all"], **args, workers=4))
    assert one == four == again
    assert one[1] > 5
    other_seed = digest(framecull.Loader(dataset["all"], **{**args, "seed": 8}, workers=2))
    assert other_seed != one


def test_worker_processes_and_this_process_give_identical_batches(dataset):
    # scripts/python.sh points FRAMECULL_WORKER_EXE at the binary: the loader's default then
    # decodes in `framecull worker loader` processes.
    assert os.environ.get("FRAMECULL_WORKER_EXE"), "FRAMECULL_WORKER_EXE is not set"
    args = dict(SMALL, mode="all", clip_len=8, crop="random", hflip=0.5, seed=7, workers=2)
    isolated = framecull.Loader(dataset["all"], **args)
    in_workers = digest(isolated)
    local = framecull.Loader(dataset["all"], **args, isolate=False)
    here = digest(local)
    assert in_workers == here
    assert here[1] > 5
    # The first did decode in workers, the second did not.
    assert isolated.stats()["worker_processes"] >= 1
    assert local.stats()["worker_processes"] == 0


def test_epochs_differ_and_repeat(dataset):
    loader = framecull.Loader(dataset["all"], **SMALL, mode="random", workers=2)
    loader.set_epoch(0)
    first = digest(loader)
    loader.set_epoch(1)
    second = digest(loader)
    loader.set_epoch(0)
    assert digest(loader) == first != second


def test_rank_shards_are_disjoint_and_complete(dataset):
    args = dict(SMALL, mode="all", clip_len=8, workers=2)
    whole = windows(framecull.Loader(dataset["all"], **args))
    shards = [windows(framecull.Loader(dataset["all"], **args, rank=r, world_size=3)) for r in range(3)]
    assert len(whole) > 10
    assert set().union(*shards) == whole
    assert sum(len(s) for s in shards) == len(whole)


def test_batches_say_what_they_hold(dataset):
    loader = framecull.Loader(dataset["split"], split="train", size=32, batch_size=4, clip_len=None, max_frames=200, device="cpu")
    table = framecull.read_manifest(dataset["split"]).to_pylist()
    by_clip = {r["clip_id"]: r for r in table}
    seen = 0
    for batch in loader:
        t = batch.frames.shape[1]
        for i, clip in enumerate(batch.clip_ids):
            row = by_clip[clip]
            assert row["split"] == batch.splits[i] == "train"
            assert batch.paths[i] == row["path"]
            assert batch.motion[i] == pytest.approx(row["motion"])
            n = batch.lengths[i]
            # Whole clips: every frame of the file, in order, then padding.
            assert list(batch.frame_indices[i, :n]) == list(range(n))
            assert (batch.frame_indices[i, n:] == -1).all() and np.isnan(batch.pts_secs[i, n:]).all()
            assert np.all(np.diff(batch.pts_secs[i, :n]) > 0)
            assert n == row["end_frame"] - row["start_frame"]
            if n < t:
                assert not np.asarray(batch.frames)[i, n:].any()
            seen += 1
    assert seen == sum(1 for r in table if r["split"] == "train") > 0


def test_a_python_thread_runs_while_the_loader_works(dataset):
    # Free-running rate of a counting thread, then the same thread while an epoch is read.
    def count_for(seconds: float) -> float:
        stop = time.monotonic() + seconds
        n = 0
        while time.monotonic() < stop:
            n += 1
        return n / seconds

    alone = count_for(0.3)
    counted = [0]
    running = threading.Event()
    running.set()

    def counter():
        while running.is_set():
            counted[0] += 1

    loader = framecull.Loader(dataset["all"], split=None, size=(160, 160), batch_size=2, mode="all", clip_len=8, workers=2, device="cpu")
    thread = threading.Thread(target=counter)
    thread.start()
    started = time.monotonic()
    for _ in loader:
        pass
    elapsed = time.monotonic() - started
    running.clear()
    thread.join()
    assert elapsed > 0.2
    # Holding the GIL while decoding or waiting would starve the counter; released, it
    # gets a large share of the free-running rate (it shares the cores with the decoders).
    assert counted[0] / elapsed > 0.1 * alone, (counted[0] / elapsed, alone)


def _child_digest(loader, queue):
    queue.put(digest(loader))


def test_forked_and_spawned_children_read_the_same_batches(dataset):
    loader = framecull.Loader(dataset["all"], **SMALL, mode="all", clip_len=8, workers=2)
    expected = digest(loader)
    # Leave an epoch running in the parent: the child must not inherit its threads.
    running = iter(loader)
    next(running)
    for method in ("fork", "spawn"):
        context = multiprocessing.get_context(method)
        queue = context.Queue()
        child = context.Process(target=_child_digest, args=(loader, queue))
        child.start()
        got = queue.get(timeout=120)
        child.join(timeout=60)
        assert child.exitcode == 0, method
        assert got == expected, method
    rest = sum(1 for _ in running)
    assert rest == expected[1] - 1


def test_a_snapshot_rebuilds_the_same_loader(dataset):
    loader = framecull.Loader(dataset["all"], **SMALL, mode="random", crop="random", seed=3, workers=2)
    loader.set_epoch(5)
    snapshot = loader.snapshot()
    assert snapshot["manifest"]["name"] == "all" and snapshot["manifest"]["version"] == 1
    assert snapshot["epoch"] == 5 and snapshot["seed"] == 3
    assert snapshot["manifest"]["rows_hash"] == framecull.manifest_meta(framecull.read_manifest(dataset["all"]))["rows_hash"]
    import json

    text = json.dumps(snapshot)
    rebuilt = framecull.Loader.from_snapshot(json.loads(text), workers=1)
    assert rebuilt.epoch == 5
    assert digest(rebuilt) == digest(loader)
    assert digest(pickle.loads(pickle.dumps(loader))) == digest(loader)
    # Another manifest with other rows is refused.
    with pytest.raises(framecull.ConfigError, match="other rows"):
        framecull.Loader.from_snapshot(snapshot, manifest=dataset["split"])


def test_memory_stays_flat_over_500_batches(dataset):
    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    loader = framecull.Loader(dataset["all"], split=None, size=(112, 112), batch_size=2, mode="all", clip_len=4, workers=2, device="cpu")
    batches = 0
    epoch = 0
    start = None
    while batches < 500:
        loader.set_epoch(epoch)
        for batch in loader:
            frames = np.from_dlpack(batch.frames)
            assert frames.shape[0] >= 1
            batches += 1
            if batches == 30:
                gc.collect()
                start = rss()
        epoch += 1
    gc.collect()
    grown = rss() - start
    assert grown < 50e6, f"RSS grew {grown / 1e6:.1f} MB over {batches} batches"


def test_a_missing_manifest_raises_a_manifest_error(tmp_path):
    with pytest.raises(framecull.ManifestError) as caught:
        framecull.Loader(tmp_path / "nothing")
    assert "nothing" in str(caught.value)
    with pytest.raises(framecull.ManifestError):
        framecull.read_manifest(tmp_path / "nothing")


def test_settings_are_checked(dataset):
    with pytest.raises(framecull.ConfigError, match="split 'train'.*its splits: none"):
        framecull.Loader(dataset["all"], split="train")  # no splits in this manifest
    with pytest.raises(framecull.ConfigError, match="mode"):
        framecull.Loader(dataset["all"], split=None, mode="sometimes")
    with pytest.raises(framecull.ConfigError, match="rank"):
        framecull.Loader(dataset["all"], split=None, rank=2, world_size=2)


def test_the_default_split_is_train_where_there_are_splits_else_every_row(dataset):
    common = dict(size=(32, 32), batch_size=2, device="cpu", clip_len=4)
    # A manifest exported without --split: the defaults read every row.
    default = framecull.Loader(dataset["all"], **common)
    every_row = framecull.Loader(dataset["all"], split=None, **common)
    assert default.snapshot()["settings"]["split"] is None
    assert digest(default) == digest(every_row)
    assert default.clip_count() == every_row.clip_count() > 0
    # With splits: the default is "train", a part of the rows.
    default = framecull.Loader(dataset["split"], **common)
    train = framecull.Loader(dataset["split"], split="train", **common)
    every_row = framecull.Loader(dataset["split"], split=None, **common)
    assert default.snapshot()["settings"]["split"] == "train"
    assert digest(default) == digest(train)
    assert 0 < default.clip_count() < every_row.clip_count()


def test_missing_and_corrupt_files_are_counted_or_raised(dataset, copy_of):
    root = copy_of(dataset["root"])
    manifest = root / ".framecull" / "manifests" / "all"
    (root / "b_mandelbrot.mp4").unlink()
    target = root / "a_testsrc2.mp4"
    data = bytearray(target.read_bytes())
    assert len(data) > 3 * 64 * 1024, "the damaged file must be large enough to keep its fingerprint"
    # Damage the middle of the file outside the sampled fingerprint regions.
    lo = len(data) // 5
    data[lo : lo + 20000] = bytes((i * 7919) % 251 for i in range(20000))
    target.write_bytes(bytes(data))

    args = dict(split=None, size=32, batch_size=2, mode="all", clip_len=8, device="cpu", root=root)
    loader = framecull.Loader(manifest, **args)
    frames = sum(int(b.lengths.sum()) for b in loader)
    stats = loader.stats()
    assert stats["skipped_clips"] == {"missing": 1}
    assert stats["skipped_windows"].get("corrupt", 0) >= 1, stats
    assert frames > 0
    assert any("b_mandelbrot.mp4" in e for e in stats["errors"])

    with pytest.raises(framecull.FileError) as caught:
        framecull.Loader(manifest, **args, on_error="fail")
    assert caught.value.path.endswith("b_mandelbrot.mp4")
    (root / "b_mandelbrot.mp4").write_bytes(b"")
    with pytest.raises(framecull.FileError) as caught:
        framecull.Loader(manifest, **args, on_error="fail")
    assert caught.value.path.endswith("b_mandelbrot.mp4")
    assert "changed" in str(caught.value)


def test_iteration_stops_early_and_restarts(dataset):
    loader = framecull.Loader(dataset["all"], **SMALL, mode="all", clip_len=4, workers=2)
    total = len(loader)
    for i, _ in enumerate(loader):
        if i == 1:
            break
    assert sum(1 for _ in loader) == total


def test_ctrl_c_stops_iteration_promptly(dataset):
    import signal
    import subprocess
    import sys

    code = f"""
import sys, time, framecull
loader = framecull.Loader({str(dataset["all"])!r}, split=None, size=(480, 640), batch_size=1,
                          mode="all", clip_len=4, workers=1, device="cpu")
print("ready", flush=True)
try:
    while True:
        for _ in loader:
            pass
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
    sys.exit(3)
"""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 3, out
    stopped = float(out.split()[1])
    assert stopped - sent < 2.0, f"stopped {stopped - sent:.2f} s after Ctrl-C"


def test_sigterm_stops_at_a_batch_boundary_exits_3_and_the_snapshot_resumes(dataset, tmp_path):
    """What Slurm, Kubernetes and Ray do at a time limit or an eviction: SIGTERM first. The
    loop ends with framecull.Preempted (exit 3 when uncaught), and a loader made from its
    snapshot hands out the rest of the epoch: together, every batch once, as one run would."""
    import json
    import signal
    import subprocess
    import sys

    args = dict(split=None, size=(96, 128), batch_size=1, mode="all", clip_len=4, workers=1,
                device="cpu", seed=7, shuffle=True)

    def record(loader, out):
        for batch in loader:
            a = np.asarray(batch.frames)
            out.append((batch.index, batch.clip_ids[0], tuple(int(f) for f in batch.frame_indices[0]),
                        hashlib.sha256(a.tobytes()).hexdigest()))
        return out

    reference = record(framecull.Loader(dataset["all"], **args), [])
    assert len(reference) > 8
    log, snap = tmp_path / "batches.jsonl", tmp_path / "snapshot.json"
    code = f"""
import hashlib, json, sys, time
import numpy as np
import framecull
loader = framecull.Loader({str(dataset["all"])!r}, **{args!r})
log = open({str(log)!r}, "a")
try:
    for batch in loader:
        a = np.asarray(batch.frames)
        log.write(json.dumps([batch.index, batch.clip_ids[0], [int(f) for f in batch.frame_indices[0]],
                              hashlib.sha256(a.tobytes()).hexdigest()]) + "\\n")
        log.flush()
        time.sleep(0.2)  # the training step
except framecull.Preempted as e:
    open({str(snap)!r}, "w").write(json.dumps(e.snapshot))
    print("preempted", time.monotonic(), e, flush=True)
    raise
print("finished", flush=True)
"""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while (not log.exists() or len(log.read_text().splitlines()) < 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    sent = time.monotonic()
    child.send_signal(signal.SIGTERM)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 3, out
    assert out.startswith("preempted") and "SIGTERM" in out, out
    assert float(out.split()[1]) - sent < 2.0, out
    first = [tuple(json.loads(line)) for line in log.read_text().splitlines()]
    first = [(i, c, tuple(f), h) for i, c, f, h in first]
    snapshot = json.loads(snap.read_text())
    assert 3 <= snapshot["position"] == len(first) < len(reference), snapshot["position"]

    resumed = framecull.Loader.from_snapshot(snapshot)
    resumed.set_epoch(snapshot["epoch"])  # as a training loop does: the position holds
    rest = record(resumed, [])
    assert first + rest == reference
    # The next epoch starts from its beginning.
    resumed.set_epoch(snapshot["epoch"] + 1)
    assert sum(1 for _ in resumed) == len(reference)


def test_a_program_s_own_sigterm_handler_is_left_alone(dataset):
    import signal

    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        loader = framecull.Loader(dataset["all"], **SMALL)
        for i, _ in enumerate(loader):
            if i == 0:
                os.kill(os.getpid(), signal.SIGTERM)
        assert seen == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)
    # And where none is set, iteration takes the signals only while it runs.
    for _ in framecull.Loader(dataset["all"], **SMALL):
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_the_gpu_path_matches_the_cpu_path(dataset):
    # lavapipe in CI (FRAMECULL_REQUIRE_GPU=1): a software Vulkan adapter is enough here.
    args = dict(split=None, size=(48, 64), batch_size=2, mode="all", clip_len=4, workers=2, seed=5, crop="random", hflip=0.5)
    try:
        gpu = framecull.Loader(dataset["all"], **args, device="gpu")
    except framecull.GpuError as e:
        if os.environ.get("FRAMECULL_REQUIRE_GPU") == "1":
            raise
        pytest.skip(f"no GPU adapter: {e}")
    assert gpu.device.startswith("gpu")
    cpu = framecull.Loader(dataset["all"], **args, device="cpu")
    pairs = list(zip(cpu, gpu))
    assert len(pairs) == len(cpu) > 3
    for a, b in pairs:
        assert a.clip_ids == b.clip_ids and (a.frame_indices == b.frame_indices).all()
        x, y = np.from_dlpack(a.frames), np.from_dlpack(b.frames)
        assert x.shape == y.shape
        # Within one level of 255 after normalisation (std 0.225).
        assert np.abs(x - y).max() <= 1 / 255 / 0.224 + 1e-6


def test_odd_names_in_mpeg_ts_load_every_frame(tmp_path):
    # A space, a leading dash, '#', parentheses and non-ASCII letters, in a subfolder; MPEG-2
    # in MPEG-TS, whose timestamps start at 1.4 s.
    from conftest import make_dataset, run

    root = tmp_path / "odd"
    name = "sub dir/-vidéo #1 (ü).ts"
    (root / "sub dir").mkdir(parents=True)
    source = "testsrc2=size=160x120:rate=25:duration=2"
    project = make_dataset(root, [(name, source, ["-c:v", "mpeg2video", "-g", "10"])])
    run("export", "--project", str(project), "--name", "odd")
    # Windows of 10 tile the 50 frames exactly ("all" takes whole windows only).
    loader = framecull.Loader(project / "manifests" / "odd", split=None, size=32, batch_size=2, mode="all", clip_len=10, device="cpu", workers=2)
    seen = []
    for batch in loader:
        assert set(batch.paths) == {name}
        for frames, n in zip(batch.frame_indices, batch.lengths):
            seen.extend(int(i) for i in frames[:n])
    assert sorted(seen) == list(range(50))
    assert loader.stats()["skipped_windows"] == {} and loader.stats()["skipped_clips"] == {}
    assert framecull.read_manifest(project / "manifests" / "odd").column("path").to_pylist() == [name]


def test_the_content_crop_leaves_a_letterboxed_videos_bars_out(tmp_path):
    """`crop="content"` crops inside a letterboxed video's content (the manifest's
    `content_crop`): no bar row reaches the batch, where the centre crop keeps them."""
    from conftest import make_dataset, run

    graph = "testsrc2=size=640x360:rate=25,noise=alls=12:allf=t,pad=640:480:0:60:black"
    project = make_dataset(tmp_path / "boxed", [("boxed.mp4", graph, ["-t", "1"])])
    run("export", "--project", str(project), "--name", "x", "--format", "jsonl")
    rows = framecull.read_manifest(project / "manifests" / "x").to_pylist()
    assert [r["content_crop"] for r in rows] == ["640:352:0:64"]

    def edge_rows(crop: str) -> np.ndarray:
        loader = framecull.Loader(project / "manifests" / "x", split=None, size=(64, 64),
                                  batch_size=1, clip_len=4, stride=5, mode="uniform",
                                  crop=crop, dtype="uint8", layout="bthwc", device="cpu")
        frames = np.concatenate([np.asarray(b.frames)[0] for b in loader])
        return np.concatenate([frames[:, 0].mean(axis=(1, 2)), frames[:, -1].mean(axis=(1, 2))])

    assert (edge_rows("center") < 20).all()
    assert (edge_rows("content") > 40).all()
