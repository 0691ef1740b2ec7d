"""Real ``agent-gateway`` processes on a database file, for tests that kill or race them,
and the other processes such tests start: scripts, operator commands, the warehouse
example's MCP order desk."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.support import ROOT, tiers
from tests.support.agui import AgUiSocket
from tests.support.budgets import scaled
from tests.support.ports import free_port

__all__ = [
    "GATEWAY",
    "ROOT",
    "free_port",
    "gateway_process",
    "operator_command",
    "order_desk",
    "run_over_ws",
    "script_report",
]

# The command line of `agent-gateway`, for this checkout.
GATEWAY = [sys.executable, "-m", "gateway"]


def script_report(module: str, flags: str, timeout: float = 180) -> str:
    """What ``python -m <module> <flags>`` (a script under scripts/) prints; it must succeed."""
    tiers.require("process", f"python -m {module}")
    done = subprocess.run(
        [sys.executable, "-m", module, *flags.split()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(timeout),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@contextlib.asynccontextmanager
async def gateway_process(
    db: Path | str,
    log: Path,
    *,
    pace_ms: float = 20,
    command: Sequence[str] = (*GATEWAY, "serve"),
    cwd: Path = ROOT,
    port: int | None = None,
    warm_up_runs: int = 0,
    drain_seconds: float = 2.0,
    environment: Mapping[str, str] | None = None,
) -> AsyncIterator[tuple[subprocess.Popen[bytes], int]]:
    """A real gateway process on ``db`` (a file, or a PostgreSQL URL), once /ping says 200;
    stopped if still alive on exit.

    ``command`` is how it is started (``agent-gateway serve [AGENT]``), from ``cwd``;
    ``port`` is a free one unless given (a restart takes its predecessor's); there is no
    warm-up unless ``warm_up_runs`` asks for one; SIGTERM gives runs in progress
    ``drain_seconds`` (not a deploy's 25 s: a test that ends mid-run is not kept waiting);
    ``environment`` adds variables to the test's own (``GATEWAY_WORKERS``, ...).
    """
    tiers.require("process", "an agent-gateway process")
    port = port or free_port()
    where = ["--host", "127.0.0.1", "--port", str(port), "--db", str(db)]
    where += ["--warm-up-runs", str(warm_up_runs), "--drain-seconds", str(drain_seconds)]
    with log.open("ab") as output:
        process = subprocess.Popen(
            [*command, *where, "--scripted-pace-ms", str(pace_ms)],
            cwd=cwd,
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, **environment} if environment is not None else None,
        )
    try:
        await _ready(process, port, log)
        yield process, port
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=scaled(15))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _ready(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + scaled(60)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"gateway exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(OSError):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            status = await reader.readline()
            writer.close()
            if b" 200 " in status:
                return
        await asyncio.sleep(0.2)
    pytest.fail(f"gateway did not become ready:\n{log.read_text()[-3000:]}")


async def run_over_ws(
    port: int, frame: dict[str, Any], user: str = "demo", query: str = ""
) -> list[dict[str, Any]]:
    """One frame sent on a new /ws connection, and the checked events up to its run's end."""
    async with connect(f"ws://127.0.0.1:{port}/ws?user={user}{query}", max_size=None) as ws:
        return await AgUiSocket(ws).run(frame)


def operator_command(db: Path | str, *command: str) -> subprocess.CompletedProcess[str]:
    """``agent-gateway --db DB COMMAND...`` as an operator runs it, beside any gateway."""
    tiers.require("process", "an operator command")
    return subprocess.run(
        [*GATEWAY, "--db", str(db), *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )


@contextlib.asynccontextmanager
async def order_desk(
    port: int,
    reserve_seconds: float = 0.0,
    *,
    python: Path = Path(sys.executable),
    cwd: Path = ROOT,
) -> AsyncIterator[subprocess.Popen[bytes]]:
    """The example's order desk on ``port``, run by ``python`` from ``cwd``, once it accepts
    connections; always stopped."""
    tiers.require("process", "the order desk")
    desk = ["-m", "gateway.examples.warehouse.orders", "--port", str(port)]
    process = subprocess.Popen(
        [python, *desk, "--reserve-seconds", str(reserve_seconds)],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + scaled(30)
        while True:
            assert process.poll() is None, "the order desk exited"
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                assert time.monotonic() < deadline, "the order desk did not start"
                await asyncio.sleep(0.1)
                continue
            writer.close()
            break
        yield process
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)
