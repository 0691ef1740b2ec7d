"""The thread index on each store: titles and previews from what is said, pages, search,
PATCH, and what a delete leaves (nothing), as ``gateway.store.thread_index`` promises."""

from __future__ import annotations

import pathlib
import sqlite3
import time

import psycopg
import pytest
from google.adk.events import Event
from google.genai import types

from gateway.context import RUN_METADATA_KEY
from gateway.store import SessionService
from gateway.store.branches import Fork, Switch
from gateway.store.thread_index import (
    BadCursor,
    ListingCursor,
    ThreadFilter,
    ThreadPatch,
    cut,
    search_terms,
    words_of,
)
from gateway.store.urls import is_postgres
from tests.support.backends import rows
from tests.support.postgres import Postgres
from tests.support.schema_v1 import drop_user_usage
from tests.support.stores import session_store

pytestmark = pytest.mark.unit

APP = "app"


def said(text: str, author: str = "user") -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        invocation_id="inv",
        author=author,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
    )


async def thread(store: SessionService, user: str, thread_id: str, *texts: str) -> None:
    """A thread of ``user`` where the user and the model take turns saying ``texts``."""
    session = await store.create_session(app_name=APP, user_id=user, session_id=thread_id)
    for turn, text in enumerate(texts):
        await store.append_event(session, said(text, "user" if turn % 2 == 0 else "agent"))


async def ids(store: SessionService, user: str = "ann", **options: object) -> list[str]:
    listing = ThreadFilter(**options)  # type: ignore[arg-type]
    return [row.thread_id for row in await store.thread_rows(APP, user, listing)]


async def test_the_first_user_message_titles_a_thread_and_the_last_words_preview_it(
    store: SessionService,
) -> None:
    long = "업무 요청 목록 화면 열어줘 " + "그리고 " * 40
    await thread(store, "ann", "t1", long, "이동했습니다", "second question")
    row = await store.thread_row(APP, "ann", "t1")
    assert row is not None
    assert row.title == cut(long, 80) and len(row.title) <= 80 and row.title.endswith("…")
    assert row.title.startswith("업무 요청 목록 화면 열어줘")
    assert row.preview == "second question"
    assert not row.pinned and not row.archived and row.metadata == "{}"
    assert row.created_at <= row.last_activity_at


async def test_a_listing_is_pinned_first_then_newest_activity_and_pages_by_cursor(
    store: SessionService,
) -> None:
    for n in range(5):
        await thread(store, "ann", f"t{n}", f"message {n}")
    await thread(store, "bob", "other", "bob's")
    await store.patch_thread(APP, "ann", "t1", ThreadPatch(pinned=True))
    assert await ids(store) == ["t1", "t4", "t3", "t2", "t0"]
    first = await store.thread_rows(APP, "ann", ThreadFilter(limit=2))
    assert [r.thread_id for r in first] == ["t1", "t4"]
    cursor = ListingCursor.decode(first[-1].cursor.encode())
    assert await ids(store, after=cursor, limit=2) == ["t3", "t2"]
    assert await ids(store, "bob") == ["other"]


async def test_archived_threads_leave_the_default_listing_and_count_in_the_quota(
    store: SessionService,
) -> None:
    await thread(store, "ann", "kept", "one")
    await thread(store, "ann", "old", "two")
    row = await store.patch_thread(APP, "ann", "old", ThreadPatch(archived=True))
    assert row is not None and row.archived
    assert await ids(store) == ["kept"]
    assert await ids(store, archived=True) == ["old"]
    assert sorted(await ids(store, archived=None)) == ["kept", "old"]
    opened = await store.open_thread(APP, "ann", "new")
    assert opened.usage.threads == 3


async def test_search_finds_words_of_titles_and_messages_korean_included(
    store: SessionService,
) -> None:
    await thread(store, "ann", "ko", "업무 요청 목록 화면 열어줘", "MNU-3120 화면으로 이동했습니다")
    await thread(store, "ann", "en", "Refund for order R-1042 please", "Done.")
    await thread(store, "bob", "bobs", "업무 요청 R-1042")

    async def found(query: str) -> list[str]:
        return await ids(store, terms=tuple(search_terms(query)))

    assert await found("업무 요청") == ["ko"]
    assert await found("이동") == ["ko"]  # a word's start: 이동했습니다
    assert await found("R-1042") == ["en"]
    assert await found("refund done") == ["en"]  # one in a title, one in a reply
    assert await found("refund 업무") == []
    await store.patch_thread(APP, "ann", "en", ThreadPatch(title="환불 건"))
    assert await found("환불") == ["en"]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"unbalanced',
        "NEAR(a b)",
        "*",
        "a OR b AND NOT c",
        "owner:x",
        "'; DROP TABLE sessions; --",
        "\x00",
        "x" * 256,
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ½ ﷽ \u202e",
        "\\",
        "-:^()[]{}",
    ],
)
async def test_a_hostile_query_finds_or_not_but_never_fails(
    store: SessionService, query: str
) -> None:
    await thread(store, "ann", "t", "a plain message about owner x")
    assert await ids(store, terms=tuple(search_terms(query))) in ([], ["t"])


async def test_a_patch_renames_for_ever_and_bounds_nothing_it_does_not_name(
    store: SessionService,
) -> None:
    await thread(store, "ann", "t", "first words")
    row = await store.patch_thread(APP, "ann", "t", ThreadPatch(title="Mine", metadata='{"a":1}'))
    assert row is not None and row.title == "Mine" and row.metadata == '{"a":1}'
    session = await store.get_session(app_name=APP, user_id="ann", session_id="t")
    assert session is not None
    await store.append_event(session, said("a later user message"))
    row = await store.thread_row(APP, "ann", "t")
    assert row is not None and row.title == "Mine"
    assert await store.patch_thread(APP, "bob", "t", ThreadPatch(title="theirs")) is None
    assert await store.patch_thread(APP, "ann", "none", ThreadPatch(pinned=True)) is None


async def test_a_deleted_thread_is_gone_from_listing_and_search(store: SessionService) -> None:
    await thread(store, "ann", "gone", "secret plans", "noted")
    await thread(store, "ann", "kept", "other words")
    await store.delete_session(app_name=APP, user_id="ann", session_id="gone")
    assert await ids(store) == ["kept"]
    assert await store.thread_row(APP, "ann", "gone") is None
    assert await ids(store, terms=tuple(search_terms("secret"))) == []
    # The id is free again: a new thread under it starts empty.
    await thread(store, "ann", "gone", "fresh start")
    row = await store.thread_row(APP, "ann", "gone")
    assert row is not None and row.title == "fresh start"
    assert await ids(store, terms=tuple(search_terms("secret"))) == []


async def forked_away(store: SessionService) -> None:
    """Ann's thread "t": "first question", then "secret plans", which an edit of that
    message forks away, out of sight (``branch_events``)."""
    session = await store.create_session(app_name=APP, user_id="ann", session_id="t")
    for run_id, text in (("r1", "first question"), ("r2", "secret plans")):
        agui = {"runId": run_id, "messageId": f"m-{run_id}"}
        said_in_run = said(text)
        said_in_run.custom_metadata = {RUN_METADATA_KEY: agui}
        await store.append_event(session, said_in_run)
    edit = Fork(APP, "ann", "t", "m-r2", "r3", "m-r2", "public", time.time(), 5, False)
    assert (await store.move_branch(edit)).changed


async def test_a_search_finds_a_thread_by_the_words_of_a_version_it_does_not_show(
    store: SessionService,
) -> None:
    """A version a fork left out of sight is still the thread's, one switch away, kept
    until the thread is deleted: its words find the thread, on both stores (docs/branches.md,
    "Search")."""
    await forked_away(store)
    assert await ids(store, terms=tuple(search_terms("secret plans"))) == ["t"]
    assert await ids(store, terms=tuple(search_terms("first question"))) == ["t"]
    assert await ids(store, "bob", terms=tuple(search_terms("secret"))) == []


async def test_a_thread_s_preview_is_the_last_words_of_the_branch_it_shows(
    store: SessionService,
) -> None:
    """A fork or a switch changes which events the thread shows, and its listing's preview
    with them: never the last words of a version out of sight (docs/threads.md)."""

    async def preview() -> str:
        row = await store.thread_row(APP, "ann", "t")
        assert row is not None
        return row.preview

    await forked_away(store)  # "secret plans" out of sight: "first question" shown
    assert await preview() == "first question"
    session = await store.get_session(app_name=APP, user_id="ann", session_id="t")
    assert session is not None
    edited = said("public")
    edited.custom_metadata = {RUN_METADATA_KEY: {"runId": "r3", "messageId": "m-r2"}}
    await store.append_event(session, edited)
    assert await preview() == "public"
    back = await store.move_branch(Switch(APP, "ann", "t", "r2", time.time()))
    assert back.changed and await preview() == "secret plans"
    await store.move_branch(Switch(APP, "ann", "t", "r3", time.time()))
    assert await preview() == "public"


async def test_a_deleted_threads_words_go_with_it_those_of_its_branches_too(
    db: str, store: SessionService
) -> None:
    """A fork keeps the version it leaves out of sight (``branch_events``) with its words
    indexed; deleting the thread forgets those words as well, not only the shown ones."""
    await forked_away(store)
    [(kept,)] = rows(db, "SELECT seq FROM branch_events")  # "secret plans", out of sight
    by_seq = "seq" if is_postgres(db) else "rowid"  # how each index names an event's row
    assert rows(db, f"SELECT COUNT(*) FROM thread_words WHERE {by_seq} = {kept}") == [(1,)]
    await store.delete_session(app_name=APP, user_id="ann", session_id="t")
    assert rows(db, "SELECT COUNT(*) FROM thread_words") == [(0,)]


@pytest.mark.parametrize("text", ["", "x", "!!!!", "eyJ4Ijox", "W1sxXSwxLCJ0Il0", "A" * 2000])
def test_a_cursor_no_listing_made_is_refused(text: str) -> None:
    with pytest.raises(BadCursor):
        ListingCursor.decode(text)


def test_a_cursor_round_trips() -> None:
    cursor = ListingCursor(True, 1733356800.123456, "t-ü")
    assert ListingCursor.decode(cursor.encode()) == cursor


async def test_a_first_title_costs_no_row_of_its_own_and_each_of_its_words_finds_it(
    db: str, store: SessionService
) -> None:
    """A thread's first title is the start of its first message, which is indexed already:
    the index holds one row an event that says something, and nothing for that title (on
    PostgreSQL a row and its GIN entries a new thread, on SQLite an FTS delete and insert).
    A rename's title is words of its own: it gets its row."""
    first = "Refund for order R-1042 please, " + "and as quickly as you can " * 4
    await thread(store, "ann", "t", first, "Done.")
    await thread(store, "ann", "other", "Something else entirely")
    row = await store.thread_row(APP, "ann", "t")
    assert row is not None and row.title.endswith("…")  # cut, maybe within a word
    for term in [*words_of(row.title).split(), row.title]:
        assert await ids(store, terms=tuple(search_terms(term))) == ["t"], term
    by_seq = "seq" if is_postgres(db) else "rowid"  # how each index names an event's row
    seqs = [seq for (seq,) in rows(db, f"SELECT {by_seq} FROM thread_words")]
    assert len(seqs) == 3 and min(seqs) > 0  # the three messages; no title's row
    await store.patch_thread(APP, "ann", "t", ThreadPatch(title="Zebra crossing"))
    assert len(rows(db, "SELECT * FROM thread_words")) == 4
    assert await ids(store, terms=tuple(search_terms("zebra"))) == ["t"]


async def test_a_file_from_before_the_index_gets_titles_previews_and_words(
    tmp_path: pathlib.Path,
) -> None:
    path = str(tmp_path / "threads.db")
    store = session_store(path)
    await store.open()
    await thread(store, "ann", "old", "업무 요청 목록 화면 열어줘", "이동했습니다")
    await store.close()
    with sqlite3.connect(path) as db:  # as schema 9 left it
        drop_user_usage(db)  # schema 12's totals
        db.execute("DROP TABLE thread_words")
        db.execute("DROP INDEX sessions_by_activity")
        for column in ("title", "title_source", "preview", "pinned", "archived", "metadata"):
            db.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
        # Branches came after the index (schema 11): schema 9 had neither.
        db.execute("ALTER TABLE sessions DROP COLUMN branch")
        db.execute("DROP TABLE branches")
        db.execute("DROP TABLE branch_events")
        db.execute("UPDATE schema_version SET version = 9")
    store = session_store(path)
    await store.open()
    try:
        row = await store.thread_row(APP, "ann", "old")
        assert row is not None
        assert (row.title, row.preview) == ("업무 요청 목록 화면 열어줘", "이동했습니다")
        assert await ids(store, terms=tuple(search_terms("이동"))) == ["old"]
    finally:
        await store.close()


@pytest.mark.process
async def test_a_postgres_database_from_before_the_index_gets_it_too(postgres: Postgres) -> None:
    url = postgres.fresh_database()
    store = session_store(url)
    await store.open()
    await thread(store, "ann", "old", "업무 요청 목록 화면 열어줘", "이동했습니다")
    await store.close()
    with psycopg.connect(url) as db:  # as schema 1 left it
        db.execute("DROP TABLE thread_words")
        db.execute("DROP INDEX sessions_by_activity")
        for column in ("title", "title_source", "preview", "pinned", "archived", "metadata"):
            db.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
        # Branches came after the index (schema 3): schema 1 had neither.
        db.execute("ALTER TABLE sessions DROP COLUMN branch")
        db.execute("DROP TABLE branch_events")
        db.execute("DROP TABLE branches")
        db.execute("UPDATE schema_version SET version = 1")
    store = session_store(url)
    await store.open()
    try:
        row = await store.thread_row(APP, "ann", "old")
        assert row is not None
        assert (row.title, row.preview) == ("업무 요청 목록 화면 열어줘", "이동했습니다")
        assert await ids(store, terms=tuple(search_terms("이동"))) == ["old"]
    finally:
        await store.close()
