"""Branches across two gateways of one cluster (docs/branches.md): which branch a thread
shows is kept with the thread, so a switch sent to one process is what a tab on the
other is shown live, what a reload there shows, and where a regenerate there forks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.agui import new_id, snapshot_of, text_of, user_input
from tests.support.postgres import Postgres
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.process


@pytest.fixture
async def pair(postgres: Postgres) -> AsyncIterator[tuple[RunningGateway, RunningGateway]]:
    """Two gateways on one fresh PostgreSQL database: one cluster."""
    url = postgres.fresh_database()
    async with (
        running_gateway(db=url, lease_check_seconds=0.2) as a,
        running_gateway(db=url, lease_check_seconds=0.2) as b,
    ):
        yield a, b


def _branch(frame: dict[str, Any], **branch: str) -> dict[str, Any]:
    return {**frame, "forwardedProps": {"branch": branch}}


def _active(events: list[dict[str, Any]]) -> list[str]:
    [listing] = [e["value"] for e in events if e.get("name") == "gateway.branches"]
    return [b["runId"] for f in listing["forks"] for b in f["branches"] if b["active"]]


async def test_a_switch_on_one_process_is_what_the_other_shows(
    pair: tuple[RunningGateway, RunningGateway],
) -> None:
    a, b = pair
    thread = new_id("t")
    async with a.socket() as on_a, a.socket() as tab_on_a, b.socket() as on_b:
        first = user_input(thread, "hello", message_id="m1")
        said = await on_a.run(first)
        again = _branch(user_input(thread, "hello", message_id="m1"), before="m1")
        await on_a.run(again)
        await tab_on_a.run({"type": "reattach", "threadId": thread})

        # Switched on B; the tab on A follows the thread and is shown the switch live.
        switch = _branch(user_input(thread, "") | {"messages": []}, switchTo=first["runId"])
        switched = await on_b.run(switch)
        assert _active(switched) == [first["runId"]]
        seen = await tab_on_a.until_end()
        assert seen[0]["runId"] == switch["runId"] and _active(seen) == [first["runId"]]
        assert snapshot_of(seen) == snapshot_of(switched)
        # So is the connection on A that ran the thread's runs: it follows the thread too.
        assert (await on_a.until_end())[0]["runId"] == switch["runId"]

        # A reload on A shows the branch B switched to; a regenerate on A forks from there.
        reloaded = await on_a.run({"type": "reattach", "threadId": thread})
        assert _active(reloaded) == [first["runId"]]
        assert text_of(said) in str(snapshot_of(reloaded))
        third = _branch(user_input(thread, "hello", message_id="m1"), before="m1")
        forked = await on_a.run(third)
        assert _active(forked) == [third["runId"]]
        [listing] = [e["value"] for e in forked if e.get("name") == "gateway.branches"]
        assert [br["runId"] for br in listing["forks"][0]["branches"]] == [
            first["runId"],
            again["runId"],
            third["runId"],
        ]
