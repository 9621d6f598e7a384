"""The ``framecull`` executable this package runs: the command line, the window, the worker.

The wheel carries it as ``framecull/bin/framecull`` (with the FFmpeg libraries it links, in
``framecull.libs``); a source build of the package does not, and names one with
``FRAMECULL_BIN``.
"""

from __future__ import annotations

import os
from pathlib import Path

BUNDLED = Path(__file__).resolve().parent / "bin" / "framecull"


def bundled() -> str | None:
    """The executable the wheel carries, or None in a source build."""
    return str(BUNDLED) if os.access(BUNDLED, os.X_OK) else None


def executable() -> str | None:
    """``FRAMECULL_BIN`` when set, else the executable the wheel carries, else None."""
    return os.environ.get("FRAMECULL_BIN") or bundled()
