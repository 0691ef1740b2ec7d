"""The statements the SQLite writer runs a flagship story, counted, by kind.

The main process is the one writer of a SQLite file, and every statement of a story's
commits is CPU of that process (docs/multicore.md, "The writer's work a story"). This
runs the flagship story (``tests/support/flagship.py``) on an in-process gateway with its
store on a SQLite file, once to warm up, then ``--stories`` times one after another, and
prints a story's statements in three parts, each by kind, the most frequent first:

- those the gateway sent: each ``execute`` of the writer's connection (an ``executemany``
  once a row), counted by the connection itself;
- the steps of the triggers they fired (``schema.USER_USAGE``): SQLite's trace callback
  calls again, with the firing statement's text, at each trigger program and each of its
  statements, so those are what the trace shows of a kind beyond what was sent of it;
- those FTS5 runs on its shadow tables for them, which the trace shows with a leading
  ``--``.

Counts, not times: the same on a busy machine as on a quiet one, so two trees' figures
compare from separate runs.

    .venv/bin/python -m scripts.bench_statements               # 10 stories
    .venv/bin/python -m scripts.bench_statements --stories 3
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import re
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from unittest import mock

from gateway.store.sqlite import connection
from gateway.store.sqlite.backend import SqliteBackend
from gateway.store.sqlite.streamed import WriterConnection
from tests.support.flagship import flagship_navigated_then_honest_reply
from tests.support.servers import running_gateway

# What names a statement's kind: its verb and table (values and conditions left out).
_KIND = re.compile(r"^(--\s*)?(\w+(?: OR \w+)?(?: INTO| FROM)?)\s+('?[\w.']+'?)?")


def kind(statement: str) -> str:
    found = _KIND.match(statement.strip())
    if found is None:
        return statement[:40]
    own, verb, table = found.groups()
    return f"{'fts5: ' if own else ''}{verb} {table or ''}".strip()


class CountingConnection(WriterConnection):
    """The writer's connection, counting the statements the gateway sends it, while
    ``sent`` is a list."""

    sent: list[str] | None = None

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if self.sent is not None:
            self.sent.append(sql)
        return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        rows = list(parameters)
        if self.sent is not None:
            self.sent += [sql] * len(rows)  # SQLite runs the statement once a row
        return super().executemany(sql, rows)


@dataclasses.dataclass
class Counted:
    """The statements of ``stories`` stories: as sent, and as SQLite's trace showed them."""

    stories: int
    sent: list[str]
    traced: list[str]

    def kinds(self) -> tuple[Counter[str], Counter[str], Counter[str]]:
        """The gateway's statements, its triggers' steps (by the kind that fired them),
        and FTS5's own, each by kind."""
        sent = Counter(kind(statement) for statement in self.sent)
        traced = Counter(kind(statement) for statement in self.traced)
        fts5 = Counter({name: n for name, n in traced.items() if name.startswith("fts5: ")})
        triggers = traced - fts5 - sent
        return sent, triggers, fts5


async def counted(stories: int) -> Counted:
    """Every statement the writer's connection was sent and ran over ``stories`` stories."""
    found = Counted(stories, [], [])
    with (
        tempfile.TemporaryDirectory(prefix="bench-statements-") as tmp,
        mock.patch.object(connection, "WriterConnection", CountingConnection),
    ):
        async with running_gateway(db=str(Path(tmp) / "threads.db")) as gateway:
            await flagship_navigated_then_honest_reply(gateway)  # warm: the catalog, ADK
            assert gateway.app.hub is not None
            sessions = gateway.app.hub.engine.sessions
            await sessions.flush()
            backend = sessions._backend
            assert isinstance(backend, SqliteBackend)

            def count(raw: sqlite3.Connection, on: bool) -> None:
                assert isinstance(raw, CountingConnection)
                raw.set_trace_callback(found.traced.append if on else None)
                raw.sent = found.sent if on else None

            await backend.db.run(lambda raw: count(raw, True))
            for _ in range(stories):
                await flagship_navigated_then_honest_reply(gateway)
            await sessions.flush()
            await backend.db.run(lambda raw: count(raw, False))
    return found


def report(found: Counted) -> str:
    stories = found.stories
    sent, triggers, fts5 = found.kinds()
    lines = [
        f"{sent.total() / stories:.1f} statements a story sent by the gateway to the writer's"
        f" connection, {triggers.total() / stories:.1f} steps of the triggers they fired,"
        f" {fts5.total() / stories:.1f} FTS5's own ({stories} flagship stories, one after"
        " another)"
    ]
    for title, kinds in (("sent", sent), ("trigger steps, by what fired them", triggers)):
        lines.append(f"{title}:")
        lines += [f"  {n / stories:6.1f}  {name}" for name, n in kinds.most_common()]
    lines.append("FTS5's own:")
    lines += [f"  {n / stories:6.1f}  {name}" for name, n in fts5.most_common()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stories", type=int, default=10, help="stories counted (10)")
    args = parser.parse_args()
    print(report(asyncio.run(counted(args.stories))))


if __name__ == "__main__":
    main()
