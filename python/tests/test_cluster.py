"""Sharded scans on real cluster engines, each compared with one scan on one machine.

A private single-node Slurm (scripts/slurm.sh) runs packaging/slurm/submit.sh, and a local Ray
head runs ``python -m framecull.ray``, over ``../shared/media`` (or ``$FRAMECULL_MEDIA``) in 4
shards with deep analysis. The merged catalog must equal the single-machine scan's: the same
``list --format jsonl --all`` rows (duplicate groups compared by their members, since item ids
differ), the same ``flags --json`` and the same ``dups --json`` groups. Faults: a shard killed
part way (Slurm: its array task cancelled, then that index resubmitted; Ray: its process
killed, Ray retries it) still gives the same catalog; a shard merged again adds no rows. Exit
codes, with a framecull that fails on purpose over the image folder: 3 is requeued (Slurm) or
retried (Ray) and the run finishes; 2 fails without a merge.

Skips with a message when an engine cannot be started or the corpus is absent; with
``FRAMECULL_REQUIRE_CLUSTER=1`` (CI) it fails instead.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import REPO, framecull_bin, run

MEDIA = Path(os.environ.get("FRAMECULL_MEDIA", REPO.parent / "shared" / "media"))
REQUIRED = os.environ.get("FRAMECULL_REQUIRE_CLUSTER") == "1"
SHARDS = 4
# Jobs may wait behind others on a busy machine; a deep scan of the corpus takes about 40 s.
JOB_TIMEOUT_SECS = 900


def need(ok: bool, why: str) -> None:
    if not ok:
        if REQUIRED:
            pytest.fail(f"{why} (FRAMECULL_REQUIRE_CLUSTER=1)")
        pytest.skip(why)


# --- comparing catalogs -------------------------------------------------------------------

# Files whose deep decode does not give the same result on every run, sharded or not: how many
# decode errors, and the words of the flag's reason (FFmpeg's message). On this truncated AVIF
# (256 bytes) FFmpeg 5.1's MP4 demuxer reads a different sample size on every run (`ffprobe`
# alone prints "Sample size 2216631664 is too large", then 1637879152, then 4248771952), and
# framecull records "Sample size ... is too large" with no error, "packet 1: Invalid argument"
# or "Invalid data found ... partial file" accordingly. For these files the kind, status, flag
# codes and everything else are still compared.
UNSTABLE_DECODE = {"broken/mp4p_corrupt_bug-1655846.avif"}


def catalog_view(project: Path) -> dict:
    """What a user sees of a catalog, without the item ids (which depend on how it was built):
    every `list --all` row, flags, and duplicate groups as sets of paths."""
    rows = [json.loads(line) for line in run("list", "--project", str(project), "--format", "jsonl", "--all").stdout.splitlines() if line]
    for key in ("dup_group", "dup_exact_group"):
        members = defaultdict(list)
        for row in rows:
            if row.get(key) is not None:
                members[row[key]].append(row["path"])
        for row in rows:
            if row.get(key) is not None:
                row[key] = sorted(members[row[key]])
    rows.sort(key=lambda row: row["path"])
    for row in rows:
        if row["path"] in UNSTABLE_DECODE:
            row.pop("decode_errors", None)
            for flag in row.get("flags") or []:
                flag.pop("reason", None)

    flags = json.loads(run("flags", "--project", str(project), "--json").stdout)
    for group in flags:
        for item in group["items"]:
            if item["path"] in UNSTABLE_DECODE:
                item["reason"] = None
        group["items"] = sorted(group["items"], key=lambda item: (item["path"], item["reason"]))
    flags.sort(key=lambda group: group["code"])

    with sqlite3.connect(f"file:{project / 'catalog.db'}?mode=ro", uri=True) as db:
        paths = dict(db.execute("SELECT id, path FROM items"))
    dups = json.loads(run("dups", "--project", str(project), "--json").stdout)
    groups = sorted(
        (
            {
                "exact": group["exact"],
                "members": sorted(paths[m] for m in group["members"]),
                "best": paths[group["best"]],
            }
            for group in dups
        ),
        key=lambda group: group["members"],
    )
    return {"rows": rows, "flags": flags, "dups": groups}


def assert_same_catalog(project: Path, reference: dict) -> None:
    view = catalog_view(project)
    paths = [row["path"] for row in view["rows"]]
    assert len(paths) == len(set(paths)), "a file is listed twice"
    assert [r["path"] for r in view["rows"]] == [r["path"] for r in reference["rows"]]
    for got, want in zip(view["rows"], reference["rows"]):
        assert got == want, f"{got['path']}: {sorted(k for k in want if got.get(k) != want[k])} differ"
    assert view["flags"] == reference["flags"]
    assert view["dups"] == reference["dups"]


def shard_items(project: Path) -> int:
    """Items a (possibly running) shard has committed."""
    db = project / "catalog.db"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT count(*) FROM items").fetchone()[0]
    except sqlite3.Error:
        return 0


def copy_shards(work: Path, target: Path, indexes) -> None:
    for i in indexes:
        shutil.copytree(work / f"shard-{i}", target / f"shard-{i}")


def flaky_binary(folder: Path, index: int, code: int, times: int) -> str:
    """A framecull that exits with CODE the first TIMES times it is asked to scan shard INDEX,
    and is the real one otherwise."""
    folder.mkdir(parents=True, exist_ok=True)
    counter, script = folder / "failures", folder / "framecull"
    q = shlex.quote
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = scan ]; then\n'
        f'  case " $* " in *" --shard {index}/"*)\n'
        f"    n=$(cat {q(str(counter))} 2>/dev/null || echo 0)\n"
        f'    if [ "$n" -lt {times} ]; then\n'
        f"      echo $((n + 1)) > {q(str(counter))}; echo 'flaky framecull: exit {code}' >&2; exit {code}\n"
        "    fi ;;\n"
        "  esac\n"
        "fi\n"
        f'exec {q(framecull_bin())} "$@"\n'
    )
    script.chmod(0o755)
    return str(script)


@pytest.fixture(scope="session")
def images(media, tmp_path_factory) -> tuple[Path, dict]:
    """The corpus' image folder and its single-machine scan (no deep analysis: quick), for the
    exit code tests."""
    project = tmp_path_factory.mktemp("images") / "project"
    run("scan", str(media / "image"), "--project", str(project), "--jobs", "2")
    return media / "image", catalog_view(project)


@pytest.fixture(scope="session")
def media() -> Path:
    need((MEDIA / "video").is_dir(), f"no corpus at {MEDIA}: set FRAMECULL_MEDIA")
    scan_help = subprocess.run([framecull_bin(), "scan", "--help"], capture_output=True, text=True).stdout
    merge = subprocess.run([framecull_bin(), "merge", "--help"], capture_output=True, text=True)
    assert "--shard" in scan_help and merge.returncode == 0, f"{framecull_bin()} has no sharded scan (scan --shard, merge)"
    return MEDIA


@pytest.fixture(scope="session")
def reference(media, tmp_path_factory) -> dict:
    """The corpus scanned deep on one machine: what every sharded run must give."""
    project = tmp_path_factory.mktemp("single") / "project"
    run("scan", str(media), "--deep", "--project", str(project), "--jobs", "2")
    return catalog_view(project)


# --- Slurm --------------------------------------------------------------------------------


def free_port_pair() -> int:
    """A port p with p and p + 1 free (slurmctld and slurmd)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port >= 65535:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two free ports in a row")


@pytest.fixture(scope="session")
def slurm(media):
    """A private Slurm cluster on this machine (scripts/slurm.sh), stopped after the session."""
    state = Path(tempfile.mkdtemp(prefix="fc-slurm-"))
    env = {**os.environ, "FRAMECULL_SLURM_DIR": str(state), "FRAMECULL_SLURM_PORT": str(free_port_pair())}
    env["SLURM_CONF"] = str(state / "slurm.conf")
    for key in [k for k in env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
        del env[key]
    script = REPO / "scripts" / "slurm.sh"
    try:
        started = subprocess.run(["bash", str(script), "start"], env=env, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        started = None
    if started is None or started.returncode != 0:
        subprocess.run(["bash", str(script), "stop"], env=env, capture_output=True)
        why = "timed out" if started is None else started.stderr[-2000:]
        need(False, f"cannot start Slurm with scripts/slurm.sh: {why}")
    try:
        yield env
    finally:
        subprocess.run(["bash", str(script), "stop"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(state, ignore_errors=True)


def submit(env: dict, root: Path, work: Path, out: Path, *options: str, shards: int = SHARDS,
           deep: bool = True, binary: str | None = None) -> dict[str, str]:
    done = subprocess.run(
        ["bash", str(REPO / "packaging" / "slurm" / "submit.sh"), str(root), str(work), str(out),
         "--shards", str(shards), *(["--deep"] if deep else []), "--cpus-per-task", "1", *options],
        env={**env, "FRAMECULL_BIN": binary or framecull_bin()}, capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, f"submit.sh failed:\n{done.stdout}\n{done.stderr}"
    jobs = dict(line.split() for line in done.stdout.splitlines())
    assert set(jobs) == {"scan", "merge"}, done.stdout
    return jobs


def job_fields(env: dict, job: str) -> list[dict[str, str]]:
    """`scontrol show job -o` of a job, or of each task of an array job."""
    done = subprocess.run(["scontrol", "show", "job", "-o", job], env=env, capture_output=True, text=True)
    return [dict(f.split("=", 1) for f in line.split() if "=" in f) for line in done.stdout.splitlines()]


def job_states(env: dict, job: str) -> dict[str, str]:
    """State of a job, or of each task of an array job, by job id."""
    return {fields.get("JobId", "?"): fields.get("JobState", "?") for fields in job_fields(env, job)}


FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE"}


def wait_job(env: dict, job: str, work: Path) -> str:
    deadline = time.monotonic() + JOB_TIMEOUT_SECS
    while time.monotonic() < deadline:
        states = set(job_states(env, job).values())
        if states and states <= FINAL:
            return states.pop() if len(states) == 1 else ",".join(sorted(states))
        time.sleep(1)
    logs = "\n".join(f"== {p.name}\n{p.read_text()[-1500:]}" for p in sorted((work / "logs").glob("*.log")))
    pytest.fail(f"Slurm job {job} not finished after {JOB_TIMEOUT_SECS} s: {job_states(env, job)}\n{logs}")


@pytest.fixture(scope="session")
def slurm_run(slurm, media, tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("slurm")
    work, out = base / "work", base / "catalog"
    started = time.monotonic()
    jobs = submit(slurm, media, work, out, "--parallel", "2")
    state = wait_job(slurm, jobs["merge"], work)
    merge_log = (work / "logs" / "merge.log").read_text() if (work / "logs" / "merge.log").exists() else ""
    assert state == "COMPLETED", f"merge job {state}; scan tasks {job_states(slurm, jobs['scan'])}\n{merge_log}"
    print(f"Slurm: {SHARDS} shards and the merge in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return {"work": work, "out": out, "jobs": jobs}


def test_slurm_shards_then_merge_equal_one_machine(slurm, slurm_run, reference):
    work = slurm_run["work"]
    tasks = job_states(slurm, slurm_run["jobs"]["scan"])
    assert len(tasks) == SHARDS and set(tasks.values()) == {"COMPLETED"}, tasks
    for i in range(SHARDS):
        shard = json.loads((work / f"shard-{i}" / "shard.json").read_text())
        assert (shard["index"], shard["count"], shard["deep"]) == (i, SHARDS, True)
        assert f"shard {i}/{SHARDS}" in (work / "logs" / f"scan-{i}.log").read_text()
    assert_same_catalog(slurm_run["out"], reference)


def test_slurm_cancelled_shard_resubmitted(slurm, slurm_run, reference, tmp_path):
    """Shard 2's task is cancelled part way (the merge waiting on it is cancelled with it);
    submitting index 2 again resumes the shard and merges all four."""
    work, out = tmp_path / "work", tmp_path / "catalog"
    copy_shards(slurm_run["work"], work, [i for i in range(SHARDS) if i != 2])
    first = submit(slurm, MEDIA, work, out, "--indexes", "2")
    task = f"{first['scan']}_2"
    deadline = time.monotonic() + JOB_TIMEOUT_SECS
    while shard_items(work / "shard-2") == 0:
        assert time.monotonic() < deadline, f"shard 2 never started: {job_states(slurm, first['scan'])}"
        time.sleep(0.2)
    subprocess.run(["scancel", task], env=slurm, check=True)
    assert wait_job(slurm, first["scan"], work) == "CANCELLED"
    assert wait_job(slurm, first["merge"], work) == "CANCELLED", "the merge must not run without shard 2"
    assert not (work / "shard-2" / "shard.json").exists(), "shard 2 finished before it was cancelled"
    assert not out.exists() or not (out / "catalog.db").exists()
    kept = shard_items(work / "shard-2")
    assert kept > 0

    second = submit(slurm, MEDIA, work, out, "--indexes", "2")
    assert wait_job(slurm, second["merge"], work) == "COMPLETED", (work / "logs" / "merge.log").read_text()
    shard = json.loads((work / "shard-2" / "shard.json").read_text())
    assert shard["counts"]["unchanged"] > 0, f"the resubmitted shard started over: {shard['counts']}"
    assert_same_catalog(out, reference)


def test_merge_again_adds_no_rows(slurm_run, reference, tmp_path, media):
    """Merging into a project again (all shards, in another order; a shard scanned again)
    replaces rows, never adds them."""
    work = slurm_run["work"]
    out = tmp_path / "catalog"
    shutil.copytree(slurm_run["out"], out)
    shards = [str(work / f"shard-{i}") for i in reversed(range(SHARDS))]
    again = json.loads(run("merge", *shards, "--project", str(out), "--json").stdout)
    assert again["merged"] == 0 and again["up_to_date"] == SHARDS
    # Shard 1 scanned again (nothing changed on disk: a quick rescan) is merged again.
    copy = tmp_path / "shard-1"
    shutil.copytree(work / "shard-1", copy)
    run("scan", str(media), "--project", str(copy), "--shard", f"1/{SHARDS}", "--deep", "--rescan", "--jobs", "1")
    merged = json.loads(run("merge", str(copy), "--project", str(out), "--json").stdout)
    assert merged["merged"] == 1
    assert_same_catalog(out, reference)
    # Another project built in the other order is the same.
    other = tmp_path / "other"
    run("merge", *shards, "--project", str(other))
    assert_same_catalog(other, reference)


def test_slurm_exit_codes(slurm, images, tmp_path):
    """Exit 3 requeues the task, which runs again and finishes; exit 2 fails the task and the
    merge is cancelled."""
    root, reference = images
    work, out = tmp_path / "work", tmp_path / "catalog"
    binary = flaky_binary(tmp_path / "transient", index=1, code=3, times=1)
    jobs = submit(slurm, root, work, out, shards=2, deep=False, binary=binary)
    assert wait_job(slurm, jobs["merge"], work) == "COMPLETED", (work / "logs" / "merge.log").read_text()
    restarts = {f["ArrayTaskId"]: f["Restarts"] for f in job_fields(slurm, jobs["scan"])}
    assert restarts == {"0": "0", "1": "1"}
    assert "requeueing shard 1" in (work / "logs" / "scan-1.log").read_text()
    assert_same_catalog(out, reference)

    work, out = tmp_path / "work-fatal", tmp_path / "catalog-fatal"
    binary = flaky_binary(tmp_path / "fatal", index=0, code=2, times=99)
    jobs = submit(slurm, root, work, out, shards=2, deep=False, binary=binary)
    assert wait_job(slurm, jobs["merge"], work) == "CANCELLED"
    tasks = {f["ArrayTaskId"]: (f["JobState"], f["Restarts"], f["ExitCode"]) for f in job_fields(slurm, jobs["scan"])}
    assert tasks["0"] == ("FAILED", "0", "2:0"), tasks
    assert not out.exists()


# --- Ray ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def ray_cluster(media):
    """A Ray head on this machine (2 CPUs), its own process group, stopped after the session."""
    need(importlib.util.find_spec("ray") is not None, "Ray is not installed (pip install ray)")
    ray_bin = Path(sys.executable).parent / "ray"
    need(ray_bin.exists(), f"no `ray` command beside {sys.executable}")
    # A short folder: Ray's sockets live in it, and socket paths are limited to 107 bytes.
    temp = Path(tempfile.mkdtemp(prefix="fc-ray-"))
    log = open(temp / "start.log", "w")
    head = subprocess.Popen(
        [str(ray_bin), "start", "--head", "--block", "--node-ip-address=127.0.0.1", "--port=0",
         "--num-cpus=2", "--include-dashboard=false", "--object-store-memory=100000000",
         f"--temp-dir={temp}", "--disable-usage-stats"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
    )
    address_file = temp / "ray_current_cluster"
    deadline = time.monotonic() + 180
    while not address_file.exists() and head.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    try:
        if not address_file.exists():
            need(False, f"cannot start a Ray head: {(temp / 'start.log').read_text()[-2000:]}")
        yield address_file.read_text().strip()
    finally:
        # `ray start --block` stops the processes it started when it is terminated.
        head.terminate()
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


def ray_command(root: Path, work: Path, out: Path, address: str, *options: str, shards: int = SHARDS,
                deep: bool = True) -> list[str]:
    return [sys.executable, "-m", "framecull.ray", str(root), "--shards", str(shards), "--work", str(work),
            "--project", str(out), *(["--deep"] if deep else []), "--cpus-per-shard", "1", "--address", address,
            *options]


def ray_env(binary: str | None = None) -> dict:
    path = os.environ.get("PYTHONPATH")
    python = str(REPO / "python")
    return {**os.environ, "FRAMECULL_BIN": binary or framecull_bin(),
            "PYTHONPATH": f"{python}:{path}" if path else python}


@pytest.fixture(scope="session")
def ray_run(ray_cluster, media, tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("ray")
    work, out = base / "work", base / "catalog"
    started = time.monotonic()
    done = subprocess.run(ray_command(media, work, out, ray_cluster), env=ray_env(), capture_output=True,
                          text=True, timeout=JOB_TIMEOUT_SECS)
    # The corpus has broken files: 1, done with per-file problems.
    assert done.returncode == 1, f"exit {done.returncode}:\n{done.stderr[-4000:]}"
    print(f"Ray: {SHARDS} shards and the merge in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return {"work": work, "out": out, "stderr": done.stderr}


def test_ray_shards_then_merge_equal_one_machine(ray_run, reference):
    for i in range(SHARDS):
        shard = json.loads((ray_run["work"] / f"shard-{i}" / "shard.json").read_text())
        assert (shard["index"], shard["count"], shard["deep"]) == (i, SHARDS, True)
    assert "4 shards scanned" in ray_run["stderr"]
    assert_same_catalog(ray_run["out"], reference)


def shard_processes(project: Path) -> list[int]:
    """Pids of framecull processes scanning into this shard project."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"scan" in args and str(project).encode() in args and b"--shard" in args:
            found.append(int(entry.name))
    return found


def test_ray_killed_shard_is_retried(ray_cluster, ray_run, reference, tmp_path):
    """Shard 2's process is killed part way; Ray runs the task again, the shard resumes, and
    the merged catalog is the same. The finished shards are not scanned again."""
    work, out = tmp_path / "work", tmp_path / "catalog"
    copy_shards(ray_run["work"], work, [i for i in range(SHARDS) if i != 2])
    driver = subprocess.Popen(ray_command(MEDIA, work, out, ray_cluster), env=ray_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + JOB_TIMEOUT_SECS
    try:
        while killed is None and driver.poll() is None and time.monotonic() < deadline:
            pids = shard_processes(work / "shard-2")
            if pids and shard_items(work / "shard-2") > 0:
                os.kill(pids[0], signal.SIGKILL)
                killed = pids[0]
            time.sleep(0.2)
        _, stderr = driver.communicate(timeout=JOB_TIMEOUT_SECS)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert killed is not None, "shard 2's process was never seen running"
    assert driver.returncode == 1, f"exit {driver.returncode}:\n{stderr[-4000:]}"
    shard = json.loads((work / "shard-2" / "shard.json").read_text())
    assert shard["counts"]["unchanged"] > 0, f"the retried shard started over: {shard['counts']}"
    assert_same_catalog(out, reference)


def test_ray_fatal_error_fails_fast(ray_cluster, tmp_path):
    """An unreadable root is exit 2 in every shard: no retry, no merge, exit 2."""
    missing = tmp_path / "no-such-dataset"
    started = time.monotonic()
    done = subprocess.run(ray_command(missing, tmp_path / "work", tmp_path / "catalog", ray_cluster),
                          env=ray_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-4000:]
    assert "fatal" in done.stderr
    assert not (tmp_path / "catalog").exists()
    assert time.monotonic() - started < 120


def test_ray_transient_exit_is_retried(ray_cluster, images, tmp_path):
    """Exit 3 is retried and the run finishes; a shard that keeps failing ends the run with 3
    once its retries are used up, without a merge."""
    root, reference = images
    work, out = tmp_path / "work", tmp_path / "catalog"
    binary = flaky_binary(tmp_path / "once", index=1, code=3, times=1)
    done = subprocess.run(ray_command(root, work, out, ray_cluster, shards=2, deep=False),
                          env=ray_env(binary), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "once" / "failures").read_text().strip() == "1"
    assert_same_catalog(out, reference)

    work, out = tmp_path / "work-always", tmp_path / "catalog-always"
    binary = flaky_binary(tmp_path / "always", index=1, code=3, times=99)
    done = subprocess.run(ray_command(root, work, out, ray_cluster, "--max-retries", "1", shards=2, deep=False),
                          env=ray_env(binary), capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr[-4000:]
    assert (tmp_path / "always" / "failures").read_text().strip() == "2", "one run and one retry"
    assert "did not finish" in done.stderr
    assert not out.exists()


def test_ray_python_api(ray_cluster, images, tmp_path):
    """framecull.ray.run() from a program of one's own: the same shards and merge, the exit
    code returned."""
    root, reference = images
    program = (
        "import sys, framecull.ray\n"
        "sys.exit(framecull.ray.run(sys.argv[1], shards=3, work=sys.argv[2], project=sys.argv[3],"
        " cpus_per_shard=1, memory_per_shard=256 << 20, address=sys.argv[4]))\n"
    )
    out = tmp_path / "catalog"
    done = subprocess.run([sys.executable, "-c", program, str(root), str(tmp_path / "work"), str(out), ray_cluster],
                          env=ray_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["shard-0", "shard-1", "shard-2"]
    assert_same_catalog(out, reference)
