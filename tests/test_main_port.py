"""``agent-gateway serve`` on a port another process holds: refused in one line before any
start-up work, so the database is never created and the message is not lost among the
start-up lines."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process


def test_a_port_in_use_is_refused_before_the_database_is_opened(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        db = tmp_path / "gateway.db"
        done = subprocess.run(
            [sys.executable, "-m", "gateway", "--port", str(port), "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert f"127.0.0.1:{port} is in use by another process" in done.stderr
    assert "GATEWAY_PORT" in done.stderr
    assert "Traceback" not in done.stderr
    assert not db.exists()
