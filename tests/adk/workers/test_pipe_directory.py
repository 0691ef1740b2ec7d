"""The workers' pipe directory: a gateway that was killed cannot remove its own, so the
next one to start removes every directory whose gateway has ended (its lock is free),
and no other (``gateway.adk.workers.pipe_directory``). A killed gateway, restarted, is
``test_killed_gateway``'s; here one process plays both, since an ``flock`` taken by
another open of the same file conflicts as another process's would."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from gateway.adk.workers.pipe_directory import PipeDirectory, swept

pytestmark = pytest.mark.unit


def named(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


def killed(directory: PipeDirectory) -> None:
    """What the kernel does for a gateway that was killed: its lock goes, its files stay."""
    os.close(directory._lock)


def test_a_directory_is_private_and_appears_with_its_lock_held(tmp_path: Path):
    made = PipeDirectory.make(str(tmp_path))
    assert named(tmp_path) == [os.path.basename(made.path)]
    assert named(tmp_path)[0].startswith("gateway-workers-")
    assert stat.S_IMODE(os.stat(made.path).st_mode) == 0o700
    assert swept(str(tmp_path)) == 0 and os.path.isdir(made.path)
    made.remove()
    assert named(tmp_path) == []


def test_the_next_gateway_removes_the_directories_of_those_that_were_killed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    live = PipeDirectory.make(str(tmp_path))
    dead = [PipeDirectory.make(str(tmp_path)) for _ in range(2)]
    for directory in dead:
        Path(directory.path, "pipe").touch()
        killed(directory)
    with caplog.at_level(logging.INFO, logger="gateway.adk.workers.pipe_directory"):
        new = PipeDirectory.make(str(tmp_path))
    assert named(tmp_path) == sorted(os.path.basename(d.path) for d in (live, new))
    assert [r.getMessage() for r in caplog.records] == [
        "removed 2 workers' pipe directories left by gateways that were killed"
    ]
    live.remove()
    new.remove()


def test_what_is_not_known_to_be_a_killed_gateways_stays(tmp_path: Path):
    # Made by an older gateway (no lock file), a link to a directory, and a file.
    (tmp_path / "gateway-workers-0b88hnvg").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "lock").touch()
    (tmp_path / "gateway-workers-link").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "gateway-workers-file").touch()
    before = named(tmp_path)
    assert swept(str(tmp_path)) == 0
    assert named(tmp_path) == before
