"""The exceptions framecull raises. Every one is a :class:`Error`; those about one file or
folder carry its ``path``."""

from __future__ import annotations


class Error(Exception):
    """Base class of framecull's exceptions."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class ManifestError(Error):
    """A manifest is missing, unreadable or not what was asked for."""


class FileError(Error):
    """A file a manifest names is missing, changed or cannot be decoded
    (with ``on_error="fail"``). ``path`` names it."""


class ConfigError(Error, ValueError):
    """A setting is out of range, or a filter does not parse."""


class GpuError(Error):
    """No usable GPU (``device="gpu"``), or the GPU failed."""


class StorageError(Error):
    """The object store a manifest's dataset is in cannot be reached, or refuses the
    credentials (the standard ``AWS_*`` environment variables)."""


class CacheError(Error, OSError):
    """The loader's frame cache (``cache_dir``) cannot be written: a full disk or a file-size
    limit. The run stops rather than skip clip after clip."""


class CatalogError(Error):
    """No project where one was expected, or its catalog cannot be read."""


class Preempted(SystemExit):
    """Iteration stopped because the process was asked to end: SIGTERM or SIGHUP, as Slurm
    (a time limit, a preemption), Kubernetes (an eviction) and Ray send before they kill.
    Raised at a batch boundary, after the workers are stopped. ``snapshot`` is the loader's
    :meth:`framecull.Loader.snapshot` at that point: :meth:`framecull.Loader.from_snapshot`
    resumes the epoch with the first batch not yet handed out. ``signal`` is the signal's
    number. Left uncaught it ends the interpreter with exit status 3, which the launchers
    read as "transient, retry"; catch it to save a checkpoint first."""

    def __init__(self, snapshot: dict, signal: int) -> None:
        super().__init__(3)
        self.snapshot = snapshot
        self.signal = signal

    def __str__(self) -> str:
        import signal as signals

        name = signals.Signals(self.signal).name
        return (f"{name}: iteration stopped after batch {self.snapshot.get('position', 0)} of "
                f"epoch {self.snapshot.get('epoch')}; Loader.from_snapshot(e.snapshot) resumes")


__all__ = ["Error", "ManifestError", "FileError", "ConfigError", "GpuError", "StorageError",
           "CacheError", "CatalogError", "Preempted"]
