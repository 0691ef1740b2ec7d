"""The thread index in SQLite's SQL: listing columns on ``sessions``, words in FTS5.

Each thread's title, preview, flags and metadata are columns of its ``sessions`` row.
Its words are rows of the FTS5 table ``thread_words`` (tokenizer ``unicode61``, diacritics
kept, so Hangul and every other script split on spaces and punctuation): one row per
event that says something (rowid: the event's seq) and one for a title that is not the
start of the first message's row (a rename; rowid: minus the session's pk), each naming
its session. Each row also holds its owner's token
(``owner_token``), so a search asks FTS5 for the caller's rows only. A query's terms
(``thread_index.search_terms``: word characters only) are quoted here and bound as
parameters; a thread matches when each term matches one of its rows.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
from typing import Any

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
    "ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE sessions ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'",
    "CREATE INDEX sessions_by_activity ON sessions (app_name, user_id, update_time)",
    "CREATE VIRTUAL TABLE thread_words USING fts5(owner, words, session_pk UNINDEXED,"
    " tokenize = 'unicode61 remove_diacritics 0')",
)


# Kept for the users writing lately: every stored event names its owner, and hashlib's
# setup of a hash costs more than the hash of a short name.
@functools.lru_cache(maxsize=1024)
def owner_token(app_name: str, user_id: str) -> str:
    """One FTS token naming a user of an app (letters and digits only)."""
    return "u" + hashlib.sha256(f"{app_name}\x00{user_id}".encode()).hexdigest()[:24]


def index_existing(db: sqlite3.Connection) -> None:
    """Indexes what the stored events say (the migration's part): previews, first titles, words."""
    sessions = db.execute("SELECT pk, app_name, user_id FROM sessions ORDER BY pk").fetchall()
    for pk, app_name, user_id in sessions:
        rows = db.execute(
            "SELECT seq, messages FROM events WHERE session_pk = ? AND messages IS NOT NULL"
            " ORDER BY seq",
            (pk,),
        ).fetchall()
        for seq, messages in rows:
            index_event(db, pk, owner_token(app_name, user_id), seq, indexed_text(messages))


# The listing columns an event sets in an UPDATE of its session (``thread_index.listed``).
LISTED = "preview = COALESCE(?, preview), title = COALESCE(?, title),"
LISTED += " title_source = COALESCE(?, title_source)"


def index_event(
    db: sqlite3.Connection, pk: int, owner: str, seq: int, indexed: IndexedText
) -> None:
    """What a stored event adds: its words, the preview, and the first title if none yet
    (a migration's; an append sets the columns in its own update of the session)."""
    (untitled,) = db.execute(
        "SELECT title_source IS NULL FROM sessions WHERE pk = ?", (pk,)
    ).fetchone()
    preview, title, source = listed(indexed, bool(untitled))
    db.execute(f"UPDATE sessions SET {LISTED} WHERE pk = ?", (preview, title, source, pk))
    index_words(db, pk, owner, seq, indexed, title)


def index_words(
    db: sqlite3.Connection, pk: int, owner: str, seq: int, indexed: IndexedText, title: str | None
) -> None:
    """An event's words, and those of ``title``, the first title it just gave its thread."""
    if indexed.words:
        db.execute(
            "INSERT INTO thread_words (rowid, owner, words, session_pk) VALUES (?, ?, ?, ?)",
            (seq, owner, indexed.words, pk),
        )
    if title is not None and title_words(indexed, title) is not None:
        _index_title(db, pk, owner, title)  # an FTS delete and insert


def _index_title(db: sqlite3.Connection, pk: int, owner: str, title: str) -> None:
    db.execute("DELETE FROM thread_words WHERE rowid = ?", (-pk,))
    db.execute(
        "INSERT INTO thread_words (rowid, owner, words, session_pk) VALUES (?, ?, ?, ?)",
        (-pk, owner, words_of(title), pk),
    )


def erase_index(db: sqlite3.Connection, pk: int) -> None:
    """Forgets a thread's words (before its events go: their seqs name its rows), those of
    the versions its branches keep out of sight too (``branch_events``: a move between the
    tables keeps a row's seq, and so its words)."""
    db.execute(
        "DELETE FROM thread_words WHERE rowid IN"
        " (SELECT seq FROM events WHERE session_pk = ?1"
        " UNION ALL SELECT seq FROM branch_events WHERE session_pk = ?1 UNION ALL SELECT -?1)",
        (pk,),
    )


_COLUMNS = (
    "s.id, s.title, s.create_time, s.update_time, s.preview, s.run_open,"
    " (SELECT group_concat(c.name, char(31)) FROM open_calls c"
    "  WHERE c.session_pk = s.pk AND c.long_running = 1),"
    " s.title_source, s.pinned, s.archived, s.metadata"
)
_ORDER = " ORDER BY s.pinned DESC, s.update_time DESC, s.id DESC"
# One term of a search: the threads with a row of the caller's that it matches.
_TERM = "SELECT session_pk FROM thread_words WHERE thread_words MATCH ?"


def thread_rows(
    db: sqlite3.Connection, *, app_name: str, user_id: str, listing: ThreadFilter
) -> list[ThreadRow]:
    """A page of the user's threads, in the listing's order (at most ``listing.limit``)."""
    where = ["s.app_name = ?", "s.user_id = ?"]
    params: list[Any] = [app_name, user_id]
    if listing.archived is not None:
        where.append("s.archived = ?")
        params.append(int(listing.archived))
    if (after := listing.after) is not None:
        where.append(
            "(s.pinned < ? OR (s.pinned = ? AND (s.update_time < ?"
            " OR (s.update_time = ? AND s.id < ?))))"
        )
        params += [int(after.pinned), int(after.pinned), after.activity, after.activity]
        params.append(after.thread_id)
    owner = owner_token(app_name, user_id)
    for term in listing.terms:
        where.append(f"s.pk IN ({_TERM})")
        params.append(_match(owner, term))
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM sessions s WHERE {' AND '.join(where)}{_ORDER} LIMIT ?",
        (*params, listing.limit),
    ).fetchall()
    return [ThreadRow.of(row) for row in rows]


def _match(owner: str, term: SearchTerm) -> str:
    """The FTS5 query of one term: the owner's rows whose words have the phrase, the last
    token as a prefix. Tokens are word characters only: quoting them cannot be escaped."""
    phrase = " ".join(term.tokens)
    return f'owner : "{owner}" AND words : "{phrase}" *'


def thread_row(
    db: sqlite3.Connection, *, app_name: str, user_id: str, session_id: str
) -> ThreadRow | None:
    row = db.execute(
        f"SELECT {_COLUMNS} FROM sessions s WHERE s.app_name = ? AND s.user_id = ? AND s.id = ?",
        (app_name, user_id, session_id),
    ).fetchone()
    return ThreadRow.of(row) if row is not None else None


def patch_thread(
    db: sqlite3.Connection, app_name: str, user_id: str, session_id: str, patch: ThreadPatch
) -> ThreadRow | None:
    """Applies a PATCH; the thread as it is then, or None if the user has no such thread."""
    rows = db.execute(
        f"UPDATE sessions SET {_PATCHED}"
        " WHERE app_name = ? AND user_id = ? AND id = ?"
        " AND COALESCE(title_source, '') <> COALESCE(?, '~') RETURNING pk",
        (*patch.values(), app_name, user_id, session_id, patch.spares),
    ).fetchall()  # all: a RETURNING statement is over only once read to its end
    if not rows:
        return None
    if patch.title is not None:
        _index_title(db, rows[0][0], owner_token(app_name, user_id), patch.title)
    return thread_row(db, app_name=app_name, user_id=user_id, session_id=session_id)


# What a PATCH sets: what it names, the rest as it was (``ThreadPatch.values``).
_PATCHED = (
    "title = COALESCE(?, title), title_source = COALESCE(?, title_source),"
    " archived = COALESCE(?, archived), pinned = COALESCE(?, pinned),"
    " metadata = COALESCE(?, metadata)"
)
