"""This checkout as a fresh clone has it, and the commands the packaging tests run on it.

``clean_copy`` copies the tracked files only (links kept as links), so what a test builds
from it (a wheel, the image's wheels) cannot lean on anything that lives only here: a venv,
node_modules, a stray build/ folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tests.support import ROOT


def succeed(
    *command: str | Path, cwd: Path, timeout: float = 600, env: Mapping[str, str] | None = None
) -> str:
    """What ``command`` prints; it must exit 0 (else its output's tail is the failure)."""
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=None if env is None else dict(env),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def clean_copy(source: Path) -> Path:
    """The tracked files of this checkout copied to ``source``, which it returns."""
    tracked = succeed("git", "ls-files", "-z", cwd=ROOT).split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_symlink():  # as a clone has it: the reference client's agui-websocket/
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(ROOT / name), source / name)
        elif (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    return source
