"""A database lost in the middle of a run ends it with a code of its own, not INTERNAL_ERROR.

A gateway on PostgreSQL streams a long reply; the database then refuses connections and
the gateway's are cut (a restart, a failover, a network cut, as the gateway sees them). The
run ends with RUN_ERROR ``STORE_UNAVAILABLE`` and a sentence saying to send the message
again; once the database is back, the thread's next run works.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.agui import new_id, outcome, user_input
from tests.support.budgets import scaled
from tests.support.postgres import Postgres
from tests.support.servers import running_gateway

pytestmark = pytest.mark.process


async def test_a_database_lost_mid_run_ends_it_with_store_unavailable(postgres: Postgres) -> None:
    db = postgres.fresh_database()
    thread = new_id("t")
    async with (
        running_gateway(db=db, scripted_pace_ms=30.0, lease_check_seconds=0.2) as gateway,
        gateway.socket() as ws,
    ):
        await ws.send(user_input(thread, "자기소개를 길게 해 주세요"))
        while (await ws.next())["type"] != "TEXT_MESSAGE_CONTENT":
            pass
        with postgres.out_of_reach(db):
            error = (await ws.until_end(timeout=scaled(30)))[-1]
        assert error["type"] == "RUN_ERROR" and error["code"] == "STORE_UNAVAILABLE", error
        assert "database" in error["message"]
        assert "send your message again" in error["message"].lower()
        deadline = time.monotonic() + scaled(10)
        while True:
            answered = await ws.run(user_input(thread, "안녕"))
            if answered[-1]["type"] == "RUN_FINISHED" or time.monotonic() > deadline:
                break
            assert answered[-1]["code"] == "STORE_UNAVAILABLE", answered[-1]
            await asyncio.sleep(0.2)
        assert outcome(answered) == {"type": "success"}
