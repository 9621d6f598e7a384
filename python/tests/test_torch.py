"""The PyTorch adapter. Runs where torch is importable (`pip install torch` in the test
venv, then `bash scripts/test.sh`); CI does not download torch."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import framecull

torch = pytest.importorskip("torch")
from framecull.torch import ClipDataset, to_torch  # noqa: E402

ARGS = dict(split=None, size=(48, 64), batch_size=2, mode="all", clip_len=4, device="cpu", workers=2)


def test_import_framecull_does_not_import_torch():
    import subprocess

    code = "import sys, framecull; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_frames_become_tensors_without_a_copy(dataset):
    batch = next(iter(framecull.Loader(dataset["all"], **ARGS)))
    item = to_torch(batch)
    assert item["frames"].data_ptr() == batch.frames.data_ptr
    assert tuple(item["frames"].shape) == (2, 4, 3, 48, 64)
    assert item["frames"].dtype == torch.float32
    assert torch.equal(item["frame_indices"], torch.from_numpy(batch.frame_indices))


def batches(loader) -> list[tuple]:
    return [
        (tuple(item["clip_ids"]), item["frame_indices"].numpy().tobytes(), item["frames"].numpy().tobytes())
        for item in loader
    ]


def test_dataloader_workers_keep_the_order_and_content(dataset):
    dataset_ = ClipDataset(dataset["all"], **ARGS)
    direct = batches(torch.utils.data.DataLoader(dataset_, batch_size=None, num_workers=0))
    assert len(direct) == len(dataset_) > 4
    for workers in (2, 3):
        loader = torch.utils.data.DataLoader(dataset_, batch_size=None, num_workers=workers)
        assert batches(loader) == direct, workers


def test_epochs_are_set_on_the_dataset(dataset):
    dataset_ = ClipDataset(dataset["all"], **{**ARGS, "mode": "random"})
    first = batches(dataset_)
    dataset_.set_epoch(1)
    assert batches(dataset_) != first
    dataset_.set_epoch(0)
    assert batches(dataset_) == first


def test_rank_and_world_size_come_from_torch_distributed(dataset, tmp_path):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        dataset_ = ClipDataset(dataset["all"], **ARGS)
        assert len(batches(dataset_)) == len(framecull.Loader(dataset["all"], **ARGS))
    finally:
        dist.destroy_process_group()
    halves = [ClipDataset(dataset["all"], **ARGS, rank=r, world_size=2) for r in range(2)]
    clips = [{c for item in h for c in zip(item["clip_ids"], map(tuple, item["frame_indices"].numpy()))} for h in halves]
    assert not clips[0] & clips[1]
    assert np.sum([len(c) for c in clips]) > 0
