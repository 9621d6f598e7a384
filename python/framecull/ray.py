"""Sharded scans on a Ray cluster: each shard of the dataset is a Ray task that runs the
``framecull`` binary (``framecull scan ROOT --shard I/N --project WORK/shard-I``), then one more
task merges the shards into one project (``framecull merge``).

    python -m framecull.ray ROOT --shards N --work WORK --project OUT [--deep | --triage]
        [--cpus-per-shard C] [--memory-per-shard BYTES] [--address ADDR] [--max-retries R]

or from Python::

    import framecull.ray
    code = framecull.ray.run("/data/videos", shards=16, work="/shared/fc", project="/shared/catalog",
                             deep=True, cpus_per_shard=4, memory_per_shard=4 << 30)

Each shard task asks Ray for ``cpus_per_shard`` CPUs (and ``memory_per_shard`` bytes) and runs
the scan with as many threads. framecull's exit codes decide what happens:

- 0 done, 1 done with per-file problems: the shard is finished;
- 2 fatal (bad arguments, an unreadable root): no retry; the shards still running are
  cancelled and the run ends with 2;
- 3 transient (storage, network, a busy database), or the process killed by a signal (the
  OOM killer, a lost node): the task raises and Ray retries it, up to ``max_retries`` times;
  a retried shard resumes where it stopped. A shard finished earlier is not scanned again,
  so running the whole command again after a failure only does what is left.

The work folder and the project must be on storage every Ray node sees, and the binary at
the same path on every node (``FRAMECULL_BIN``, else the one the framecull wheel carries, else
``framecull`` on each node's PATH). The
tasks are shipped to the workers by value: the workers need Ray and the binary, not this
package. This module imports Ray only when it runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from ._executable import executable

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_FATAL = 2
EXIT_TRANSIENT = 3

__all__ = ["run", "main", "ShardTransientError", "shard_dir"]


class ShardTransientError(RuntimeError):
    """A shard (or the merge) failed in a way a retry may fix: exit code 3, or the process
    was killed by a signal. Ray retries the task on it."""


def shard_dir(work: str | os.PathLike, index: int) -> Path:
    """Where shard ``index`` keeps its project: ``WORK/shard-INDEX``."""
    return Path(work) / f"shard-{index}"


def _log(message: str) -> None:
    print(f"framecull.ray: {message}", file=sys.stderr, flush=True)


def _parent_death_signal():
    """A function for the child, between fork and exec, that has the kernel end it when the
    Ray worker that started it dies (a cancelled task, a killed worker) instead of leaving it
    running unowned; None where that is not available (not Linux). libc is looked up here,
    in the parent: the child of a threaded process must not load libraries."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def set_signal() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGTERM))

    return set_signal


def _framecull(binary: str, args: list[str], what: str) -> int:
    """Runs the binary and returns its exit code; raises ShardTransientError for a transient
    failure so that Ray retries the task. An unstartable binary is fatal (2)."""
    try:
        done = subprocess.run(
            [binary, *args],
            stdin=subprocess.DEVNULL,
            preexec_fn=_parent_death_signal(),
        )
    except OSError as error:
        _log(f"{what}: cannot run {binary}: {error}")
        return EXIT_FATAL
    code = done.returncode
    if code == EXIT_TRANSIENT:
        _log(f"{what}: transient failure (exit 3); Ray retries it")
        raise ShardTransientError(f"{what}: transient failure (exit 3)")
    if code < 0:
        _log(f"{what}: killed by signal {-code}; Ray retries it (the shard resumes)")
        raise ShardTransientError(f"{what}: killed by signal {-code}")
    return code


def _scan_shard(
    binary: str, root: str, project: str, index: int, count: int, analysis: str | None, jobs: int
) -> int:
    args = ["scan", root, "--project", project, "--shard", f"{index}/{count}", "--jobs", str(jobs)]
    if analysis:
        args.append(f"--{analysis}")
    return _framecull(binary, args, f"shard {index}/{count}")


def _merge(binary: str, shards: list[str], project: str) -> int:
    return _framecull(binary, ["merge", *shards, "--project", project], "merge")


def _binary(binary: str | None) -> str:
    found = binary or executable() or shutil.which("framecull")
    if not found:
        raise FileNotFoundError("no framecull binary: install the wheel, set FRAMECULL_BIN or put framecull on PATH")
    # An absolute path when it exists here; otherwise the name, for each node's PATH.
    return os.path.abspath(found) if os.path.exists(found) else found


def _local_or_url(root: str | os.PathLike) -> str:
    root = os.fspath(root)
    return root if "://" in root else os.path.abspath(root)


def _describe(code: int) -> str:
    return {
        EXIT_OK: "done",
        EXIT_PROBLEMS: "done, some files have problems",
        EXIT_FATAL: "fatal error",
        EXIT_TRANSIENT: "transient failure, retries used up",
    }.get(code, f"failed (exit {code})")


def run(
    root: str | os.PathLike,
    shards: int,
    work: str | os.PathLike,
    project: str | os.PathLike,
    deep: bool = False,
    triage: bool = False,
    cpus_per_shard: float = 1,
    memory_per_shard: int | None = None,
    address: str | None = None,
    max_retries: int = 3,
    binary: str | None = None,
) -> int:
    """Scans ``root`` as ``shards`` Ray tasks into ``work``/shard-I, merges them into
    ``project`` and returns the combined exit code: 0 done, 1 done with per-file problems,
    2 fatal, 3 transient (retries used up; run again to finish). Connects to the Ray cluster
    at ``address`` (default: Ray's rule: ``RAY_ADDRESS``, a cluster started on this machine,
    else a new local one) unless Ray is already initialised."""
    if shards < 1:
        raise ValueError("shards must be at least 1")
    if deep and triage:
        raise ValueError("deep or triage, not both")
    analysis = "deep" if deep else "triage" if triage else None
    import ray
    from ray import cloudpickle

    binary = _binary(binary)
    root = _local_or_url(root)
    work = os.path.abspath(work)
    project = os.path.abspath(project)
    os.makedirs(work, exist_ok=True)
    jobs = max(1, int(cpus_per_shard))
    # The tasks travel by value, so workers need neither this package nor its native module.
    if __name__ != "__main__":
        cloudpickle.register_pickle_by_value(sys.modules[__name__])

    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, log_to_driver=True, configure_logging=False)
    try:
        options: dict = {
            "num_cpus": cpus_per_shard,
            "max_retries": max_retries,
            "retry_exceptions": True,
        }
        if memory_per_shard:
            options["memory"] = int(memory_per_shard)
        scan = ray.remote(_scan_shard)
        started = time.monotonic()
        pending = {
            scan.options(name=f"framecull-scan-{i}-of-{shards}", **options).remote(
                binary, root, str(shard_dir(work, i)), i, shards, analysis, jobs
            ): i
            for i in range(shards)
        }
        codes: dict[int, int] = {}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(ready[0])
            try:
                code = ray.get(ready[0])
            except ray.exceptions.RayError as error:
                # Retries used up (the task's own transient failures, or its worker lost).
                _log(f"shard {index}/{shards}: {type(error).__name__}: {error}".splitlines()[0])
                code = EXIT_TRANSIENT
            codes[index] = code
            _log(f"shard {index}/{shards}: {_describe(code)} ({len(codes)}/{shards} finished)")
            if code not in (EXIT_OK, EXIT_PROBLEMS, EXIT_TRANSIENT):
                # Fatal: the other shards would fail alike (same root, same arguments).
                for ref in pending:
                    ray.cancel(ref, force=True)
                _log(f"cancelled the {len(pending)} other shards")
                return code
        failed = sorted(i for i, code in codes.items() if code not in (EXIT_OK, EXIT_PROBLEMS))
        if failed:
            _log(f"shards {failed} did not finish; not merging (run again to finish them)")
            return max(codes[i] for i in failed)
        _log(f"{shards} shards scanned in {time.monotonic() - started:.1f} s; merging")
        merge = ray.remote(_merge).options(num_cpus=1, max_retries=max_retries, retry_exceptions=True)
        try:
            merged = ray.get(
                merge.remote(binary, [str(shard_dir(work, i)) for i in range(shards)], project)
            )
        except ray.exceptions.RayError as error:
            _log(f"merge: {type(error).__name__}: {error}".splitlines()[0])
            merged = EXIT_TRANSIENT
        _log(f"merge: {_describe(merged)} ({project})")
        if merged not in (EXIT_OK, EXIT_PROBLEMS):
            return merged
        return max([merged, *codes.values()])
    finally:
        if started_here:
            ray.shutdown()


def _bytes(text: str) -> int:
    """4294967296, 4G, 512M, 4GiB..."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    value = text.strip().lower().removesuffix("ib").removesuffix("b")
    if value and value[-1] in units:
        return int(float(value[:-1]) * units[value[-1]])
    return int(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m framecull.ray",
        description="Scan a dataset as N shards on a Ray cluster, then merge them into one project.",
        epilog="Exit codes: 0 done, 1 done with per-file problems, 2 fatal, 3 transient (run again).",
    )
    add = parser.add_argument
    add("root", metavar="ROOT", help="dataset root, seen by every node (a folder, or a storage URL)")
    add("--shards", metavar="N", type=int, required=True, help="number of shards (Ray tasks)")
    add("--work", metavar="DIR", required=True, help="shared folder for the shard projects (DIR/shard-I)")
    add("--project", metavar="DIR", required=True, help="the merged project")
    level = parser.add_mutually_exclusive_group()
    level.add_argument("--deep", action="store_true", help="deep analysis too (framecull scan --deep)")
    level.add_argument("--triage", action="store_true",
                       help="a triage of the videos too (framecull scan --triage): a tenth of the deep cost")
    add("--cpus-per-shard", metavar="C", type=float, default=1,
        help="Ray CPUs per shard task, and its scan's --jobs (default 1)")
    add("--memory-per-shard", metavar="BYTES", type=_bytes, default=None,
        help="Ray memory per shard task (4294967296, 4G, 512M)")
    add("--address", metavar="ADDR", default=None,
        help="Ray cluster address (default: RAY_ADDRESS, a cluster on this machine, or a new one)")
    add("--max-retries", metavar="R", type=int, default=3,
        help="retries of a shard after a transient failure (default 3)")
    args = parser.parse_args(argv)
    try:
        return run(
            args.root,
            args.shards,
            args.work,
            args.project,
            deep=args.deep,
            triage=args.triage,
            cpus_per_shard=args.cpus_per_shard,
            memory_per_shard=args.memory_per_shard,
            address=args.address,
            max_retries=args.max_retries,
        )
    except ImportError as error:
        _log(f"Ray is not installed (pip install ray): {error}")
        return EXIT_FATAL
    except (FileNotFoundError, ValueError) as error:
        _log(str(error))
        return EXIT_FATAL


if __name__ == "__main__":
    sys.exit(main())
