"""A database file the gateway may not write is refused with the file and the cause (the
file's mode, its folder's, a read-only mount), not as damage to restore from a backup.

The gateway runs as an unprivileged user (root writes any file), so the test needs root to
drop to one, and ``setpriv``; elsewhere it is skipped."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.store.sqlite.writable import why_unwritable

pytestmark = pytest.mark.process

NOBODY = 65534


@pytest.fixture
def folder() -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the gateway as an unprivileged user")
    # Not pytest's tmp_path: its parents are closed to other users.
    made = Path(tempfile.mkdtemp(prefix="gateway-ro-"))
    made.chmod(0o755)
    try:
        yield made
    finally:
        shutil.rmtree(made)


def serve_as_nobody(db: Path) -> subprocess.CompletedProcess[str]:
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run(
        [*drop, sys.executable, "-m", "gateway", "--db", str(db), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )


def a_store(path: Path, mode: int) -> None:
    sqlite3.connect(path).execute("CREATE TABLE t (a)").connection.close()
    path.chmod(mode)


def test_a_read_only_file_is_named_with_its_cause(folder: Path) -> None:
    db = folder / "gateway.db"
    a_store(db, 0o444)
    done = serve_as_nobody(db)
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert f"{db} cannot be written: the file is read-only for this user (uid {NOBODY})" in said
    assert "restore it from a backup" not in said
    assert "Traceback" not in said


def test_a_read_only_folder_is_named_for_the_wal_files(folder: Path) -> None:
    db = folder / "gateway.db"
    a_store(db, 0o666)
    done = serve_as_nobody(db)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"its folder {folder} is read-only for this user" in said
    assert "gateway.db-wal and gateway.db-shm" in said


def test_a_writable_file_has_no_cause(tmp_path: Path) -> None:
    assert why_unwritable(str(tmp_path / "new.db")) is None
