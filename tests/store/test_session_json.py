"""A session handed to a worker is ADK's JSON built from the texts its events were read from,
not from a dump of each (``gateway.store.session_json``), and the worker parses the same
session either way."""

from __future__ import annotations

import contextlib
import gc
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from google.adk.sessions import Session

from gateway.store import SessionService, session_json
from gateway.store.adk_json import parse_session
from tests.support.adk_events import agent_says, kinds_of_events
from tests.support.backends import APP
from tests.support.held_store import file_store

pytestmark = pytest.mark.unit


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SessionService]:
    async with file_store(str(tmp_path / "threads.db")) as service:
        service.keeps_texts = True  # as a worker pool makes it
        yield service


def as_adk_dumps(session: Session) -> bytes:
    return session.model_dump_json(exclude_none=True, by_alias=True).encode()


def reformatted(path: str) -> list[str]:
    """Rewrites every stored event as other JSON of the same value (indented), as no dump
    of it would be; the texts now stored."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        stored = db.execute("SELECT seq, data FROM events ORDER BY seq").fetchall()
        for seq, data in stored:
            text = json.dumps(json.loads(data), indent=1, ensure_ascii=False)
            db.execute("UPDATE events SET data = ? WHERE seq = ?", (text, seq))
        return [data for (data,) in db.execute("SELECT data FROM events ORDER BY seq")]


async def stored_thread(store: SessionService, thread: str = "t") -> Session:
    session = await store.create_session(
        app_name=APP, user_id="u", session_id=thread, state={"screen": "MNU-1000"}
    )
    for event in kinds_of_events():
        await store.append_event(session, event)
    return session


async def loaded(store: SessionService) -> Session:
    session = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert session is not None
    return session


async def test_a_session_read_from_its_rows_carries_their_texts(store: SessionService) -> None:
    await stored_thread(store)
    texts = reformatted(store.path)
    session = await loaded(store)
    handed = session_json.session_json(session)
    assert f'"events":[{",".join(texts)}]'.encode() in handed  # not one event dumped
    assert parse_session(handed) == parse_session(as_adk_dumps(session))


async def test_an_event_appended_since_the_read_is_dumped(store: SessionService) -> None:
    await stored_thread(store)
    texts = reformatted(store.path)
    session = await loaded(store)
    reply = agent_says("이동했습니다")
    await store.append_event(session, reply)
    handed = session_json.session_json(session)
    later = reply.model_dump_json(exclude_none=True, by_alias=True)
    assert f'"events":[{",".join([*texts, later])}]'.encode() in handed
    assert parse_session(handed) == parse_session(as_adk_dumps(session))


async def test_a_session_whose_events_changed_is_dumped_whole(store: SessionService) -> None:
    await stored_thread(store)
    reformatted(store.path)
    session = await loaded(store)
    session.events.reverse()  # not the objects in the order they were read
    assert session_json.session_json(session) == as_adk_dumps(session)
    session.events.clear()
    assert session_json.session_json(session) == as_adk_dumps(session)


async def test_a_session_not_read_from_rows_is_dumped(store: SessionService) -> None:
    session = await stored_thread(store)  # made here, its events appended here
    assert session_json.session_json(session) == as_adk_dumps(session)


async def test_the_texts_go_with_their_session(store: SessionService) -> None:
    await stored_thread(store)
    gc.collect()  # an earlier test's sessions, still garbage, would go at our collect below
    kept = len(session_json._kept)
    session = await loaded(store)
    key = id(session)
    assert key in session_json._kept
    assert len(session_json._kept) == kept + 1
    del session
    gc.collect()
    assert key not in session_json._kept
    assert len(session_json._kept) == kept


async def test_a_store_no_worker_pool_asked_keeps_no_texts(store: SessionService) -> None:
    store.keeps_texts = False
    await stored_thread(store)
    reformatted(store.path)
    kept = len(session_json._kept)
    session = await loaded(store)
    assert len(session_json._kept) == kept
    assert session_json.session_json(session) == as_adk_dumps(session)


async def test_a_session_after_the_events_its_worker_kept_holds_only_the_later_ones(
    store: SessionService,
) -> None:
    """``after``: the events a worker kept are left out (``gateway.adk.workers.kept``); the
    head is the session's as it is, and the rest the same texts, or dumps."""
    await stored_thread(store)
    texts = reformatted(store.path)
    session = await loaded(store)
    reply = agent_says("이동했습니다")
    await store.append_event(session, reply)
    later = reply.model_dump_json(exclude_none=True, by_alias=True)
    whole = parse_session(as_adk_dumps(session))
    for after in (1, len(texts), len(texts) + 1):
        handed = session_json.session_json(session, after)
        assert f'"events":[{",".join([*texts, later][after:])}]'.encode() in handed
        part = parse_session(handed)
        assert part.events == whole.events[after:]
        assert part.model_copy(update={"events": whole.events}) == whole
    # Not read from rows: the later events are dumped.
    made = await stored_thread(store, "t-2")
    handed = parse_session(session_json.session_json(made, 2))
    assert handed.events == parse_session(as_adk_dumps(made)).events[2:]
