"""/ping tells the truth: 503 Unhealthy while the store cannot commit, Healthy once it can.

AgentCore's contract names two statuses, Healthy and HealthyBusy; while nothing a run says
could be kept, /ping must say neither, so it answers 503 with status "Unhealthy". The store
is made to fail as another program would make it (a backup, a sqlite3 shell left in a
transaction: it holds the file's write lock, and every commit waits out the busy timeout,
then fails with "database is locked"), then to recover once the lock is let go. Nobody
writes meanwhile: the writer's own probe notices the recovery. On PostgreSQL the database
is made unreachable instead, then reachable again.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from gateway.store import CommitFailedError, SessionService, StoreError, group_commit
from tests.support.agui import new_id, user_input
from tests.support.budgets import scaled
from tests.support.held_store import write_lock_held
from tests.support.postgres import Postgres
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server


async def ping(gateway: RunningGateway) -> tuple[int, dict[str, object]]:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(gateway.http + "/ping")
    return response.status_code, response.json()


async def test_ping_is_unhealthy_while_commits_fail_and_healthy_once_they_succeed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(group_commit, "PROBE_SECONDS", 0.05)
    db = str(tmp_path / "gateway.db")
    async with running_gateway(db=db) as gateway, gateway.socket() as ws:
        assert (await ws.run(user_input(new_id("t"), "안녕")))[-1]["type"] == "RUN_FINISHED"
        status, healthy = await ping(gateway)
        assert (status, healthy["status"]) == (200, "Healthy")
        assert gateway.app.hub is not None
        store: SessionService = gateway.app.hub.engine.sessions

        with write_lock_held(db):
            with pytest.raises(CommitFailedError):
                await store.create_session(app_name="gateway", user_id="demo", session_id="x")
            status, unhealthy = await ping(gateway)
            assert (status, unhealthy["status"]) == (503, "Unhealthy")
            assert isinstance(unhealthy["time_of_last_update"], int)
            assert unhealthy["time_of_last_update"] >= healthy["time_of_last_update"]  # type: ignore[operator]
            await asyncio.sleep(0.2)  # probes keep failing meanwhile: still the truth
            assert (await ping(gateway))[0] == 503
            # A run is refused with a code a client retries on, not as the unexpected.
            refused = await ws.run(user_input(new_id("t"), "안녕"))
            assert refused[-1]["type"] == "RUN_ERROR"
            assert refused[-1]["code"] == "STORE_UNAVAILABLE"

        deadline = time.monotonic() + scaled(5)
        while (await ping(gateway))[0] != 200:
            assert time.monotonic() < deadline, "/ping stayed Unhealthy after the store recovered"
            await asyncio.sleep(0.02)
        assert (await ping(gateway))[1]["status"] == "Healthy"
        assert (await ws.run(user_input(new_id("t"), "안녕")))[-1]["type"] == "RUN_FINISHED"


@pytest.mark.process
async def test_ping_is_unhealthy_while_postgresql_is_out_of_reach(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL: the database refuses connections and the store's are cut, then it is back."""
    monkeypatch.setattr(group_commit, "PROBE_SECONDS", 0.05)
    db = postgres.fresh_database()
    async with running_gateway(db=db) as gateway, gateway.socket() as ws:
        assert (await ws.run(user_input(new_id("t"), "안녕")))[-1]["type"] == "RUN_FINISHED"
        assert gateway.app.hub is not None
        store: SessionService = gateway.app.hub.engine.sessions
        with postgres.out_of_reach(db):
            with pytest.raises(StoreError):
                await store.create_session(app_name="gateway", user_id="demo", session_id="x")
            status, unhealthy = await ping(gateway)
            assert (status, unhealthy["status"]) == (503, "Unhealthy")
            refused = await ws.run(user_input(new_id("t"), "안녕"))
            assert refused[-1]["type"] == "RUN_ERROR"  # a sentence, not a stack trace
            assert refused[-1]["code"] == "STORE_UNAVAILABLE"
            assert "Traceback" not in refused[-1]["message"]
        deadline = time.monotonic() + scaled(10)
        while (await ping(gateway))[0] != 200:
            assert time.monotonic() < deadline, "/ping stayed Unhealthy after PostgreSQL came back"
            await asyncio.sleep(0.05)
        assert (await ws.run(user_input(new_id("t"), "안녕")))[-1]["type"] == "RUN_FINISHED"


@pytest.mark.process
async def test_ping_says_within_seconds_that_postgresql_is_gone_with_no_commit_in_flight(
    postgres: Postgres,
) -> None:
    """Nobody writes while the database is out of reach: the cluster's keeper, looking each
    ``lease_check_seconds``, is what notices, and a run is refused with a retryable code."""
    db = postgres.fresh_database()
    async with running_gateway(db=db, lease_check_seconds=0.2) as gateway, gateway.socket() as ws:
        assert (await ping(gateway))[0] == 200
        with postgres.out_of_reach(db):
            deadline = time.monotonic() + scaled(3)
            while (await ping(gateway))[0] != 503:
                assert time.monotonic() < deadline, "/ping stayed Healthy without PostgreSQL"
                await asyncio.sleep(0.05)
            assert (await ping(gateway))[1]["status"] == "Unhealthy"
            refused = await ws.run(user_input(new_id("t"), "안녕"))
            assert refused[-1]["type"] == "RUN_ERROR"
            assert refused[-1]["code"] == "STORE_UNAVAILABLE"
            assert "try again" in refused[-1]["message"]
        deadline = time.monotonic() + scaled(5)
        while (await ping(gateway))[0] != 200:
            assert time.monotonic() < deadline, "/ping stayed Unhealthy after PostgreSQL came back"
            await asyncio.sleep(0.05)
        assert (await ws.run(user_input(new_id("t"), "안녕")))[-1]["type"] == "RUN_FINISHED"
