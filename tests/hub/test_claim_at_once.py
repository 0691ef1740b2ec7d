"""A run on a thread the hub has in hand is claimed in the turn that starts it.

The claim of such a thread (a browser's answer, the next message) read it through the
store's reader thread: under load, that hop's two wake-ups (the thread getting a core, then
the loop taking the answer in a turn of its own) were most of what the slowest first
texts waited for in the main process (docs/first-event.md). The read now runs on the
loop, at once (``SessionService.open_thread(known=True)``), so the claim, the read, the
plan and the run's task are all made without giving the loop a turn: nothing of other
runs' work can come between the input and its run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.hub.test_input_ahead import HELLO, INTRO, Client, hub_on, said
from tests.store.test_reads_at_once import without_a_turn
from tests.support.agui import new_id
from tests.support.budgets import scaled

pytestmark = pytest.mark.unit


async def test_the_next_messages_run_is_claimed_without_a_turn_of_the_loop(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "threads.db")
    async with hub_on(db, pace_ms=0) as hub:
        thread = new_id("t")
        first = await hub.start("demo", said(thread, HELLO), Client(db, HELLO))
        await asyncio.wait_for(first.done.wait(), scaled(10))
        client = Client(db, INTRO)
        run = without_a_turn(hub.start("demo", said(thread, INTRO), client))
        assert run.task is not None and hub.threads[thread].run is run
        await asyncio.wait_for(run.done.wait(), scaled(30))
        assert client.types()[-1] == "RUN_FINISHED"
