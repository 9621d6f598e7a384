"""``python -m framecull ARGS``: the ``framecull`` command line (and window) this package carries.

``python -m framecull --version`` names the FFmpeg it carries and the decoders present.
"""

from __future__ import annotations

import os
import sys

from ._executable import executable


def main() -> None:
    exe = executable()
    if exe is None:
        sys.stderr.write(
            "error: this framecull package carries no executable (a source build): "
            "build one with `cargo build --bin framecull` and name it with FRAMECULL_BIN, "
            "or install the wheel (packaging/wheel.sh)\n"
        )
        sys.exit(2)
    # A bare name (FRAMECULL_BIN=framecull) is looked up on PATH.
    os.execvp(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
