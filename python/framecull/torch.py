"""PyTorch adapter: :class:`ClipDataset`, an ``IterableDataset`` of framecull batches.

``import framecull`` does not import torch; this module does.

Use it with ``torch.utils.data.DataLoader(dataset, batch_size=None)``: framecull batches
itself. ``num_workers=0`` is the fast path: decoding and preprocessing already run on native
threads (``workers=``), with the GIL released, and the frames reach the training loop
without a copy. With ``num_workers > 0`` each DataLoader worker reads every
``num_workers``-th batch of the same plan (the order of batches is unchanged), and PyTorch
copies every batch through shared memory.
"""

from __future__ import annotations

import os
from typing import Any, Iterator

import torch
from torch.utils.data import IterableDataset, get_worker_info

from .loader import Batch, Loader


def to_torch(batch: Batch) -> dict[str, Any]:
    """A batch as a dict of tensors (``frames`` shares the batch's memory) and lists."""
    return {
        "frames": torch.from_dlpack(batch.frames),
        "lengths": torch.from_numpy(batch.lengths),
        "frame_indices": torch.from_numpy(batch.frame_indices),
        "pts_secs": torch.from_numpy(batch.pts_secs),
        "motion": torch.from_numpy(batch.motion),
        "rows": torch.from_numpy(batch.rows),
        "clip_ids": batch.clip_ids,
        "paths": batch.paths,
        "labels": batch.labels,
        "tags": batch.tags,
        "splits": batch.splits,
        "index": batch.index,
    }


class ClipDataset(IterableDataset):
    """framecull batches as a PyTorch ``IterableDataset``; each item is :func:`to_torch`'s
    dict. Takes :class:`framecull.Loader`'s arguments. ``rank`` and ``world_size`` default to
    ``torch.distributed``'s when it is initialised. Call :meth:`set_epoch` before each epoch.
    """

    def __init__(self, manifest: str | os.PathLike, **loader_args: Any) -> None:
        super().__init__()
        self.manifest = os.fspath(manifest)
        self.loader_args = dict(loader_args)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def _args(self) -> dict[str, Any]:
        args = dict(self.loader_args)
        if "rank" not in args and "world_size" not in args:
            dist = torch.distributed
            if dist.is_available() and dist.is_initialized():
                args["rank"] = dist.get_rank()
                args["world_size"] = dist.get_world_size()
        return args

    def _loader(self) -> Loader:
        args = self._args()
        share = (0, 1)
        info = get_worker_info()
        if info is not None and info.num_workers > 1:
            share = (info.id, info.num_workers)
            # Each DataLoader worker is a process of its own: they share the cores.
            args.setdefault("workers", max(1, (os.cpu_count() or 2) // info.num_workers))
        loader = Loader(self.manifest, **args)
        loader._share = share
        loader.set_epoch(self.epoch)
        return loader

    def __len__(self) -> int:
        """Batches of the epoch for this rank (all DataLoader workers together)."""
        loader = Loader(self.manifest, **self._args())
        loader.set_epoch(self.epoch)
        return len(loader)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch in self._loader():
            yield to_torch(batch)
