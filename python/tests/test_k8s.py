"""The Kubernetes manifests (packaging/k8s/) against the command line they run: valid Jobs, an
Indexed scan whose completions are its --shards, flags the binary really has, the exit codes
docs/SCALE.md documents, and the shell around the command mapping them as the
podFailurePolicy expects."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

import signal
import time

from conftest import REPO, ffmpeg, framecull_bin

K8S = REPO / "packaging" / "k8s"
# framecull's exit codes (docs/CLI.md, docs/SCALE.md).
FATAL, TRANSIENT = 2, 3


def documents() -> dict[str, dict]:
    """Every document of every manifest, by the Job's name."""
    jobs = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            assert isinstance(doc, dict), f"{path.name}: a document that is not a mapping"
            assert doc.get("apiVersion") == "batch/v1", path.name
            assert doc.get("kind") == "Job", path.name
            jobs[doc["metadata"]["name"]] = doc
    return jobs


def container(job: dict) -> dict:
    (only,) = job["spec"]["template"]["spec"]["containers"]
    return only


def script(job: dict) -> str:
    """The container's shell script (command: [/bin/sh, -c], args: [script])."""
    c = container(job)
    assert c["command"] == ["/bin/sh", "-c"], "the command runs in a shell that maps exit 1 to 0"
    (text,) = c["args"]
    return text


def framecull_call(text: str, subcommand: str) -> list[str]:
    """The words of the `framecull SUBCOMMAND ...` line of a script (run in the background,
    `&`, so the shell can pass signals on)."""
    lines = [line for line in text.splitlines() if line.strip().startswith(f"framecull {subcommand} ")]
    assert len(lines) == 1, f"one `framecull {subcommand}` line in:\n{text}"
    words = shlex.split(lines[0])
    assert words[-1] == "&", f"framecull runs in the background of its shell: {lines[0]}"
    return words[:-1]


def long_flags(words: list[str]) -> set[str]:
    return {w.split("=")[0] for w in words if w.startswith("--")}


def help_flags(subcommand: str) -> set[str]:
    done = subprocess.run([framecull_bin(), subcommand, "--help"], capture_output=True, text=True)
    assert done.returncode == 0, f"framecull {subcommand} --help: {done.stderr}"
    return set(re.findall(r"--[a-z][a-z0-9-]*", done.stdout))


def flag_value(words: list[str], flag: str) -> str:
    assert flag in words, f"{flag} missing from {words}"
    return words[words.index(flag) + 1]


def failure_codes(job: dict) -> dict[str, list[int]]:
    """podFailurePolicy: action -> exit codes, for the rules on exit codes."""
    rules = job["spec"]["podFailurePolicy"]["rules"]
    codes: dict[str, list[int]] = {}
    for rule in rules:
        on = rule.get("onExitCodes")
        if on is None:
            continue
        assert on["operator"] == "In"
        assert on.get("containerName") == container(job)["name"]
        codes.setdefault(rule["action"], []).extend(on["values"])
    return codes


def documented_codes(doc: Path) -> dict[int, str]:
    """The exit code table of a doc: `| code | meaning |` rows."""
    rows = re.findall(r"^\|\s*(\d)\s*\|\s*(.+?)\s*\|\s*$", doc.read_text(), re.MULTILINE)
    return {int(code): meaning.lower() for code, meaning in rows}


@pytest.fixture(scope="module")
def jobs() -> dict[str, dict]:
    found = documents()
    assert set(found) == {"framecull-scan", "framecull-merge"}
    return found


def test_scan_job_is_indexed_with_one_completion_per_shard(jobs):
    scan = jobs["framecull-scan"]
    spec = scan["spec"]
    assert spec["completionMode"] == "Indexed"
    words = framecull_call(script(scan), "scan")
    shards = int(flag_value(words, "--shards"))
    assert spec["completions"] == shards
    assert 1 <= spec["parallelism"] <= shards
    assert spec["backoffLimitPerIndex"] >= 1
    assert scan["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    # The index is Kubernetes' own: the binary reads JOB_COMPLETION_INDEX, the project folder
    # is named after it; no explicit --shard I/N, no Slurm variable.
    text = script(scan)
    assert "--shard " not in text and "SLURM" not in text
    project = flag_value(words, "--project")
    assert "$JOB_COMPLETION_INDEX" in project or "${JOB_COMPLETION_INDEX}" in project
    # The dataset root comes from the environment.
    env = {e["name"]: e.get("value") for e in container(scan).get("env", [])}
    assert words[2] == "$FRAMECULL_ROOT" and env.get("FRAMECULL_ROOT")


def test_commands_use_real_subcommands_and_flags(jobs):
    for name, subcommand in [("framecull-scan", "scan"), ("framecull-merge", "merge")]:
        used = long_flags(framecull_call(script(jobs[name]), subcommand))
        assert used, name
        unknown = used - help_flags(subcommand)
        assert not unknown, f"{name} uses flags `framecull {subcommand} --help` does not list: {unknown}"


def test_merge_takes_every_shard_the_scan_writes(jobs):
    scan_words = framecull_call(script(jobs["framecull-scan"]), "scan")
    shards = int(flag_value(scan_words, "--shards"))
    pattern = flag_value(scan_words, "--project")
    expected = [re.sub(r"\$\{?JOB_COMPLETION_INDEX\}?", str(i), pattern) for i in range(shards)]
    words = framecull_call(script(jobs["framecull-merge"]), "merge")
    out = flag_value(words, "--project")
    listed = [w for w in words[2:] if not w.startswith("--") and w != out]
    assert listed == expected
    assert jobs["framecull-merge"]["spec"].get("completionMode", "NonIndexed") == "NonIndexed"


def test_failure_policy_follows_the_documented_exit_codes(jobs):
    for doc in [REPO / "docs" / "SCALE.md", REPO / "docs" / "CLI.md"]:
        table = documented_codes(doc)
        assert "fatal" in table[FATAL], f"{doc.name}: exit {FATAL} is {table[FATAL]!r}"
        if doc.name == "SCALE.md" or TRANSIENT in table:
            assert "transient" in table[TRANSIENT], f"{doc.name}: exit {TRANSIENT} is {table.get(TRANSIENT)!r}"
    scan = failure_codes(jobs["framecull-scan"])
    assert scan == {"FailIndex": [FATAL], "Count": [TRANSIENT]}
    merge = failure_codes(jobs["framecull-merge"])
    assert merge == {"FailJob": [FATAL], "Count": [TRANSIENT]}


def test_one_pod_per_catalog_at_a_time(jobs):
    """A replacement pod waits until the failed one has terminated, so that two pods never
    write the same shard's catalog."""
    for name, job in jobs.items():
        assert job["spec"]["podReplacementPolicy"] == "Failed", name
        assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never", name


def test_requests_cpu_and_memory(jobs):
    for name, job in jobs.items():
        requests = container(job)["resources"]["requests"]
        assert "cpu" in requests and "memory" in requests, name
    words = framecull_call(script(jobs["framecull-scan"]), "scan")
    cpus = float(container(jobs["framecull-scan"])["resources"]["requests"]["cpu"])
    assert int(flag_value(words, "--jobs")) <= cpus


@pytest.mark.parametrize("name", ["framecull-scan", "framecull-merge"])
def test_shell_maps_exit_codes_for_kubernetes(jobs, name, tmp_path):
    """The container's script, run with a framecull that exits with each code: 1 (done with
    per-file problems) becomes success, 2 and 3 reach the podFailurePolicy unchanged."""
    fake = tmp_path / "framecull"
    fake.write_text('#!/bin/sh\nexit "$FAKE_CODE"\n')
    fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{tmp_path}:{os.environ['PATH']}",
        "JOB_COMPLETION_INDEX": "0",
        "FRAMECULL_ROOT": str(tmp_path),
    }
    for code, expected in [(0, 0), (1, 0), (FATAL, FATAL), (TRANSIENT, TRANSIENT), (137, 137)]:
        done = subprocess.run(["/bin/sh", "-c", script(jobs[name])], env={**env, "FAKE_CODE": str(code)})
        assert done.returncode == expected, f"{name}: framecull exit {code} gave {done.returncode}"


@pytest.fixture(scope="module")
def slow_videos(tmp_path_factory) -> Path:
    """Videos whose deep scan takes some seconds: long enough to be stopped midway."""
    root = tmp_path_factory.mktemp("slow")
    for i in range(6):
        ffmpeg("-f", "lavfi", "-i", f"testsrc2=size=320x240:rate=25:duration=40,hue=h={i * 50}",
               "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", str(root / f"v{i}.mp4"))
    return root


def stop_shell(shell: subprocess.Popen, project: Path) -> tuple[float, str]:
    """SIGTERM to the launcher's shell (as the kubelet and Slurm send it) once framecull has
    committed some work; how long until the shell exited, and its output."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and shell.poll() is None:
        if (project / "catalog.db").exists():
            break
        time.sleep(0.05)
    time.sleep(1.0)
    assert shell.poll() is None, "the scan ended before it could be stopped"
    sent = time.monotonic()
    shell.send_signal(signal.SIGTERM)
    out, _ = shell.communicate(timeout=60)
    return time.monotonic() - sent, out


def test_sigterm_to_the_pod_stops_framecull_with_exit_3_and_the_retry_resumes(jobs, slow_videos, tmp_path):
    """The scan Job's shell, run as the pod's PID 1 would be, with the real framecull: the
    kubelet's SIGTERM reaches framecull through it, the pod ends with 3 (Count, then a retry)
    well inside terminationGracePeriodSeconds, and the retried pod finishes the shard."""
    job = jobs["framecull-scan"]
    grace = job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    # All of the folder in one shard, in a folder of the test's.
    text = script(job).replace("/work/", f"{tmp_path}/").replace("--shards 8", "--shards 1")
    assert "--shards 1" in text
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "framecull").symlink_to(framecull_bin())
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "JOB_COMPLETION_INDEX": "0",
           "FRAMECULL_ROOT": str(slow_videos)}
    shell = subprocess.Popen(["/bin/sh", "-c", text], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    took, out = stop_shell(shell, tmp_path / "shard-0")
    assert shell.returncode == TRANSIENT, out
    assert "SIGTERM: stopping" in out, out
    assert took < grace / 3, f"stopped {took:.1f} s after SIGTERM (grace {grace} s)"
    print(f"pod shell: exit 3 {took:.2f} s after SIGTERM")
    again = subprocess.run(["/bin/sh", "-c", text], env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "up to date" in again.stdout + again.stderr, again.stdout + again.stderr
    listed = subprocess.run([framecull_bin(), "list", "--project", str(tmp_path / "shard-0"), "--format", "jsonl"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(listed) == 6


@pytest.mark.parametrize("state", ["RUNNING", "COMPLETING"])
def test_sigterm_to_the_slurm_task_stops_framecull_and_requeues(slow_videos, tmp_path, state):
    """scan-array.sbatch as slurmstepd runs it, signalled as `--signal=B:TERM@120` does (the
    batch shell only): bash passes SIGTERM on at once, framecull exits 3, and the task asks
    to be requeued (a stand-in scontrol records the call and ends the task as Slurm would);
    unless the task was cancelled (`scancel`: Slurm marks it completing before it signals it):
    that task stays cancelled."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = show ]; then echo "JobId=$3 JobState={state} Reason=None"; exit 0; fi\n'
        f'echo "$@" > {tmp_path}/scontrol.args\nkill -KILL $PPID\n')
    (bin_dir / "scontrol").chmod(0o755)
    sbatch = REPO / "packaging" / "slurm" / "scan-array.sbatch"
    assert "#SBATCH --signal=B:TERM@" in sbatch.read_text()
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FRAMECULL_BIN": framecull_bin(),
           "FRAMECULL_ROOT": str(slow_videos), "FRAMECULL_WORK": str(tmp_path), "FRAMECULL_SHARDS": "1",
           "FRAMECULL_DEEP": "1", "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_JOB_ID": "77",
           "SLURM_JOB_ID": "78", "SLURM_CPUS_PER_TASK": "2", "SLURM_RESTART_COUNT": "0"}
    shell = subprocess.Popen(["bash", str(sbatch)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    took, out = stop_shell(shell, tmp_path / "shard-0")
    assert "SIGTERM: stopping" in out, out
    if state == "RUNNING":
        assert "requeueing shard 0" in out, out
        assert (tmp_path / "scontrol.args").read_text().split() == ["requeue", "77_0"]
    else:
        assert "shard 0 cancelled: not requeued" in out, out
        assert shell.returncode == TRANSIENT
        assert not (tmp_path / "scontrol.args").exists()
    assert took < 10, f"stopped {took:.1f} s after SIGTERM"
