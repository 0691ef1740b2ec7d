"""A batch's rows go to PostgreSQL as one JSON document a statement (``json_rows``), not as
an array a column: psycopg dumps a list's elements in Python, at every execution, and
that was most of the writer's dumping on a cluster. What they hold comes back as written,
but for a NUL, which PostgreSQL's text cannot hold: it becomes U+FFFD, as in any text."""

from __future__ import annotations

import dataclasses

import psycopg
import pytest
from psycopg.types.array import BaseListDumper, ListBinaryDumper, ListDumper

from gateway.store.frames import LoggedFrame
from gateway.store.leases import Fence
from gateway.store.postgres.audit import PostgresAuditTables
from gateway.store.postgres.json_rows import document
from gateway.store.postgres.transaction import commit
from gateway.store.progress import RunProgress
from gateway.store.writes import (
    AppendFrames,
    Fenced,
    ReleaseLeases,
    TrimFrames,
    Write,
)
from tests.support.audit import record
from tests.support.counting import Call, counting
from tests.support.postgres import Postgres
from tests.support.store_writes import APP, USER, appended, created, streamed
from tests.support.stores import session_store

pytestmark = pytest.mark.process


def list_looks(monkeypatch: pytest.MonkeyPatch) -> list[list[Call]]:
    """Every look psycopg takes at a list parameter from now on: the type of its elements
    (at each execution, for each list) and its dumping, in text or in binary."""
    return [
        counting(monkeypatch, BaseListDumper, "_find_list_element"),
        counting(monkeypatch, ListDumper, "dump"),
        counting(monkeypatch, ListBinaryDumper, "dump"),
    ]


async def test_a_runs_writes_and_the_release_of_its_lease_dump_no_list(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event that makes and answers calls, frames, streamed texts and trims, fenced and
    not, and the leases let go of: no parameter of theirs is a list."""
    seen = list_looks(monkeypatch)
    with psycopg.Connection.connect(await postgres.fresh_cluster_database()) as db:
        commit(db, [created("t1"), created("t2")])
        (epoch,) = db.execute(
            "INSERT INTO gateway_leases (thread_id, holder, user_id, run_id, expires_at)"
            " VALUES ('t1', 'n', 'u', 'r', now() + interval '1 minute') RETURNING epoch"
        ).fetchone() or (0,)
        db.commit()
        fence = Fence("t1", epoch)
        calls = RunProgress((("c1", "find_screen", False), ("c2", "navigate", True)), (), True)
        answers = RunProgress((), ("c1",), None)
        batch: list[Write] = [
            Fenced(fence, dataclasses.replace(appended("t1", 0, "e1"), progress=calls)),
            Fenced(fence, AppendFrames(APP, USER, "t1", (LoggedFrame(1, b"{}", "me", None),))),
            Fenced(fence, streamed("t1", "a")),
            streamed("t2", "b"),
            AppendFrames(APP, USER, "t2", (LoggedFrame(1, b"{}", None, "you"),)),
            Fenced(fence, TrimFrames(APP, USER, "t1", max_bytes=100)),
            TrimFrames(APP, USER, "t2", max_bytes=100),
        ]
        assert commit(db, batch) == [1, 1, None, None, 1, None, None]
        answered = dataclasses.replace(appended("t1", 1, "e2"), progress=answers)
        released = ReleaseLeases("n", (("t1", None),), ('{"type":"released","thread":"x"}',))
        assert commit(db, [Fenced(fence, answered), released]) == [2, ["t1"]]
        assert sum(map(len, seen)) == 0
        open_calls = db.execute("SELECT call_id, name, long_running FROM open_calls").fetchall()
        assert open_calls == [("c2", "navigate", True)]
        logged = db.execute("SELECT seq, data, only_for, not_for FROM frames ORDER BY not_for")
        assert logged.fetchall() == [(1, b"{}", None, "you"), (1, b"{}", "me", None)]
        assert db.execute("SELECT count(*) FROM gateway_leases").fetchone() == (0,)


async def test_an_audit_batch_dumps_no_list(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres.fresh_database()
    store = session_store(url)
    await store.open()
    tables = PostgresAuditTables(url)
    await tables.open()
    seen = list_looks(monkeypatch)
    try:
        await tables.insert([record("t1", "demo").as_row(), record("t2", "demo").as_row()], [])
        assert sum(map(len, seen)) == 0
        assert [row[2] for row in await tables.tool_calls(None, None)] == ["t1", "t2"]
    finally:
        await tables.close()
        await store.close()


def test_a_nul_becomes_u_fffd_and_what_looks_like_one_stays_as_written(
    postgres: Postgres,
) -> None:
    """A NUL in a streamed text (a model's) and in a frame's instance is U+FFFD once
    stored, as a text parameter's is (``connection._Text``); a text that only reads like
    JSON's NUL, a backslash then "u0000", is stored as it was written."""
    with psycopg.Connection.connect(postgres.fresh_database()) as db:
        commit(db, [created("t1"), created("t2")])
        looks_like = "a \\u0000 b"
        frames = (LoggedFrame(1, b"\x00{}", "i\x00", None), LoggedFrame(2, b"{}", looks_like))
        batch: list[Write] = [
            streamed("t1", "x\x00y"),
            streamed("t2", looks_like),
            AppendFrames(APP, USER, "t1", frames),
        ]
        assert commit(db, batch) == [None, None, 2]
        texts = db.execute(
            "SELECT s.id, t.text FROM streamed_texts t JOIN sessions s ON s.pk = t.session_pk"
        ).fetchall()
        assert sorted(texts) == [("t1", "x\ufffdy"), ("t2", looks_like)]
        logged = db.execute("SELECT data, only_for FROM frames ORDER BY seq").fetchall()
        assert logged == [(b"\x00{}", "i\ufffd"), (b"{}", looks_like)]


def test_a_document_is_the_rows_as_json_with_each_nul_replaced() -> None:
    assert document([]) == "[]"
    assert document(["a", "b\x00"]) == '["a","b\ufffd"]'
    assert document([("a\x00", 1, None)]) == '[["a\ufffd",1,null]]'
    assert document(["\\u0000"]) == '["\\\\u0000"]'
