"""A closing connection is taken out of the threads it watched, joined or executed, and of
no other: ``Hub.leave`` finds them in the hub's ``Subscriptions``, never by a walk over
every thread in hand, which at a thousand connections closing at once (a balancer's reset,
a drain) held the loop once for each."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import NoReturn

import pytest

from gateway import wire as p
from gateway.examples.navigator.scripted import ScriptedLlm
from gateway.hub.threads import Thread
from tests.support.agui import new_id, user_input
from tests.support.flagship import FLAGSHIP
from tests.support.held_store import navigator_hub
from tests.support.subscribers import Recorder

pytestmark = pytest.mark.unit

INTRO = "자기소개를 길게 해 주세요"  # the scripted model answers in 94 chunks


class Unwalkable(dict[str, Thread]):
    """The hub's threads, which a lookup by id may read and a walk may not."""

    def _walked(self, *args: object) -> NoReturn:
        raise AssertionError("leave walked every thread in hand")

    values = items = keys = __iter__ = _walked  # type: ignore[assignment]


def said(thread: str, text: str) -> p.RunAgentInput:
    return p.decode_input(json.dumps(user_input(thread, text)))


async def test_leave_takes_a_connection_out_of_its_threads_alone(tmp_path: Path) -> None:
    async with navigator_hub(str(tmp_path / "threads.db"), ScriptedLlm(pace_ms=20)) as hub:
        leaving, staying = Recorder(), Recorder()
        # Idle threads the leaving connection watches (its runs paused on the browser),
        # and many others in hand that only the staying one watches.
        mine = [new_id("t") for _ in range(3)]
        for thread in mine:
            run = await hub.start("demo", said(thread, FLAGSHIP), leaving)
            await asyncio.wait_for(run.done.wait(), 30)
        others = [new_id("t") for _ in range(20)]
        for thread in others:
            run = await hub.start("demo", said(thread, FLAGSHIP), staying)
            await asyncio.wait_for(run.done.wait(), 30)
        # A long reply under way that the leaving one executes, one it joined.
        executed = await hub.start("demo", said(new_id("t"), INTRO), leaving)
        joined = await hub.start("demo", said(new_id("t"), INTRO), staying)
        assert await hub.reattach("demo", joined.thread.thread_id, leaving) is joined

        hub.threads = Unwalkable(hub.threads)
        try:
            hub.leave(leaving)
        finally:
            for run in (executed, joined):
                run.abort.set()
                await asyncio.wait_for(run.done.wait(), 30)

        in_hand = [hub.threads.get(t) for t in mine]
        assert all(thread is None or leaving not in thread.watchers for thread in in_hand)
        assert [hub.threads[t].watchers for t in others] == [[staying]] * len(others)
        assert executed.executor is None and leaving not in executed.thread.watchers
        assert leaving not in joined.joining and leaving not in joined.thread.watchers
        assert joined.executor is staying and joined.thread.watchers == [staying]
        assert hub.subscriptions.pop(leaving) == set(), "named until it left, not after"
