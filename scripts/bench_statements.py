"""The statements the SQLite writer runs a flagship story, counted, by kind.

The main process is the one writer of a SQLite file, and every statement of a story's
commits is CPU of that process (docs/multicore.md, "The writer's work a story"). This
runs the flagship story (``tests/support/flagship.py``) on an in-process gateway with its
store on a SQLite file, once to warm up, then ``--stories`` times one after another with
SQLite's trace callback on the writer's connection, and prints the statements a story:
the gateway's own, and those FTS5 runs for them (its shadow tables, which the trace shows
with a leading ``--``), then each kind, the most frequent first. Counts, not times: the same on
a busy machine as on a quiet one, so two trees' figures compare from separate runs.

    .venv/bin/python -m scripts.bench_statements               # 10 stories
    .venv/bin/python -m scripts.bench_statements --stories 3
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import sqlite3
import tempfile
from pathlib import Path

from gateway.store.sqlite.backend import SqliteBackend
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


async def counted(stories: int) -> list[str]:
    """Every statement the writer's connection ran over ``stories`` flagship stories."""
    seen: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-statements-") as tmp:
        async with running_gateway(db=str(Path(tmp) / "threads.db")) as gateway:
            await flagship_navigated_then_honest_reply(gateway)  # warm: the catalog, ADK
            assert gateway.app.hub is not None
            sessions = gateway.app.hub.engine.sessions
            await sessions.flush()
            backend = sessions._backend
            assert isinstance(backend, SqliteBackend)

            def trace(raw: sqlite3.Connection, on: bool) -> None:
                raw.set_trace_callback(seen.append if on else None)

            await backend.db.run(lambda raw: trace(raw, True))
            for _ in range(stories):
                await flagship_navigated_then_honest_reply(gateway)
            await sessions.flush()
            await backend.db.run(lambda raw: trace(raw, False))
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stories", type=int, default=10, help="stories counted (10)")
    args = parser.parse_args()
    seen = asyncio.run(counted(args.stories))
    kinds = collections.Counter(kind(statement) for statement in seen)
    own = sum(n for name, n in kinds.items() if not name.startswith("fts5: "))
    print(
        f"{len(seen) / args.stories:.1f} statements a story on the writer's connection:"
        f" {own / args.stories:.1f} the gateway's, {(len(seen) - own) / args.stories:.1f}"
        f" FTS5's own ({args.stories} flagship stories, one after another)"
    )
    for name, n in kinds.most_common():
        print(f"  {n / args.stories:6.1f}  {name}")


if __name__ == "__main__":
    main()
