"""A run's credit window: the worker waits once it is a window ahead, the main process
gives back half a window at a time."""

from __future__ import annotations

import asyncio

import pytest

from gateway.adk.workers.credit import GRANT, WINDOW, Taken, Window

pytestmark = pytest.mark.unit


async def test_a_worker_a_window_ahead_waits_for_credit() -> None:
    window = Window()
    for _ in range(WINDOW):
        await window.spend()
    waiting = asyncio.ensure_future(window.spend())
    await asyncio.sleep(0.01)
    assert not waiting.done()
    window.grant(1)
    await asyncio.wait_for(waiting, 1)
    assert window.left == 0


def test_the_main_process_gives_back_half_a_window_at_a_time() -> None:
    taken = Taken()
    given = [taken.took() for _ in range(2 * GRANT)]
    assert given == [0] * (GRANT - 1) + [GRANT] + [0] * (GRANT - 1) + [GRANT]
