"""The thread index in PostgreSQL's SQL: listing columns on ``sessions``, words as ``tsvector``.

The same index as ``sqlite.thread_index``: title, preview, flags and metadata are columns of
the thread's ``sessions`` row; its words are rows of ``thread_words`` (one per event that
says something, keyed by its seq, and one for a title that is not the start of its first
message, seq 0: ``thread_index.title_words``), each a ``tsvector`` of the
``simple`` configuration (no stemming, no stop words: every script alike), under a GIN
index. A query's terms (``thread_index.search_terms``: word characters only) become one
``tsquery`` each, a phrase whose last token is a prefix, given to ``to_tsquery`` as a bound
parameter; a thread matches when each term matches one of its rows. Rows go with their
session (``ON DELETE CASCADE``).
"""

from __future__ import annotations

from typing import Any

import psycopg

from gateway.store.postgres.snapshot import one_statement
from gateway.store.thread_index import (
    IndexedText,
    SearchTerm,
    ThreadFilter,
    ThreadPatch,
    ThreadRow,
    indexed_text,
    listed,
    title_words,
    words_of,
)

MIGRATION = (
    "ALTER TABLE sessions ADD COLUMN title TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE sessions ADD COLUMN title_source TEXT",
    "ALTER TABLE sessions ADD COLUMN preview TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE sessions ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT FALSE",
    "ALTER TABLE sessions ADD COLUMN archived BOOLEAN NOT NULL DEFAULT FALSE",
    "ALTER TABLE sessions ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'",
    "CREATE INDEX sessions_by_activity ON sessions (app_name, user_id, update_time)",
    "CREATE TABLE thread_words (session_pk BIGINT NOT NULL REFERENCES sessions"
    " ON DELETE CASCADE, seq BIGINT NOT NULL, words TSVECTOR NOT NULL,"
    " PRIMARY KEY (session_pk, seq))",
    "CREATE INDEX thread_words_search ON thread_words USING GIN (words)",
)

# The seq of a thread's title row: events are numbered from 1.
TITLE_SEQ = 0


def index_existing(db: psycopg.Connection) -> None:
    """Indexes what the stored events say (the migration's part): previews, first titles, words."""
    sessions = db.execute("SELECT pk FROM sessions ORDER BY pk").fetchall()
    for (pk,) in sessions:
        rows = db.execute(
            "SELECT seq, messages FROM events WHERE session_pk = %s AND messages IS NOT NULL"
            " ORDER BY seq",
            (pk,),
        ).fetchall()
        for seq, messages in rows:
            index_event(db, pk, seq, indexed_text(messages))


def index_event(db: psycopg.Connection, pk: int, seq: int, indexed: IndexedText) -> None:
    """What a stored event adds: its words, the preview, and the first title if none yet.
    (An append adds the same in its own statement, ``writes.append_event``.)"""
    if indexed.words:
        db.execute(
            "INSERT INTO thread_words (session_pk, seq, words)"
            " VALUES (%s, %s, to_tsvector('simple', %s))",
            (pk, seq, indexed.words),
        )
    [(untitled,)] = db.execute(
        "SELECT title_source IS NULL FROM sessions WHERE pk = %s", (pk,)
    ).fetchall()
    preview, title, source = listed(indexed, untitled)
    db.execute(
        "UPDATE sessions SET preview = COALESCE(%s, preview), title = COALESCE(%s, title),"
        " title_source = COALESCE(%s, title_source) WHERE pk = %s",
        (preview, title, source, pk),
    )
    if title is not None and title_words(indexed, title) is not None:
        _index_title(db, pk, title)


def _index_title(db: psycopg.Connection, pk: int, title: str) -> None:
    db.execute(
        "INSERT INTO thread_words (session_pk, seq, words)"
        " VALUES (%s, %s, to_tsvector('simple', %s))"
        " ON CONFLICT (session_pk, seq) DO UPDATE SET words = excluded.words",
        (pk, TITLE_SEQ, words_of(title)),
    )


_COLUMNS = (
    "s.id, s.title, s.create_time, s.update_time, s.preview, s.run_open,"
    " (SELECT string_agg(c.name, chr(31)) FROM open_calls c"
    "  WHERE c.session_pk = s.pk AND c.long_running),"
    " s.title_source, s.pinned, s.archived, s.metadata"
)
_ORDER = " ORDER BY s.pinned DESC, s.update_time DESC, s.id DESC"
# One term of a search: the threads with a row it matches.
_TERM = "SELECT session_pk FROM thread_words WHERE words @@ to_tsquery('simple', %s)"


@one_statement
def thread_rows(
    db: psycopg.Connection, *, app_name: str, user_id: str, listing: ThreadFilter
) -> list[ThreadRow]:
    """A page of the user's threads, in the listing's order (at most ``listing.limit``)."""
    where = ["s.app_name = %s", "s.user_id = %s"]
    params: list[Any] = [app_name, user_id]
    if listing.archived is not None:
        where.append("s.archived = %s")
        params.append(listing.archived)
    if (after := listing.after) is not None:
        where.append(
            "(s.pinned < %s OR (s.pinned = %s AND (s.update_time < %s"
            " OR (s.update_time = %s AND s.id < %s))))"
        )
        params += [after.pinned, after.pinned, after.activity, after.activity, after.thread_id]
    for term in listing.terms:
        where.append(f"s.pk IN ({_TERM})")
        params.append(_tsquery(term))
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM sessions s WHERE {' AND '.join(where)}{_ORDER} LIMIT %s",
        (*params, listing.limit),
    ).fetchall()
    return [ThreadRow.of(row) for row in rows]


def _tsquery(term: SearchTerm) -> str:
    """The tsquery text of one term: its tokens in a row, the last a prefix. Tokens are word
    characters only, quoted as lexemes: nothing in them is tsquery syntax."""
    lexemes = [f"'{token}'" for token in term.tokens]
    return " <-> ".join(lexemes) + ":*"


@one_statement
def thread_row(
    db: psycopg.Connection, *, app_name: str, user_id: str, session_id: str
) -> ThreadRow | None:
    row = db.execute(
        f"SELECT {_COLUMNS} FROM sessions s WHERE s.app_name = %s AND s.user_id = %s AND s.id = %s",
        (app_name, user_id, session_id),
    ).fetchone()
    return ThreadRow.of(row) if row is not None else None


def patch_thread(
    db: psycopg.Connection, app_name: str, user_id: str, session_id: str, patch: ThreadPatch
) -> ThreadRow | None:
    """Applies a PATCH; the thread as it is then, or None if the user has no such thread."""
    rows = db.execute(
        f"UPDATE sessions SET {_PATCHED}"
        " WHERE app_name = %s AND user_id = %s AND id = %s"
        " AND COALESCE(title_source, '') <> COALESCE(%s::text, '~') RETURNING pk",
        (*patch.values(), app_name, user_id, session_id, patch.spares),
    ).fetchall()  # all: a RETURNING statement is over only once read to its end
    if not rows:
        return None
    if patch.title is not None:
        _index_title(db, rows[0][0], patch.title)
    return thread_row(db, app_name=app_name, user_id=user_id, session_id=session_id)


# What a PATCH sets: what it names, the rest as it was (``ThreadPatch.values``).
_PATCHED = (
    "title = COALESCE(%s::text, title), title_source = COALESCE(%s::text, title_source),"
    " archived = COALESCE(%s::boolean, archived), pinned = COALESCE(%s::boolean, pinned),"
    " metadata = COALESCE(%s::text, metadata)"
)
