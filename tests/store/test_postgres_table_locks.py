"""An insert that locks a table every process's batches read (a node joining, a user
named) gives up after a short wait and is tried again after a pause, so the connection's
other work goes between tries (``leases.until_locked``); the wait is logged once, not
once a try."""

from __future__ import annotations

import logging

import pytest

from gateway.store.postgres import leases

pytestmark = pytest.mark.unit


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the leases said: an earlier test's timer firing in this process may log too
    (CI's run of integ50 caught "1 browser calls expired" here)."""
    return [r.getMessage() for r in caplog.records if r.name == leases.__name__]


async def test_an_insert_is_tried_until_it_had_its_lock_and_the_wait_is_said_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.setattr(leases, "JOIN_PAUSE_SECONDS", 0)
    outcomes = iter([False, False, False, True])
    tries = 0

    async def locked() -> bool:
        nonlocal tries
        tries += 1
        return next(outcomes)

    with caplog.at_level(logging.INFO, logger=leases.__name__):
        await leases.until_locked(locked, waiting="joining waits")
    assert tries == 4
    assert said(caplog) == ["joining waits"]


async def test_an_insert_that_had_its_lock_at_once_says_nothing(
    caplog: pytest.LogCaptureFixture,
):
    async def locked() -> bool:
        return True

    with caplog.at_level(logging.INFO, logger=leases.__name__):
        await leases.until_locked(locked, waiting="joining waits")
    assert said(caplog) == []
