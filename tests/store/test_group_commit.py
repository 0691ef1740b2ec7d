"""The single writer wakes a commit's callers a few a turn of the event loop, oldest first,
and goes on committing meanwhile: a commit of hundreds of runs' writes does not make one
turn of all their work that a frame just read (an input to acknowledge) waits behind."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence

import pytest

from gateway.store import group_commit
from gateway.store.group_commit import GroupCommit
from gateway.store.writes import Probe, Write

pytestmark = pytest.mark.unit


async def test_a_commit_wakes_its_callers_a_few_a_turn_and_the_writer_goes_on() -> None:
    # Each commit: how many writes, and how many of the first commit's callers were woken.
    batches: list[tuple[int, int]] = []
    woken: list[int] = []

    async def commit(writes: Sequence[Write]) -> list[object]:
        batches.append((len(writes), len(woken)))
        return [None] * len(writes)

    writer = GroupCommit(commit, lambda healthy: None)
    callers = 40
    futures = [writer.submit(Probe()) for _ in range(callers)]
    for number, future in enumerate(futures):
        future.add_done_callback(lambda _, number=number: woken.append(number))
    done_by_turn: list[int] = []
    later: asyncio.Future[object] | None = None
    while len(woken) < callers:
        await asyncio.sleep(0)
        done_by_turn.append(sum(future.done() for future in futures))
        if later is None and done_by_turn[-1]:
            later = writer.submit(Probe())  # while the first commit's callers are woken
    assert later is not None
    await later
    await writer.close()
    [(first, _), (second, seen)] = batches
    assert (first, second) == (callers, 1) and seen < callers, "the writer went on"
    a_turn = [after - before for before, after in itertools.pairwise([0, *done_by_turn])]
    assert max(a_turn) == group_commit._WOKEN_A_TURN
    assert len([count for count in a_turn if count]) == -(-callers // group_commit._WOKEN_A_TURN)
    assert woken == list(range(callers)), "oldest first"
