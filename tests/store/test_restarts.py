"""``Restarts`` closes the runs a crash cut off through the service's public verbs
(``restarts.Store``), never its internals: the open runs, of every thread or of one."""

from __future__ import annotations

import pytest
from typing_extensions import get_protocol_members

from gateway.store import SessionService
from gateway.store.restarts import Store
from tests.support.adk_events import call, event, user_says
from tests.support.backends import APP

pytestmark = pytest.mark.unit


def test_restarts_names_only_public_verbs_of_its_service() -> None:
    needed = get_protocol_members(Store)
    assert needed and not [name for name in needed if name.startswith("_")], needed
    assert all(callable(getattr(SessionService, name, None)) for name in needed)


async def test_the_open_runs_are_every_threads_or_one_threads(store: SessionService) -> None:
    for thread in ("t1", "t2"):
        session = await store.create_session(app_name=APP, user_id="u", session_id=thread)
        # Cut off while its server tool ran: the run is open, and its close owes no reply
        # (one cut off after the tool's result stays open until the model is asked again).
        for stored in (
            user_says("열어줘", runId=f"run-{thread}"),
            event("agent", call("c1", "find_screen", query="업무 요청")),
        ):
            await store.append_event(session, stored)
    assert sorted(run.session_id for run in await store.open_runs(APP)) == ["t1", "t2"]
    assert [run.session_id for run in await store.open_runs(APP, "t2")] == ["t2"]
    await store.forget_leftover_texts(APP, "t2")  # fenced as the thread's writes, none here
    assert await store.close_interrupted_thread(APP, "t2") is None  # nothing to go on with
    assert [run.session_id for run in await store.open_runs(APP)] == ["t1"]
