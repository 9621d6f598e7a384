"""framecull: frame-exact video clip loading, manifests and catalogs for training.

>>> import framecull
>>> loader = framecull.Loader("data/.framecull/manifests/train", clip_len=16, batch_size=8)
>>> for epoch in range(10):
...     loader.set_epoch(epoch)
...     for batch in loader:
...         frames = torch.from_dlpack(batch.frames)  # [B, T, C, H, W], no copy

``framecull.torch`` (imported on demand) adapts the loader to ``torch.utils.data``.
"""

from __future__ import annotations

import os as _os

from . import _executable
from ._framecull import __version__, _use_worker_exe
from .catalog import Catalog
from .errors import (
    CacheError,
    CatalogError,
    ConfigError,
    Error,
    FileError,
    GpuError,
    ManifestError,
    Preempted,
    StorageError,
)
from .loader import TRAIN_WHERE_SPLIT, Batch, Loader
from .manifest import MANIFEST_SCHEMA, manifest_meta, read_manifest

# The loader decodes in worker processes of the executable the wheel carries (a crashing,
# hanging or runaway decoder costs a file, not the training run), unless FRAMECULL_WORKER_EXE
# names another (or, empty, none).
if _executable.bundled() is not None and "FRAMECULL_WORKER_EXE" not in _os.environ:
    _use_worker_exe(_executable.bundled())

__all__ = [
    "__version__",
    "Batch",
    "CacheError",
    "Catalog",
    "CatalogError",
    "ConfigError",
    "Error",
    "FileError",
    "StorageError",
    "GpuError",
    "Loader",
    "TRAIN_WHERE_SPLIT",
    "MANIFEST_SCHEMA",
    "ManifestError",
    "Preempted",
    "manifest_meta",
    "read_manifest",
]
