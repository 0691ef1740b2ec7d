"""Which threads hold a streamed text, as the writer's connection knows: an append deletes
one only where its event is that text's message.

``streamed_texts`` keeps the text so far of the message a thread is streaming
(``gateway.store.recovery``), and the message's final event deletes it in its append's
transaction. Most appends are not that event (a flagship story appends 7 events and
streams one or two messages), yet each ran the DELETE: ~5% of the writer's statements
(session 44). One process writes a SQLite file, and every row of ``streamed_texts`` is
inserted through its writer's connection (``writes.save_streamed_text``), so that
connection knows each thread's streamed message by its id, and an append deletes only when
its event is it.

What the connection knows is read from the table whenever it is not known: at the first
append after the file is opened (a crash's leftover rows are in it), and after any
rollback (a save or a delete undone is not known to be). Deletes made elsewhere (a
branch's move, a thread's delete, a restart's forgetting) may leave an entry with no row:
that costs a DELETE that finds nothing, never a row kept.
"""

from __future__ import annotations

import sqlite3


class WriterConnection(sqlite3.Connection):
    """The store's ``sqlite3.Connection`` (its ``factory``): a plain connection, and what
    it knows of the streamed texts it wrote."""

    # The message id of each thread's streamed text, by session pk; None: not known.
    streamed: dict[int, str] | None = None


def streamed_texts(db: sqlite3.Connection) -> dict[int, str] | None:
    """The streamed message of each thread that has one, by session pk, read from the table
    if not known; None for a connection that keeps no such knowledge (delete every time)."""
    if not isinstance(db, WriterConnection):
        return None
    if db.streamed is None:
        rows = db.execute("SELECT session_pk, message_id FROM streamed_texts").fetchall()
        db.streamed = dict(rows)
    return db.streamed


def unknown(db: sqlite3.Connection) -> None:
    """What was written may have been undone (a rollback): read the table again when asked."""
    if isinstance(db, WriterConnection):
        db.streamed = None
