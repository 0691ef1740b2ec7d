"""A real ``agent-gateway`` process started as many hosts start one, with a soft limit on
open files far under its connection cap: it raises the limit and lets every client in.
Where the hard limit itself is short, the cap comes down to fit, a warning says so, and
the client past it gets the 503 with a sentence instead of a connection that hangs."""

from __future__ import annotations

import asyncio
import resource
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from tests.support.budgets import scaled
from tests.support.processes import GATEWAY, gateway_process

pytestmark = pytest.mark.process

# ``python -c LIMITED soft hard -m gateway ...``: the gateway under those open-file limits.
LIMITED = (
    "import os, resource, sys;"
    "resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[2])));"
    "os.execv(sys.executable, [sys.executable, *sys.argv[3:]])"
)


def limited(soft: int, hard: int | str) -> tuple[str, ...]:
    """The gateway's command line under a soft and a hard limit (``"same"``: the hard one
    this process has)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1] if hard == "same" else hard
    return (sys.executable, "-c", LIMITED, str(soft), str(hard), *GATEWAY[1:], "serve")


async def open_sockets(port: int, count: int) -> tuple[list[ClientConnection], list[int]]:
    """``count`` /ws connections opened at once: those open, and the refusals' statuses."""
    url = f"ws://127.0.0.1:{port}/ws?user=demo"
    tries = await asyncio.gather(
        *(connect(url, open_timeout=scaled(15)) for _ in range(count)), return_exceptions=True
    )
    opened = [ws for ws in tries if isinstance(ws, ClientConnection)]
    refused = [ws.response.status_code for ws in tries if isinstance(ws, InvalidStatus)]
    failed = [ws for ws in tries if not isinstance(ws, ClientConnection | InvalidStatus)]
    assert not failed, failed[:3]  # a connection that hangs or is reset: no answer at all
    return opened, refused


async def test_a_soft_limit_under_the_cap_is_raised_and_every_client_gets_in(
    tmp_path: Path,
) -> None:
    log = tmp_path / "gateway.log"
    command = limited(256, "same")
    async with gateway_process(tmp_path / "gateway.db", log, command=command) as (_, port):
        opened, refused = await open_sockets(port, 300)
        try:
            assert (len(opened), refused) == (300, [])
        finally:
            await asyncio.gather(*(ws.close() for ws in opened))
    assert "raised the soft limit on open files from 256 to" in log.read_text()


async def test_a_short_hard_limit_lowers_the_cap_and_the_client_past_it_gets_a_503(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_MAX_RUNS", "10")
    log = tmp_path / "gateway.log"
    command = limited(256, 256)
    async with gateway_process(tmp_path / "gateway.db", log, command=command) as (_, port):
        # 256 files: 10 runs' connections and 64 others leave 182 for clients.
        opened, refused = await open_sockets(port, 200)
        try:
            assert len(opened) <= 182 and len(opened) + len(refused) == 200
            assert refused and set(refused) == {503}
        finally:
            await asyncio.gather(*(ws.close() for ws in opened))
    said = log.read_text()
    assert "GATEWAY_MAX_CONNECTIONS is lowered from 4096 to 182" in said
