"""The package's executable: `python -m framecull` and the worker the loader decodes in.

The wheel itself (the executable and FFmpeg inside, clean Debian roots) is tested by
packaging/wheel-smoke.sh; these run against the source build scripts/python.sh makes.
"""

from __future__ import annotations

import os
import subprocess
import sys

import framecull
from framecull import _executable


def test_python_m_framecull_runs_the_named_executable():
    # scripts/python.sh names this checkout's binary with FRAMECULL_BIN.
    assert os.environ.get("FRAMECULL_BIN"), "FRAMECULL_BIN is not set"
    out = subprocess.run([sys.executable, "-m", "framecull", "--version"], capture_output=True, text=True,
                         check=True)
    lines = out.stdout.splitlines()
    assert lines[0].split()[:2] == ["framecull", framecull.__version__.split()[0]]
    assert lines[1].startswith("FFmpeg ") and "libavcodec" in lines[1]
    assert any(line.startswith("decoders: ") and "h264" in line for line in lines)


def test_a_source_build_without_an_executable_says_what_to_do():
    # A source build carries no executable: with none named, an error line and exit 2.
    assert _executable.bundled() is None
    env = {k: v for k, v in os.environ.items() if k != "FRAMECULL_BIN"}
    out = subprocess.run([sys.executable, "-m", "framecull", "--version"], capture_output=True, text=True,
                         env=env, check=False)
    assert out.returncode == 2
    assert out.stderr.startswith("error: this framecull package carries no executable")
    assert "FRAMECULL_BIN" in out.stderr
    assert out.stdout == ""


def test_the_worker_named_by_the_package_is_used_when_the_environment_names_none(tmp_path):
    # What a wheel's import does with its bundled executable, in a fresh interpreter: the
    # native module keeps the first name it is given. (That the wheel's loader then decodes
    # in its workers, with no variable set, packaging/wheel-smoke.sh checks.)
    code = (
        "import framecull, framecull._framecull as n, sys;"
        "print(n._use_worker_exe(sys.argv[1]), n._use_worker_exe(sys.argv[1]), n._use_worker_exe('/elsewhere'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "FRAMECULL_WORKER_EXE"}
    out = subprocess.run([sys.executable, "-c", code, os.environ["FRAMECULL_BIN"]], capture_output=True,
                         text=True, env=env, check=True)
    assert out.stdout.split() == ["True", "True", "False"]
