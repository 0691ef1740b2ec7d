"""The gateways ``scripts/load.py`` starts for a round (``served``): where they keep their
threads and how many processes and workers they run (``Setup``, ``--db``, ``--workers``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path

from gateway.config import AUTO_WORKERS, Settings
from scripts._bench import ROOT, LocalGateway, local_gateway
from scripts._load_stories import user_name
from scripts._load_users import write_users

# The gateway runs with its defaults: this many runs at once, this many frames a second a user.
GATEWAY = Settings()


@dataclasses.dataclass(frozen=True)
class Setup:
    """Where a round's gateways keep their threads (``file``, ``memory``, ``postgres``), and
    how many processes share a PostgreSQL database (``postgres-x2``)."""

    store: str
    processes: int = 1
    workers: int = 0  # GATEWAY_WORKERS of each process (docs/multicore.md; -1: auto)

    @classmethod
    def parse(cls, text: str) -> Setup:
        store, _, count = text.partition("-x")
        if store not in ("file", "memory", "postgres") or (count and store != "postgres"):
            raise argparse.ArgumentTypeError(f"{text!r}: file, memory, postgres or postgres-xN")
        if count and not (count.isdigit() and int(count) >= 1):
            raise argparse.ArgumentTypeError(f"{text!r}: postgres-xN takes a count of processes")
        return cls(store, int(count or 1))

    def __str__(self) -> str:
        name = self.store if self.store != "postgres" else f"postgres x{self.processes}"
        return f"{name} w{spelled_workers(self.workers)}" if self.workers else name


def workers_given(text: str) -> int:
    """A ``--workers`` value: N ≥ 2, or auto (``AUTO_WORKERS``)."""
    if text == "auto":
        return AUTO_WORKERS
    if not text.isdigit() or int(text) < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: a count of workers (2 or more) or auto")
    return int(text)


def spelled_workers(workers: int) -> str:
    return "auto" if workers == AUTO_WORKERS else str(workers)


@contextlib.contextmanager
def served(
    args: argparse.Namespace,
    setup: Setup,
    database: str | None,
    marks: Path | None = None,
    logs: Path | None = None,
    root: Path = ROOT,
) -> Iterator[list[LocalGateway]]:
    """Fresh gateways whose demo lists the load users, on a SQLite file, in memory, or all
    on one fresh PostgreSQL database; with ``marks``, each marks its runs' steps there
    (``GATEWAY_TIMELINE``); with ``logs``, each writes its log there (kept once it stopped,
    for what it said as it stopped); ``root``, the checkout whose gateway runs."""
    with tempfile.TemporaryDirectory(prefix="load-") as tmp, contextlib.ExitStack() as stack:
        directory = Path(tmp)
        write_users(directory, [user_name(n) for n in range(1, args.users + 1)])
        flags = ["--scripted-pace-ms", str(args.pace_ms)]
        flags += ["--workers", spelled_workers(setup.workers)]
        flags += ["--user-rate", str(args.user_rate)]
        flags += ["--timeline", str(marks)] if marks is not None else []
        if setup.store == "file":
            flags += ["--db", str(directory / "gateway.db")]
        elif setup.store == "postgres":
            assert database is not None
            flags += ["--db", database]
        entry = ("-m", "scripts._load_users", tmp)
        yield [
            stack.enter_context(
                local_gateway(
                    *flags,
                    entry=entry,
                    root=root,
                    log=logs / f"gateway-{n}.log" if logs else None,
                )
            )
            for n in range(1, setup.processes + 1)
        ]
