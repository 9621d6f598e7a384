"""The loader: a manifest in, batches of preprocessed, frame-exact windows out.

Decoding and preprocessing run on native threads (the GIL is released while they work and
while iteration waits); batches are handed over without a copy.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from typing import Any, Iterator, Sequence

import numpy as np

from . import _framecull
from .errors import ConfigError, Preempted

_DTYPES = {"float32": "f32", "float16": "f16", "uint8": "u8"}
_LAYOUTS = ("bcthw", "bthwc")
_MODES = ("uniform", "random", "all")
_DEVICES = ("auto", "cpu", "gpu")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class _TrainWhereSplit(str):
    """The default ``split``: ``"train"`` where the manifest has splits, else every row."""

    def __repr__(self) -> str:
        return "'train' (every row where the manifest has no splits)"


TRAIN_WHERE_SPLIT = _TrainWhereSplit("train")


class _Preempting(BaseException):
    """Raised by the signal handler inside the wait for a batch, to end that wait."""


class _Signals:
    """SIGTERM and SIGHUP during iteration: a clean stop at a batch boundary.

    While any loader iterates in the main thread, the two signals set ``received`` instead of
    killing the process, where no one else handles them (a handler the program set is left
    alone). A signal that arrives while iteration waits for a batch ends the wait; one that
    arrives while the training step runs is acted on when the step asks for the next batch.
    The previous handlers come back when the last iteration ends.
    """

    STOPPING = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.received: int | None = None
        self.waiting = False
        self.users = 0
        self.previous: dict[int, Any] = {}

    def handle(self, signum: int, _frame: Any) -> None:
        if self.received is None:
            self.received = signum
        if self.waiting:
            raise _Preempting()

    def enter(self) -> bool:
        """Take the signals for an iteration; False where that cannot be done here."""
        if threading.current_thread() is not threading.main_thread():
            return False
        if self.users == 0:
            self.previous = {}
            for signum in self.STOPPING:
                if signal.getsignal(signum) is signal.SIG_DFL:
                    self.previous[signum] = signal.signal(signum, self.handle)
        self.users += 1
        return True

    def leave(self) -> None:
        self.users -= 1
        if self.users == 0:
            for signum, handler in self.previous.items():
                signal.signal(signum, handler)
            self.previous = {}

    def take(self) -> int | None:
        """The signal received, if any, now acted on."""
        received, self.received = self.received, None
        return received


_SIGNALS = _Signals()


class Batch:
    """One batch of windows.

    ``frames`` holds the pixels, shaped ``[B, T, C, H, W]`` (layout ``"bcthw"``) or
    ``[B, T, H, W, C]`` (``"bthwc"``): view it without a copy with ``torch.from_dlpack``,
    ``numpy.from_dlpack`` or ``numpy.asarray``. Window ``i`` holds ``lengths[i]`` real
    frames in its first slots; the other slots are zero padding (``frame_indices`` -1,
    ``pts_secs`` NaN there).
    """

    __slots__ = (
        "index",
        "frames",
        "layout",
        "lengths",
        "clip_ids",
        "rows",
        "paths",
        "frame_indices",
        "pts_secs",
        "labels",
        "tags",
        "splits",
        "motion",
    )

    def __init__(self, native: Any) -> None:
        #: Position of the batch in its epoch's plan.
        self.index: int = native.index
        #: The pixels (DLPack and NumPy array interface; no copy).
        self.frames = native.frames
        self.layout: str = native.layout
        t = native.frames.shape[1]
        lengths = native.lengths
        #: Real frames of each window, ``[B]``.
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.clip_ids: list[str] = native.clip_ids
        #: Each window's row in the manifest.
        self.rows = np.asarray(native.rows, dtype=np.int64)
        #: Each window's file, as the manifest names it (relative to the dataset root).
        self.paths: list[str] = native.paths
        indices = np.full((len(lengths), t), -1, dtype=np.int64)
        secs = np.full((len(lengths), t), np.nan, dtype=np.float64)
        for i, (f, s) in enumerate(zip(native.frame_indices, native.pts_secs)):
            indices[i, : len(f)] = f
            secs[i, : len(s)] = s
        #: Index in the file of each frame (display order from the first frame), ``[B, T]``.
        self.frame_indices = indices
        #: Timestamp of each frame in seconds, ``[B, T]``.
        self.pts_secs = secs
        self.labels: list[str | None] = native.labels
        self.tags: list[list[str]] = native.tags
        self.splits: list[str | None] = native.splits
        #: The manifest's mean motion of each window's clip (NaN where not analysed).
        self.motion = np.asarray(
            [np.nan if m is None else m for m in native.motion], dtype=np.float64
        )

    def __len__(self) -> int:
        return len(self.clip_ids)

    def numpy(self) -> np.ndarray:
        """The frames as a NumPy array viewing the batch's memory."""
        return np.from_dlpack(self.frames)

    def __repr__(self) -> str:
        return (
            f"Batch(index={self.index}, shape={tuple(self.frames.shape)}, "
            f"dtype={self.frames.dtype}, layout={self.layout!r})"
        )


def _settings(
    *,
    split: str | None,
    clip_len: int | None,
    stride: int,
    fps: float | None,
    max_frames: int,
    mode: str,
    window_step: int | None,
    size: int | Sequence[int],
    crop: str | dict,
    hflip: float,
    dtype: str,
    layout: str,
    filter: str,
    mean: Sequence[float],
    std: Sequence[float],
    batch_size: int,
    shuffle: bool,
    bucket: bool,
    drop_last: bool,
    seed: int,
    rank: int,
    world_size: int,
    workers: int | None,
    decoder_threads: int,
    prefetch: int,
    device: str,
    cache: str | os.PathLike | None,
    cache_short_side: int,
    on_error: str,
    verify: bool,
    window_budget_secs: float,
    checksum: bool,
    isolate: bool = True,
    worker_memory_mib: int = 4096,
    clip_files: bool = False,
    shards: bool = False,
) -> dict:
    """The library's ``LoaderConfig`` as JSON, from keyword arguments."""

    def choose(name: str, value: str, allowed: Sequence[str]) -> str:
        if value not in allowed:
            raise ConfigError(f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}")
        return value

    if fps is not None and stride != 1:
        raise ConfigError("give stride or fps, not both")
    if isinstance(size, int):
        height = width = size
    else:
        height, width = (int(v) for v in size)
    if isinstance(crop, dict):
        crop_json: Any = {"random_resized": {"scale": list(crop.get("scale", (0.08, 1.0))), "ratio": list(crop.get("ratio", (3 / 4, 4 / 3)))}}
    elif crop in ("random", "random_resized"):
        crop_json = {"random_resized": {"scale": [0.08, 1.0], "ratio": [0.75, 4 / 3]}}
    else:
        crop_json = choose("crop", crop, ("center", "full", "random", "content"))
    if dtype not in _DTYPES:
        raise ConfigError(f"dtype must be one of {', '.join(map(repr, _DTYPES))}, not {dtype!r}")
    return {
        "sampling": {
            "clip_len": clip_len,
            "max_frames": max_frames,
            "timing": {"fps": float(fps)} if fps is not None else {"stride": stride},
            "mode": choose("mode", mode, _MODES),
            "window_step": window_step,
        },
        "batching": {
            "batch_size": batch_size,
            "shuffle": shuffle,
            "rank": rank,
            "world_size": world_size,
            "bucket": bucket,
            "drop_last": drop_last,
        },
        "output": {
            "width": width,
            "height": height,
            "layout": choose("layout", layout, _LAYOUTS),
            "dtype": _DTYPES[dtype],
            "filter": choose("filter", filter, ("bilinear", "area")),
            "mean": [float(v) for v in mean],
            "std": [float(v) for v in std],
        },
        "crop": crop_json,
        "hflip": float(hflip),
        "seed": seed,
        "split": split,
        "workers": workers if workers is not None else (os.cpu_count() or 2),
        "decoder_threads": decoder_threads,
        "prefetch_batches": prefetch,
        "device": choose("device", device, _DEVICES),
        "on_error": choose("on_error", on_error, ("skip", "fail")),
        "verify_fingerprints": verify,
        "window_budget_secs": float(window_budget_secs),
        "cache": None if cache is None else {"dir": os.fspath(cache), "short_side": cache_short_side},
        "checksum": checksum,
        "isolate": bool(isolate),
        "worker_memory_mib": int(worker_memory_mib),
        "clip_files": bool(clip_files),
        "shards": bool(shards),
    }


class Loader:
    """Batches of windows from a manifest, deterministic for a seed and an epoch.

    ``manifest`` is a manifest folder (``DATASET/.framecull/manifests/NAME``; its latest
    version, or ``version``) or a version's file (``vNNNN.json``, ``.parquet`` or ``.jsonl``).
    Files are found under ``root``, by default the dataset root the manifest records: a
    folder, or an object-storage URL (``s3://bucket/prefix``, ``gs://``, ``az://``,
    ``https://host/path``) read with each cloud's standard environment variables
    (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``; docs/STORAGE.md; a store that cannot be reached raises
    :class:`framecull.StorageError`).

    Sampling: ``clip_len`` frames per window (``None``: whole clips up to ``max_frames``),
    every ``stride``-th frame or at ``fps`` by timestamp; ``mode`` ``"uniform"`` (one centred
    window per clip), ``"random"`` (one per clip and epoch) or ``"all"`` (windows tiling
    each clip, ``window_step`` apart). Output: ``size`` (``(height, width)`` or one side),
    ``crop`` (``"center"``, ``"full"``, ``"random"``, ``{"scale": ..., "ratio": ...}`` or
    ``"content"``: the centre of each video's picture without its letterbox or pillarbox
    bars, the manifest's ``content_crop``),
    ``hflip`` probability, ``dtype`` (``"float32"``/``"float16"`` normalised by
    ``mean``/``std``, ``"uint8"`` not normalised), ``layout``. Sharding: ``rank`` of
    ``world_size`` takes disjoint windows that together cover the epoch. ``on_error``:
    ``"skip"`` counts a missing, changed or undecodable file in :meth:`stats` and leaves it
    out; ``"fail"`` raises :class:`framecull.FileError`. ``clip_files=True`` reads each row's
    clip file (a version exported with ``--materialize DIR``; ``root`` then names the clip
    folder, by default the one the version records) instead of its source. ``shards=True``
    reads the clip files from the version's WebDataset shards (``--format webdataset``), each
    shard once from start to end (``root`` then names the shard folder or bucket prefix, by
    default the one beside the manifest); shuffling then shuffles the shards, and the windows
    within runs of 64 clips of a shard.

    Iterate to read an epoch; call :meth:`set_epoch` before each one (as with PyTorch's
    ``DistributedSampler``). One thread at a time may use a loader.

    SIGTERM or SIGHUP during iteration (a scheduler's stop: Slurm, Kubernetes, Ray) ends it at
    the next batch boundary with :class:`framecull.Preempted`, which carries a
    :meth:`snapshot` that resumes the epoch where it stopped and, left uncaught, exits with
    status 3. Ctrl-C raises ``KeyboardInterrupt`` as usual.
    """

    def __init__(
        self,
        manifest: str | os.PathLike,
        version: int | None = None,
        split: str | None = TRAIN_WHERE_SPLIT,
        clip_len: int | None = 16,
        stride: int = 1,
        fps: float | None = None,
        mode: str = "uniform",
        size: int | Sequence[int] = (224, 224),
        crop: str | dict = "center",
        hflip: float = 0.0,
        dtype: str = "float32",
        layout: str = "bcthw",
        batch_size: int = 8,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        workers: int | None = None,
        device: str = "auto",
        cache: str | os.PathLike | None = None,
        on_error: str = "skip",
        *,
        root: str | os.PathLike | None = None,
        max_frames: int = 64,
        window_step: int | None = None,
        filter: str = "bilinear",
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
        shuffle: bool = True,
        bucket: bool = True,
        drop_last: bool = False,
        decoder_threads: int = 1,
        prefetch: int = 4,
        cache_short_side: int = 256,
        verify: bool = True,
        window_budget_secs: float = 60.0,
        checksum: bool = False,
        isolate: bool = True,
        worker_memory_mib: int = 4096,
        clip_files: bool = False,
        shards: bool = False,
    ) -> None:
        settings = _settings(
            split=split, clip_len=clip_len, stride=stride, fps=fps, max_frames=max_frames,
            mode=mode, window_step=window_step, size=size, crop=crop, hflip=hflip,
            dtype=dtype, layout=layout, filter=filter, mean=mean, std=std,
            batch_size=batch_size, shuffle=shuffle, bucket=bucket, drop_last=drop_last,
            seed=seed, rank=rank, world_size=world_size, workers=workers,
            decoder_threads=decoder_threads, prefetch=prefetch, device=device, cache=cache,
            cache_short_side=cache_short_side, on_error=on_error, verify=verify,
            window_budget_secs=window_budget_secs, checksum=checksum, isolate=isolate,
            worker_memory_mib=worker_memory_mib, clip_files=clip_files, shards=shards,
        )
        settings["split"] = None if split is None else str(split)
        self._open(manifest, version, root, settings, epoch=0,
                   every_row_without_splits=split is TRAIN_WHERE_SPLIT)

    def _open(self, manifest, version, root, settings: dict, epoch: int,
              every_row_without_splits: bool = False) -> None:
        self._native = _framecull.NativeLoader(
            os.fspath(manifest),
            json.dumps(settings),
            version,
            None if root is None else os.fspath(root),
        )
        self._settings = settings
        self._meta = json.loads(self._native.meta_json())
        self._epoch = epoch
        # Which of each epoch's batches this loader reads: (index, count); see framecull.torch.
        self._share = (0, 1)
        # Batches of the epoch handed out by the iteration running or preempted (0 once an
        # iteration ends otherwise), and where the next iteration starts.
        self._position = 0
        self._resume_at = 0
        split = settings["split"]
        by_split = self._meta["counts"]["by_split"]
        if split is not None and split not in by_split:
            if every_row_without_splits and not by_split:
                # The default on a manifest exported without --split: every row. The settings
                # (and a snapshot of them) say so.
                self._open(manifest, version, root, {**settings, "split": None}, epoch)
                return
            have = ", ".join(sorted(by_split)) or "none"
            raise ConfigError(
                f"manifest {self._meta['name']} v{self._meta['version']} has no rows in split "
                f"{split!r} (its splits: {have}); pass split=None for every row"
            )
        # Check the files now (missing, changed: counted, or FileError with on_error="fail"),
        # not at the first batch. On the CPU path no thread outlives this call; a forked child
        # opens a loader of its own anyway.
        self._native.clip_count()

    @classmethod
    def from_snapshot(
        cls,
        snapshot: dict | str,
        manifest: str | os.PathLike | None = None,
        root: str | os.PathLike | None = None,
        workers: int | None = None,
    ) -> "Loader":
        """The loader a :meth:`snapshot` describes, at the same epoch: it yields the same
        batches. ``manifest`` and ``root`` override the recorded paths (the same manifest
        moved to another machine); the manifest's rows must be those recorded."""
        if isinstance(snapshot, str):
            snapshot = json.loads(snapshot)
        recorded = snapshot["manifest"]
        settings = dict(snapshot["settings"])
        if workers is not None:
            settings["workers"] = workers
        loader = cls.__new__(cls)
        path = manifest if manifest is not None else recorded["path"]
        root = root if root is not None else snapshot.get("root")
        loader._open(path, None, root, settings, epoch=int(snapshot["epoch"]))
        if loader._meta["rows_hash"] != recorded["rows_hash"]:
            raise ConfigError(
                f"{path} holds other rows than the snapshot's manifest "
                f"({recorded['name']} v{recorded['version']}): rows hash "
                f"{loader._meta['rows_hash']}, recorded {recorded['rows_hash']}"
            )
        loader._share = tuple(snapshot.get("share", (0, 1)))  # type: ignore[assignment]
        loader._resume_at = loader._position = int(snapshot.get("position", 0))
        return loader

    def snapshot(self) -> dict:
        """Everything that determines the batches, JSON-ready, to keep beside a checkpoint:
        the manifest (path, name, version, rows hash), every sampling, augmentation and
        output setting, the seed, the epoch, rank and world size, framecull's version, and
        ``position``: the batches of the epoch handed out by the iteration running or preempted
        (0 when none is), from which :meth:`from_snapshot` resumes."""
        meta = self._meta
        return {
            "framecull_version": _framecull.__version__,
            "manifest": {
                "path": self._native.path,
                "name": meta["name"],
                "version": meta["version"],
                "rows_hash": meta["rows_hash"],
            },
            "root": self._native.root,
            "epoch": self._epoch,
            "position": self._position,
            "seed": self._settings["seed"],
            "rank": self._settings["batching"]["rank"],
            "world_size": self._settings["batching"]["world_size"],
            "share": list(self._share),
            "settings": self._settings,
        }

    def __reduce__(self):
        # Pickled (multiprocessing's spawn, DataLoader workers) as its snapshot: the new
        # process opens its own native loader, and reads its epochs from their start.
        return (Loader.from_snapshot, ({**self.snapshot(), "position": 0},))

    @property
    def epoch(self) -> int:
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration reads (it seeds the shuffle and the random draws). A
        loader resumed from a snapshot keeps its position when given the snapshot's epoch."""
        if int(epoch) != self._epoch:
            self._resume_at = 0
        self._epoch = int(epoch)

    @property
    def device(self) -> str:
        """Where preprocessing runs: ``"cpu (N workers)"`` or ``"gpu: ADAPTER"``."""
        return self._native.device()

    @property
    def manifest(self) -> dict:
        """The manifest version's metadata (``vNNNN.json``)."""
        return self._meta

    def clip_count(self) -> int:
        """Clips that will be read (after the split and the file checks)."""
        return self._native.clip_count()

    def __len__(self) -> int:
        """Batches of the current epoch for this rank (a resumed epoch included)."""
        return self._native.batches(self._epoch, *self._share)

    def __iter__(self) -> Iterator[Batch]:
        native = self._native
        skip, self._resume_at = self._resume_at, 0
        self._position = skip
        native.start(self._epoch, *self._share, skip)
        self._runs = getattr(self, "_runs", 0) + 1
        run = self._runs
        signals = _SIGNALS.enter()
        try:
            while True:
                if signals and _SIGNALS.received is not None:
                    self._preempted()
                try:
                    try:
                        _SIGNALS.waiting = signals
                        got = native.next_batch()
                    finally:
                        _SIGNALS.waiting = False
                except _Preempting:
                    self._preempted()
                if got is None:
                    break
                self._position += 1
                yield Batch(got)
            if signals and _SIGNALS.received is not None:
                # The signal came during the last batch: the epoch is read, but the process
                # was still asked to end.
                self._preempted()
        except Preempted:
            # The same loader, iterated again, resumes too.
            self._resume_at = self._position
            raise
        finally:
            if self._resume_at == 0:
                self._position = 0
            if signals:
                _SIGNALS.leave()
            # Left early (break, an exception, Ctrl-C): stop the workers, unless a newer
            # iteration has started since.
            if self._runs == run:
                native.stop()

    def _preempted(self) -> None:
        self._native.stop()
        raise Preempted(self.snapshot(), _SIGNALS.take() or signal.SIGTERM)

    def close(self) -> None:
        """Stop a running epoch now (iteration also stops when the iterator is dropped)."""
        self._native.stop()

    def stats(self) -> dict:
        """Counts and per-stage timings so far: ``frames``, ``frames_decoded``, ``seeks``,
        ``decode_secs``, ``preprocess_secs``, ``wait_secs``, ``wall_secs``, skips by reason,
        the first errors, and ``checksum`` when it was asked for."""
        return json.loads(self._native.stats_json())

    def __repr__(self) -> str:
        m = self._meta
        return f"Loader({m['name']} v{m['version']}, epoch={self._epoch}, split={self._settings['split']!r})"
