"""What the SQLite session store promises beyond ADK's contract.

Durable acknowledgements, group commit, bounded history windows that still reach a call
waiting on the browser, stale copies refused, schema migrations, clear errors on a bad
file, runs cut off by a crash closed on restart, and the text of a message still streaming
kept so that a crash cannot take what a client was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path

import pydantic
import pytest
from google.adk.agents import LlmAgent
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event, EventActions
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import Session
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from gateway.store import (
    MIGRATIONS,
    SCHEMA_VERSION,
    SessionService,
    StoreError,
)
from gateway.store.cut_off import LEGACY_NOTE, NOTES, Ending
from gateway.store.recovery import Afterwards
from gateway.translate.history import event_messages, messages_snapshot
from tests.support.adk_events import agent_says, texts, user_says
from tests.support.backends import APP, record_reads, reopened, rows
from tests.support.schema_v1 import V1_SCHEMA, write_v1
from tests.support.stores import session_store

pytestmark = pytest.mark.unit

# What the model reads after a reply a crash cut off.
INTERRUPTED = NOTES[Ending.INTERRUPTED]


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "sessions.db")


@pytest.fixture
async def store(db: str) -> AsyncIterator[SessionService]:
    service = session_store(db)
    await service.open()
    yield service
    await service.close()


def agent_calls(
    call_id: str, name: str, invocation: str = "inv", *, long_running: bool = False
) -> Event:
    call = types.FunctionCall(id=call_id, name=name, args={"screenId": "MNU-3120"})
    return Event(
        invocation_id=invocation,
        author="agent",
        content=types.Content(role="model", parts=[types.Part(function_call=call)]),
        long_running_tool_ids={call_id} if long_running else None,
    )


def answer(call_id: str, name: str, invocation: str = "inv", author: str = "user") -> Event:
    response = types.FunctionResponse(id=call_id, name=name, response={"status": "navigated"})
    return Event(
        invocation_id=invocation,
        author=author,
        content=types.Content(role="user", parts=[types.Part(function_response=response)]),
    )


# --- durability and group commit --------------------------------------------------------


async def test_an_acknowledged_event_is_on_disk_and_survives_a_restart(db: str) -> None:
    store = await reopened(db)
    session = await store.create_session(
        app_name=APP, user_id="u", session_id="t1", state={"app:a": 1, "user:b": 2, "c": 3}
    )
    await store.append_event(session, user_says("hello", messageId="m1"))
    # Another connection sees it at once: the append returned only after its commit.
    assert rows(db, "SELECT count(*) FROM events") == [(1,)]
    await store.close()

    store = await reopened(db)
    try:
        loaded = await store.get_session(app_name=APP, user_id="u", session_id="t1")
        assert texts(loaded) == ["hello"]
        assert loaded is not None
        assert loaded.state == {"app:a": 1, "user:b": 2, "c": 3}
        assert loaded.events[0].custom_metadata == {"agui": {"messageId": "m1"}}
    finally:
        await store.close()


async def test_concurrent_runs_share_commits_and_lose_nothing(store: SessionService) -> None:
    sessions = [
        await store.create_session(app_name=APP, user_id=f"u{i}", session_id=f"t{i}")
        for i in range(50)
    ]
    commits_before = store.commits

    async def run(session: Session) -> None:
        for turn in range(10):
            await store.append_event(session, user_says(f"turn {turn}"))

    await asyncio.gather(*(run(s) for s in sessions))
    assert store.commits - commits_before < 500 / 5  # grouped, not one commit per event
    for session in sessions:
        loaded = await store.get_session(
            app_name=APP, user_id=session.user_id, session_id=session.id
        )
        assert texts(loaded) == [f"turn {turn}" for turn in range(10)]


async def test_a_failed_write_fails_alone_in_its_shared_commit(store: SessionService) -> None:
    good = await store.create_session(app_name=APP, user_id="u", session_id="good")
    gone = await store.create_session(app_name=APP, user_id="u", session_id="gone")
    await store.delete_session(app_name=APP, user_id="u", session_id="gone")
    results = await asyncio.gather(
        store.append_event(good, user_says("kept")),
        store.append_event(gone, user_says("lost")),
        store.create_session(app_name=APP, user_id="u", session_id="good"),
        return_exceptions=True,
    )
    assert isinstance(results[0], Event)
    assert isinstance(results[1], SessionNotFoundError)
    assert isinstance(results[2], AlreadyExistsError)
    assert texts(await store.get_session(app_name=APP, user_id="u", session_id="good")) == ["kept"]


async def test_a_cancelled_append_still_commits_and_keeps_the_session_current(
    store: SessionService,
) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    task = asyncio.create_task(store.append_event(session, user_says("first")))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await store.flush()
    await asyncio.sleep(0)
    await store.append_event(session, agent_says("second"))  # not stale
    assert texts(session) == ["first", "second"]
    assert texts(await store.get_session(app_name=APP, user_id="u", session_id="t")) == [
        "first",
        "second",
    ]


async def test_appending_through_an_outdated_copy_is_refused(store: SessionService) -> None:
    await store.create_session(app_name=APP, user_id="u", session_id="t")
    first = await store.get_session(app_name=APP, user_id="u", session_id="t")
    second = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert first is not None and second is not None
    await store.append_event(first, user_says("one run"))
    with pytest.raises(StaleSessionError):
        await store.append_event(second, user_says("another run"))
    await store.append_event(first, agent_says("the first run goes on"))
    loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert texts(loaded) == ["one run", "the first run goes on"]


async def test_durability_and_window_are_checked(db: str) -> None:
    with pytest.raises(ValueError, match="durability"):
        session_store(db, durability="sometimes")
    with pytest.raises(ValueError, match="history_window"):
        session_store(db, history_window=0)
    full = await reopened(db, durability="full")
    try:
        session = await full.create_session(app_name=APP, user_id="u")
        await full.append_event(session, user_says("safe"))
    finally:
        await full.close()
    with pytest.raises(StoreError, match="closed"):
        await full.create_session(app_name=APP, user_id="u")


# --- history windows --------------------------------------------------------------------


async def test_a_run_loads_only_the_recent_window(db: str) -> None:
    store = await reopened(db, history_window=4)
    try:
        session = await store.create_session(app_name=APP, user_id="u", session_id="t")
        for turn in range(10):
            await store.append_event(session, user_says(f"q{turn}", f"inv{turn}"))
            await store.append_event(session, agent_says(f"a{turn}", f"inv{turn}"))
        loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert texts(loaded) == ["q8", "a8", "q9", "a9"]
    finally:
        await store.close()


async def test_the_window_reaches_back_to_a_call_waiting_on_the_browser(db: str) -> None:
    store = await reopened(db, history_window=2)
    try:
        session = await store.create_session(app_name=APP, user_id="u", session_id="t")
        await store.append_event(session, user_says("old", "inv0"))
        await store.append_event(session, user_says("open MNU-3120", "inv1"))
        await store.append_event(
            session, agent_calls("c1", "navigateToScreen", "inv1", long_running=True)
        )
        for turn in range(3):  # the user kept talking while the browser had not answered
            await store.append_event(session, user_says(f"still there {turn}", f"inv{turn + 2}"))
        loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert texts(loaded) == [
            "open MNU-3120",
            "call c1",
            "still there 0",
            "still there 1",
            "still there 2",
        ]

        await store.append_event(loaded, answer("c1", "navigateToScreen", "inv1"))  # type: ignore[arg-type]
        loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert texts(loaded) == ["still there 2", "answer c1"]
    finally:
        await store.close()


async def test_a_server_call_does_not_widen_the_window(db: str) -> None:
    store = await reopened(db, history_window=1)
    try:
        session = await store.create_session(app_name=APP, user_id="u", session_id="t")
        await store.append_event(session, agent_calls("c1", "find_screen"))
        await store.append_event(session, agent_says("later"))
        loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert texts(loaded) == ["later"]
    finally:
        await store.close()


class _Echo(BaseLlm):
    """Answers every request with a fixed text, remembering what it was asked."""

    model: str = "echo"
    requests: list[LlmRequest] = pydantic.Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="ok")]))


async def _turn(runner: Runner, user: str, thread: str, text: str) -> list[Event]:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return [
        event
        async for event in runner.run_async(user_id=user, session_id=thread, new_message=message)
    ]


async def test_an_adk_runner_sees_a_bounded_history(db: str) -> None:
    store = await reopened(db, history_window=6)
    model = _Echo()
    runner = Runner(
        app_name=APP,
        agent=LlmAgent(name="agent", model=model),
        session_service=store,
        auto_create_session=True,
    )
    try:
        for turn in range(8):
            events = await _turn(runner, "u", "t", f"question {turn}")
            assert [e.content.parts[0].text for e in events if e.content and e.content.parts] == [
                "ok"
            ]
        last_request = model.requests[-1].contents
        assert len(last_request) == 7  # the window of 6 and the new message, not all 15
        assert last_request[-1].parts and last_request[-1].parts[0].text == "question 7"
        everything = await store.get_session(
            app_name=APP, user_id="u", session_id="t", config=GetSessionConfig()
        )
        assert everything is not None and len(everything.events) == 16
    finally:
        await runner.close()
        await store.close()


# --- schema versions and bad files ------------------------------------------------------


async def test_an_older_schema_is_migrated_and_its_history_understood(db_path: str) -> None:
    write_v1(
        db_path,
        {
            "waiting": [
                user_says("old"),
                user_says("open it", "inv1"),
                agent_calls("c1", "navigateToScreen", "inv1", long_running=True),
                user_says("hello?", "inv2"),
                agent_says("hi", "inv2"),
            ],
            "cut": [user_says("tell me a long story"), agent_calls("c2", "find_screen")],
            "done": [user_says("hi"), agent_says("hello")],
        },
    )
    store = await reopened(db_path, history_window=1)
    try:
        with sqlite3.connect(db_path) as db:
            assert db.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
        waiting = await store.get_session(app_name=APP, user_id="u", session_id="waiting")
        assert texts(waiting) == ["open it", "call c1", "hello?", "hi"]
        assert waiting is not None and waiting.state == {"n": 1}
        assert await store.close_interrupted(APP) == 1
        cut = await store.get_session(
            app_name=APP, user_id="u", session_id="cut", config=GetSessionConfig()
        )
        assert texts(cut) == ["tell me a long story", "call c2", "answer c2", INTERRUPTED]
    finally:
        await store.close()


def _write_old(path: str, version: int, threads: dict[str, list[Event]]) -> None:
    """A database as schema ``version`` left it."""
    write_v1(path, threads)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        for migration in MIGRATIONS[1:version]:
            migration(db, event_messages)
        db.execute("UPDATE schema_version SET version = ?", (version,))


@pytest.mark.parametrize("version", [1, 2, 3])
async def test_a_migrated_thread_shows_whole_with_the_ids_it_had(
    db_path: str, version: int
) -> None:
    events = [
        user_says("open it", "inv1", messageId="m1"),
        agent_calls("c1", "navigateToScreen", "inv1", long_running=True),
        answer("c1", "navigateToScreen", "inv1"),
        agent_says("done", "inv1"),
    ]
    _write_old(db_path, version, {"t": events})
    store = await reopened(db_path, history_window=1)
    try:
        messages, latest = await store.thread_messages(APP, "u", "t")
        assert messages == messages_snapshot(events) and len(messages) == 4
        assert messages[0]["id"] == "m1" and latest == events[-1].id
        session = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert session is not None
        later = user_says("thanks", "inv2", messageId="m2")
        await store.append_event(session, later)
        messages, latest = await store.thread_messages(APP, "u", "t")
        assert messages == messages_snapshot([*events, later]) and latest == later.id
    finally:
        await store.close()


async def test_messages_stored_before_speakers_were_named_are_recomputed(db_path: str) -> None:
    events = [user_says("hi", "inv1", messageId="m1"), agent_says("hello", "inv1")]
    _write_old(db_path, 6, {"t": events})
    with sqlite3.connect(db_path) as db:  # as version 6 wrote them: no agent name
        for seq, stored in db.execute("SELECT seq, messages FROM events").fetchall():
            old = [{k: v for k, v in m.items() if k != "name"} for m in json.loads(stored)]
            db.execute("UPDATE events SET messages = ? WHERE seq = ?", (json.dumps(old), seq))
    store = await reopened(db_path)
    try:
        messages, _ = await store.thread_messages(APP, "u", "t")
        assert messages == messages_snapshot(events) and messages[1]["name"] == "agent"
        with sqlite3.connect(db_path) as db:
            [(counted, summed)] = db.execute(
                "SELECT stored_bytes, (SELECT SUM(length(CAST(data AS BLOB))"
                " + length(CAST(messages AS BLOB))) FROM events) FROM sessions"
            ).fetchall()
        assert counted == summed
    finally:
        await store.close()


async def test_replies_cut_off_with_the_bilingual_note_show_the_mark_after_migrating(
    db_path: str,
) -> None:
    mark = {"agui": {"interrupted": True, "runId": "r1"}}
    cut = Event(
        id="e-cut",
        invocation_id="inv1",
        author="agent",
        content=types.Content(
            role="model",
            parts=[types.Part(text="안녕하세요, 저는 "), types.Part(text="\n\n" + LEGACY_NOTE)],
        ),
        custom_metadata=mark,
    )
    events = [user_says("자기소개를 길게 해 주세요", "inv1", messageId="m1"), cut]
    _write_old(db_path, 7, {"t": events})
    with sqlite3.connect(db_path) as db:  # as version 7 wrote it: the note shown as text
        shown = {"id": "e-cut", "role": "assistant", "name": "agent"}
        shown["content"] = "안녕하세요, 저는 \n\n" + LEGACY_NOTE
        db.execute("UPDATE events SET messages = ? WHERE id = 'e-cut'", (json.dumps([shown]),))
    store = await reopened(db_path)
    try:
        messages, _ = await store.thread_messages(APP, "u", "t")
        assert messages[-1] == {
            "id": "e-cut",
            "role": "assistant",
            "name": "agent",
            "content": "안녕하세요, 저는 ",
            "metadata": {"ended": "interrupted"},
        }
        assert LEGACY_NOTE not in json.dumps(messages, ensure_ascii=False)
    finally:
        await store.close()


async def test_a_newer_schema_is_refused_with_both_versions_named(db_path: str) -> None:
    with sqlite3.connect(db_path) as db:
        db.executescript(V1_SCHEMA)
        db.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(StoreError) as refused:
        await reopened(db_path)
    message = str(refused.value)
    assert db_path in message and "99" in message and str(SCHEMA_VERSION) in message


async def test_a_corrupt_file_is_an_error_and_left_untouched(db_path: str) -> None:
    garbage = bytes(range(256)) * 64
    Path(db_path).write_bytes(garbage)
    with pytest.raises(StoreError, match="not a usable session store") as refused:
        await reopened(db_path)
    assert db_path in str(refused.value)
    assert Path(db_path).read_bytes() == garbage


async def test_a_database_of_something_else_is_refused(db_path: str) -> None:
    with sqlite3.connect(db_path) as db:
        db.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(StoreError, match="not an agent-gateway store"):
        await reopened(db_path)


async def test_read_only_never_creates_or_migrates(db_path: str, tmp_path: Path) -> None:
    missing = str(tmp_path / "typo.db")
    with pytest.raises(StoreError, match="does not exist"):
        await reopened(missing, read_only=True)
    assert not Path(missing).exists()
    write_v1(db_path, {})
    with pytest.raises(StoreError, match="needs migrating"):
        await reopened(db_path, read_only=True)


async def test_an_in_memory_store_works(tmp_path: Path) -> None:
    store = await reopened(":memory:")
    try:
        session = await store.create_session(app_name=APP, user_id="u", session_id="t")
        await store.append_event(session, user_says("hi"))
        assert texts(await store.get_session(app_name=APP, user_id="u", session_id="t")) == ["hi"]
    finally:
        await store.close()


async def test_only_a_file_store_leaves_the_loop_for_its_sql(db_path: str) -> None:
    """A file may wait on the disk, so its SQL runs in aiosqlite's thread; memory never does."""
    for path, in_loop_thread in ((":memory:", True), (db_path, False)):
        store = await reopened(path)
        try:
            sql_thread = await store._read(lambda db: threading.get_ident())
            session = await store.create_session(app_name=APP, user_id="u", session_id="t")
            await store.append_event(session, user_says("hi"))
            assert (sql_thread == threading.get_ident()) is in_loop_thread, path
        finally:
            await store.close()


# --- ownership --------------------------------------------------------------------------


async def test_thread_owner_names_the_user_whoever_asks(store: SessionService) -> None:
    await store.create_session(app_name=APP, user_id="alice", session_id="t1")
    assert await store.thread_owner(APP, "t1") == "alice"
    assert await store.thread_owner(APP, "t2") is None
    assert await store.thread_owner("other-app", "t1") is None


async def test_opening_a_thread_creates_it_for_the_first_user_only(store: SessionService) -> None:
    first = await store.open_thread(APP, "alice", "t1")
    assert (first.owner, first.created) == ("alice", True)
    assert first.session is not None and first.session.events == []
    # What the run appends through the opened session is what a later open reads.
    await store.append_event(first.session, user_says("hello"))
    again = await store.open_thread(APP, "alice", "t1")
    assert (again.owner, again.created) == ("alice", False)
    assert texts(again.session) == ["hello"]
    stranger = await store.open_thread(APP, "bob", "t1")
    assert (stranger.owner, stranger.session, stranger.created) == ("alice", None, False)
    assert await store.thread_owner(APP, "t1") == "alice"


async def test_opening_a_thread_loads_the_window_as_get_session_does(db: str) -> None:
    store = await reopened(db, history_window=2)
    try:
        session = await _thread(store, "t", [user_says("a"), agent_says("b"), user_says("c")])
        opened = await store.open_thread(APP, "u", "t")
        loaded = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert texts(opened.session) == texts(loaded) == ["b", "c"]
        assert opened.session is not None
        assert opened.session.state == session.state
    finally:
        await store.close()


async def test_a_handed_over_session_is_the_next_plain_read_and_only_that(
    store: SessionService, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = await store.open_thread(APP, "u", "t")
    assert opened.session is not None
    reads = record_reads(monkeypatch, store)
    with store.handed_over(opened.session):
        windowed = await store.get_session(
            app_name=APP, user_id="u", session_id="t", config=GetSessionConfig(num_recent_events=1)
        )
        assert windowed is not opened.session and len(reads) == 1
        handed = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert handed is opened.session and len(reads) == 1
        again = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert again is not opened.session and len(reads) == 2
    with store.handed_over(opened.session):
        pass
    after = await store.get_session(app_name=APP, user_id="u", session_id="t")
    assert after is not opened.session and len(reads) == 3


# --- runs cut off by a crash ------------------------------------------------------------


async def _thread(store: SessionService, thread: str, events: list[Event]) -> Session:
    session = await store.create_session(app_name=APP, user_id="u", session_id=thread)
    for event in events:
        await store.append_event(session, event)
    return session


async def test_restart_closes_cut_off_runs_and_leaves_waiting_ones(db: str) -> None:
    store = await reopened(db)
    await _thread(
        store,
        "mid-call",
        [
            user_says("열어줘", runId="r1", messageId="m1"),
            agent_calls("c1", "find_screen"),
        ],
    )
    await _thread(store, "mid-stream", [user_says("자기소개를 길게 해 주세요", runId="r2")])
    await _thread(
        store,
        "after-result",
        [
            user_says("open"),
            agent_calls("c3", "find_screen"),
            answer("c3", "find_screen", author="agent"),
        ],
    )
    await _thread(
        store,
        "on-browser",
        [
            user_says("open"),
            agent_calls("c4", "navigateToScreen", long_running=True),
        ],
    )
    await _thread(store, "finished", [user_says("hi"), agent_says("hello")])
    confirmation = agent_calls("c6", "adk_request_confirmation", long_running=True)
    await _thread(
        store,
        "on-approval",
        [
            user_says("approve R-1"),
            agent_calls("c5", "approveWorkRequest"),
            answer("c5", "approveWorkRequest", author="agent"),  # "needs confirmation"
            confirmation,
        ],
    )
    await store.close()

    store = await reopened(db)
    try:
        assert await store.close_interrupted(APP) == 3
        # Restarted again before any was asked: only the reply the model owes is found, and
        # nothing is added to its thread (checked below).
        assert await store.close_interrupted(APP) == 1
        [owed] = store.cut_off[3:]
        assert (owed.thread_id, owed.afterwards) == ("after-result", Afterwards.ASK_AGAIN)

        async def load(thread: str) -> Session:
            session = await store.get_session(app_name=APP, user_id="u", session_id=thread)
            assert session is not None
            return session

        mid_call = await load("mid-call")
        assert texts(mid_call) == ["열어줘", "call c1", "answer c1", INTERRUPTED]
        closing = mid_call.events[-1]
        assert closing.author == "agent"
        assert closing.custom_metadata == {"agui": {"ended": "interrupted", "runId": "r1"}}
        assert mid_call.events[-2].custom_metadata == closing.custom_metadata
        response = mid_call.events[-2].get_function_responses()[0]
        assert response.name == "find_screen" and "interrupted" in str(response.response)

        mid_stream = await load("mid-stream")
        assert texts(mid_stream) == ["자기소개를 길게 해 주세요", INTERRUPTED]
        assert mid_stream.events[-1].author == "model"  # no agent had spoken in this thread
        assert texts(await load("after-result"))[-2:] == ["answer c3", INTERRUPTED]
        assert texts(await load("on-browser")) == ["open", "call c4"]
        assert texts(await load("finished")) == ["hi", "hello"]
        assert texts(await load("on-approval"))[-1] == "call c6"
    finally:
        await store.close()


async def test_the_next_turn_after_a_crash_sends_the_model_a_well_formed_history(
    db: str,
) -> None:
    store = await reopened(db)
    await _thread(
        store, "t", [user_says("열어줘", "inv1"), agent_calls("c1", "find_screen", "inv1")]
    )
    await store.close()

    contents = await _next_turn_after_restart(db, "다시 해 주세요")
    roles = [
        (
            c.role,
            [p.function_call is not None or p.function_response is not None for p in c.parts or []],
        )
        for c in contents
    ]
    call_at = next(i for i, (_, fn) in enumerate(roles) if contents[i].role == "model" and any(fn))
    assert contents[call_at + 1].parts and contents[call_at + 1].parts[0].function_response
    assert contents[call_at + 1].parts[0].function_response.id in (None, "c1")


async def _next_turn_after_restart(db: str, text: str) -> list[types.Content]:
    """Reopens the file, closes the runs cut off, takes a turn; returns what the model saw."""
    store = await reopened(db)
    model = _Echo()
    runner = Runner(app_name=APP, agent=LlmAgent(name="agent", model=model), session_service=store)
    try:
        await store.close_interrupted(APP, author="agent")
        events = await _turn(runner, "u", "t", text)
        assert events[-1].content and events[-1].content.parts
        assert events[-1].content.parts[0].text == "ok"
        return model.requests[-1].contents
    finally:
        await runner.close()
        await store.close()


async def test_state_only_events_do_not_reopen_a_finished_run(store: SessionService) -> None:
    session = await _thread(store, "t", [user_says("hi"), agent_says("hello")])
    await store.append_event(
        session,
        Event(invocation_id="inv", author="agent", actions=EventActions(state_delta={"x": 1})),
    )
    assert await store.close_interrupted(APP) == 0


# --- the thread as it was before a run -------------------------------------------------


def of_run(event: Event, run_id: str) -> Event:
    """``event`` as ADK stores it in a run of the gateway: with the run's metadata."""
    event.custom_metadata = {"agui": {"runId": run_id}}
    return event


async def test_a_thread_before_a_run_leaves_out_every_event_of_the_run(
    store: SessionService,
) -> None:
    """A client joining another process's run is shown the thread as it was before the run,
    whose events its frames bring: none of them may be in that snapshot too."""
    session = await _thread(
        store,
        "t",
        [
            of_run(user_says("one", "i1"), "r1"),
            of_run(agent_says("reply one", "i1"), "r1"),
            of_run(user_says("two", "i2"), "r2"),
        ],
    )
    # A row of the run that names no run (as the gateway's own answers may) stays out too.
    await store.append_event(session, agent_says("unmarked", "i2"))
    await store.append_event(session, of_run(agent_says("reply two", "i2"), "r2"))

    async def before_run(run_id: str) -> list[str]:
        start = await store.run_start(APP, "u", "t", run_id)
        page = await store.thread_page(APP, "u", "t", before=start)
        return [m.get("content") for m in page.messages]

    assert await before_run("r2") == ["one", "reply one"]
    # A run that has stored nothing yet: everything stored is from before it.
    assert await before_run("r3") == ["one", "reply one", "two", "unmarked", "reply two"]
    # A run resuming the latest invocation is found inside it.
    await store.append_event(session, of_run(user_says("three", "i2"), "r3"))
    assert (await before_run("r3"))[-1] == "reply two"
    assert await store.run_start(APP, "u", "nowhere", "r1") == 0


async def test_pages_by_bytes_rows_and_cursor_agree_with_the_whole_thread(
    store: SessionService,
) -> None:
    """Every way of paging a thread gives the newest part of what the whole thread shows,
    and the cursor to the part before it: on each store, whatever its SQL."""
    said = [f"message {n} " + "x" * (10 * n) for n in range(1, 9)]
    events = [user_says(text) if n % 2 else agent_says(text) for n, text in enumerate(said)]
    session = await _thread(store, "t", events)
    # A call of no messages between them is not a row of the page.
    await store.append_event(session, Event(invocation_id="inv", author="agent"))

    async def contents(**bounds: int | None) -> tuple[list[str], int | None]:
        page = await store.thread_page(APP, "u", "t", **bounds)
        return [str(m.get("content")) for m in page.messages], page.earlier

    assert await contents() == (said, None)
    for max_bytes in (1, 150, 400, 10**6):
        for limit in (None, 1, 3, 20):
            shown, earlier = await contents(max_bytes=max_bytes, limit=limit)
            assert shown and shown == said[-len(shown) :], (max_bytes, limit)
            assert len(shown) <= (limit or len(said))
            # The pages before it, by their cursors, give the rest of the thread in order.
            everything = shown
            while earlier is not None:
                older, earlier = await contents(max_bytes=max_bytes, limit=limit, before=earlier)
                assert older
                everything = older + everything
            assert everything == said, (max_bytes, limit)
    # The newest event alone passes the budget: it is shown all the same.
    assert (await contents(max_bytes=1))[0] == said[-1:]
    shown, earlier = await contents(limit=3)
    assert shown == said[-3:] and earlier is not None
    assert (await contents(max_bytes=10**6, limit=20))[1] is None


# --- the text of a message still streaming ----------------------------------------------


def streamed_rows(db: str) -> list[tuple[str, str, str]]:
    """(message id, author, text so far) of every stored streamed text, as committed."""
    stored = rows(db, "SELECT message_id, author, text FROM streamed_texts")
    return [(message_id, author, text) for message_id, author, text in stored]


def streams(
    store: SessionService, message_id: str, thread: str = "t"
) -> Callable[[str], asyncio.Future[object]]:
    """What saves the text so far of ``message_id`` in ``thread``, returning its commit."""

    def save(text: str) -> asyncio.Future[object]:
        return store.save_streamed_text(
            app_name=APP,
            user_id="u",
            session_id=thread,
            invocation_id="inv",
            message_id=message_id,
            author="agent",
            text=text,
        )

    return save


async def test_streamed_text_is_kept_until_its_message_is_stored(
    db: str, store: SessionService
) -> None:
    session = await _thread(store, "t", [user_says("자기소개를 길게 해 주세요")])
    reply = agent_says("안녕하세요, 저는 업무 도우미입니다.")
    save = streams(store, reply.id)
    await save("안녕하세요, ")
    assert streamed_rows(db) == [(reply.id, "agent", "안녕하세요, ")]
    await save("안녕하세요, 저는 ")
    assert streamed_rows(db) == [(reply.id, "agent", "안녕하세요, 저는 ")]
    await store.append_event(session, reply)
    assert streamed_rows(db) == []


async def test_saves_queued_together_cost_one_write(db: str, store: SessionService) -> None:
    await _thread(store, "t", [user_says("hi")])
    save = streams(store, "e1")
    commits = store.commits
    # Queued in one go, before the writer runs: each newer text replaces the queued one.
    saves = [save("안녕" * n) for n in range(1, 6)]
    await asyncio.gather(*saves)
    assert all(future is saves[0] for future in saves)
    assert store.commits == commits + 1
    assert streamed_rows(db) == [("e1", "agent", "안녕" * 5)]


async def test_streamed_text_needs_its_thread(store: SessionService) -> None:
    with pytest.raises(SessionNotFoundError):
        await streams(store, "e1", thread="nowhere")("text")


async def test_restart_turns_streamed_text_into_the_interrupted_message(db: str) -> None:
    store = await reopened(db)
    await _thread(store, "t", [user_says("자기소개를 길게 해 주세요", runId="r2", messageId="m2")])
    await streams(store, "e-live")("안녕하세요, 저는 ")
    # Left over from a run that ended: dropped, never shown.
    await _thread(store, "done", [user_says("hi"), agent_says("hello")])
    await streams(store, "e-old", thread="done")("hel")
    await store.close()

    store = await reopened(db)
    try:
        assert await store.close_interrupted(APP) == 1
        session = await store.get_session(app_name=APP, user_id="u", session_id="t")
        assert session is not None
        cut = session.events[-1]
        assert cut.id == "e-live" and cut.author == "agent"
        assert texts(session) == ["자기소개를 길게 해 주세요", "안녕하세요, 저는 "]
        assert cut.custom_metadata == {"agui": {"ended": "interrupted", "runId": "r2"}}
        messages, latest = await store.thread_messages(APP, "u", "t")
        assert latest == "e-live"
        assert messages[-1] == {
            "id": "e-live",
            "role": "assistant",
            "name": "agent",
            "content": "안녕하세요, 저는 ",
            "metadata": {"ended": "interrupted"},
        }
        assert texts(await store.get_session(app_name=APP, user_id="u", session_id="done")) == [
            "hi",
            "hello",
        ]
        assert streamed_rows(db) == []
        assert await store.close_interrupted(APP) == 0
    finally:
        await store.close()


async def test_the_next_turn_after_a_cut_off_stream_sees_what_was_said(db: str) -> None:
    store = await reopened(db)
    await _thread(store, "t", [user_says("자기소개를 길게 해 주세요", "inv")])
    await streams(store, "e-live")("안녕하세요, 저는 ")
    await store.close()

    said = (await _next_turn_after_restart(db, "계속해 주세요"))[-2]
    assert said.role == "model" and said.parts
    # The model reads what it said, then that it was cut off there.
    assert [part.text for part in said.parts] == ["안녕하세요, 저는 ", "\n\n" + INTERRUPTED]


async def test_a_v3_store_migrates_and_keeps_streamed_text(db_path: str) -> None:
    _write_old(db_path, 3, {"t": [user_says("hi")]})
    store = await reopened(db_path)
    try:
        with contextlib.closing(sqlite3.connect(db_path)) as db:
            assert db.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
        assert streamed_rows(db_path) == []
        await streams(store, "e1")("hel")
        assert streamed_rows(db_path) == [("e1", "agent", "hel")]
    finally:
        await store.close()
