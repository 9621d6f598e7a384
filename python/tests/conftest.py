"""Test data: small videos made with FFmpeg's encoders, scanned and exported with the
framecull command line (the same library the package wraps)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Distinct footage per file (so no two are grouped as duplicates), several sizes and rates.
# The cellular automata get grain: two levels of grey are a low_information video, which an
# export leaves out unless accepted.
SOURCES = [
    ("a_testsrc2.mp4", "testsrc2=size=320x240:rate=25:duration=4", ["-c:v", "libx264", "-crf", "12", "-g", "12", "-bf", "2"]),
    ("b_mandelbrot.mp4", "mandelbrot=size=256x192:rate=30", ["-t", "3", "-c:v", "libx264", "-g", "15"]),
    ("c_life.mkv", "life=size=320x180:rate=24:mold=10:ratio=0.3", ["-vf", "noise=alls=20:allf=t", "-t", "3", "-c:v", "libx264", "-g", "24"]),
    ("d_cellauto.mp4", "cellauto=size=240x160:rate=25:rule=110", ["-vf", "noise=alls=20:allf=t", "-t", "3", "-c:v", "libx264", "-g", "10"]),
    ("e_rgbtest.avi", "rgbtestsrc=size=320x240:rate=20", ["-vf", "hue=H=2*PI*t,noise=alls=20:allf=t", "-t", "3", "-c:v", "mpeg4", "-q:v", "4", "-g", "10"]),
    ("f_testsrc.webm", "testsrc=size=256x144:rate=25", ["-vf", "negate", "-t", "3", "-c:v", "libvpx", "-b:v", "300k", "-g", "12"]),
]


def framecull_bin() -> str:
    """The framecull command line of this checkout (built when missing)."""
    found = os.environ.get("FRAMECULL_BIN")
    if found:
        return found
    path = REPO / "target" / "debug" / "framecull"
    if not path.exists():
        subprocess.run(["cargo", "build", "--bin", "framecull"], cwd=REPO, check=True)
    return str(path)


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([framecull_bin(), *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise AssertionError(f"framecull {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True)


def make_dataset(root: Path, sources=SOURCES) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, source, options in sources:
        ffmpeg("-f", "lavfi", "-i", source, *options, "-pix_fmt", "yuv420p", str(root / name))
    run("scan", str(root), "--deep")
    return root / ".framecull"


@pytest.fixture(scope="session")
def dataset(tmp_path_factory) -> dict:
    """Six videos, deep-scanned, exported twice: `all` (no split) and `split`
    (train/val)."""
    root = tmp_path_factory.mktemp("data") / "videos"
    project = make_dataset(root)
    run("export", "--project", str(project), "--name", "all", "--format", "parquet,jsonl")
    run("export", "--project", str(project), "--name", "split", "--split", "train=0.5,val=0.5")
    return {
        "root": root,
        "project": project,
        "all": project / "manifests" / "all",
        "split": project / "manifests" / "split",
    }


def load_bench(manifest: Path, *args: str) -> dict:
    done = run("load-bench", str(manifest), "--json", *args)
    return json.loads(done.stdout)


@pytest.fixture
def copy_of(tmp_path):
    """A copy of a dataset folder (project included) to damage."""

    def make(root: Path) -> Path:
        target = tmp_path / "copy"
        shutil.copytree(root, target)
        return target

    return make
