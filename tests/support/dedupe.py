"""What tests of an input sent twice share (``gateway.hub.dedupe``): the notice a copy's
sender is told, the thread as a new tab shows it once idle, and one run of the input."""

from __future__ import annotations

from typing import Any

from tests.support.agui import outcome, snapshot_of
from tests.support.budgets import eventually
from tests.support.servers import RunningGateway


def told_deduped(events: list[dict[str, Any]], run_id: str) -> None:
    """``events`` are the run that tells a copy's sender it was not run again."""
    [notice] = [e for e in events if e["type"] == "CUSTOM"]
    assert notice["value"]["code"] == "RUN_DEDUPED" and notice["value"]["runId"] == run_id
    assert outcome(events) == {"type": "success"}


async def stored(gateway: RunningGateway, thread: str) -> list[dict[str, Any]]:
    """The thread's messages as a new tab's reattach shows them, once it is idle."""
    hub = gateway.app.hub
    assert hub is not None

    def idle() -> bool:
        known = hub.threads.get(thread)
        return known is None or (known.run is None and not hub.admission.admitted.get(thread))

    await eventually(idle, 10, what="the thread is idle")
    async with gateway.socket() as tab:
        return snapshot_of(await tab.run({"type": "reattach", "threadId": thread}))


def ran_once(messages: list[dict[str, Any]], asked: dict[str, Any]) -> None:
    """The thread holds the input's message once, and one reply to it."""
    [message] = asked["messages"]
    assert [m["id"] for m in messages if m["role"] == "user"] == [message["id"]], messages
    assert len([m for m in messages if m["role"] == "assistant" and m.get("content")]) == 1
