"""A new thread's opening is queued to the store's writer as its input is admitted, before
the input's RUN_STARTED is written, so the writer opens it while the RUN_STARTED goes out
and the claim's task wakes (``Admission._open_early``, ``Hub.claim``).

Counted, not timed: which writes the writer was handed when the RUN_STARTED went out, and
how many openings a run cost. The real hub, ADK runner and store on a SQLite file; a claim
refused before it took the opening leaves no thread behind, and one that waited for a slot
meanwhile reads the thread again, still knowing it made it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway import wire as p
from gateway.examples.navigator.scripted import ScriptedLlm
from gateway.hub.hub import Hub
from gateway.hub.limits import Quota
from gateway.store import writes
from tests.support.agui import new_id, user_input
from tests.support.budgets import eventually, scaled
from tests.support.held_store import navigator_hub
from tests.support.subscribers import Recorder

pytestmark = pytest.mark.unit

USER = "demo"


@contextmanager
def writes_handed(hub: Hub) -> Iterator[list[str]]:
    """The kinds of the writes handed to the store's writer, in order, while the block runs."""
    writer = hub.engine.sessions._writes.writer  # type: ignore[attr-defined]
    submit = writer.submit
    handed: list[str] = []

    def counted(write: writes.Write, *args: Any, **kwargs: Any) -> asyncio.Future[object]:
        handed.append(type(write).__name__)
        return submit(write, *args, **kwargs)

    writer.submit = counted
    try:
        yield handed
    finally:
        del writer.submit


def said(thread: str, text: str = "안녕") -> p.RunAgentInput:
    return p.decode_input(json.dumps(user_input(thread, text)))


async def test_a_new_threads_opening_is_queued_before_its_run_started_goes_out(
    tmp_path: Path,
) -> None:
    async with navigator_hub(str(tmp_path / "threads.db"), ScriptedLlm(pace_ms=0)) as hub:
        client = Recorder()
        handed_at_start: list[str] = []
        with writes_handed(hub) as handed:

            def acknowledge(event: p.Event) -> None:
                if isinstance(event, p.RunStarted):
                    handed_at_start.extend(handed)
                client.deliver(event)

            run = await hub.start(USER, said(new_id("t")), client, acknowledge=acknowledge)
            await asyncio.wait_for(run.done.wait(), scaled(10))
        assert handed_at_start == ["OpenThread"]
        # The claim took that opening: the run opened its thread once.
        assert handed.count("OpenThread") == 1
        assert isinstance(client.events[-1], p.RunFinished)


async def test_a_claim_refused_before_it_took_the_opening_leaves_no_thread(
    tmp_path: Path,
) -> None:
    async with navigator_hub(str(tmp_path / "threads.db"), ScriptedLlm(pace_ms=0)) as hub:
        thread, client = new_id("t"), Recorder()
        run_input = said(thread)
        admitted = hub.admission.admit(USER, run_input, client, client.deliver)
        assert admitted.opening is not None
        hub.drain()  # between the input's admission and its claim
        with pytest.raises(p.GatewayError) as refused:
            await hub.start(USER, run_input, client, acknowledge=client.deliver, admitted=admitted)
        assert refused.value.code is p.ErrorCode.SERVICE_UNAVAILABLE
        assert await hub.engine.thread_owner(thread) is None


async def test_an_opening_queued_before_a_wait_for_a_slot_is_read_again(tmp_path: Path) -> None:
    """The thread is read again after the wait; made by the early opening, it is still the
    user's new thread: over the quota of threads, refused and forgotten."""
    async with navigator_hub(str(tmp_path / "threads.db"), ScriptedLlm(pace_ms=0)) as hub:
        first = await hub.start(USER, said(new_id("t")), Recorder())
        await asyncio.wait_for(first.done.wait(), scaled(10))
        hub.quota = Quota(threads=1)
        hub.slots.limit, hub.slots.wait_seconds = 1, scaled(10)
        thread, client = new_id("t"), Recorder()
        run_input = said(thread)
        with writes_handed(hub) as handed:
            admitted = hub.admission.admit(USER, run_input, client, client.deliver)
            assert admitted.opening is not None
            await hub.slots.take()  # another run takes the last slot before the claim
            starting = asyncio.ensure_future(
                hub.start(USER, run_input, client, acknowledge=client.deliver, admitted=admitted)
            )
            await eventually(lambda: hub.slots._waiting, 5, what="the claim waits for a slot")
            hub.slots.give_back()
            with pytest.raises(p.GatewayError) as refused:
                await asyncio.wait_for(starting, scaled(10))
        assert refused.value.code is p.ErrorCode.SERVICE_QUOTA_EXCEEDED
        assert handed.count("OpenThread") == 2  # the early opening, then the read again
        assert await hub.engine.thread_owner(thread) is None


async def test_a_thread_in_hand_is_not_opened_early(tmp_path: Path) -> None:
    """A thread the hub has had in hand is read beside the writer by its claim, as before."""
    async with navigator_hub(str(tmp_path / "threads.db"), ScriptedLlm(pace_ms=0)) as hub:
        thread = new_id("t")
        first = await hub.start(USER, said(thread), Recorder())
        await asyncio.wait_for(first.done.wait(), scaled(10))
        client, run_input = Recorder(), said(thread, "고마워")
        with writes_handed(hub) as handed:
            admitted = hub.admission.admit(USER, run_input, client, client.deliver)
            assert admitted.opening is None
            run = await hub.start(
                USER, run_input, client, acknowledge=client.deliver, admitted=admitted
            )
            await asyncio.wait_for(run.done.wait(), scaled(10))
        assert "OpenThread" not in handed
