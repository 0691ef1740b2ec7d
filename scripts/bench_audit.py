"""What the audit's durability does to the store's appends beside it, on a SQLite file.

The audit has its own connection to the store's file and takes turns with the store for
the file's write lock. Before session 42 it wrote at SQLite's default, FULL, which syncs
the file's WAL at every batch while holding that lock; now it writes as durably as the
store (``GATEWAY_DURABILITY``, ``normal`` by default). Here ``--threads`` threads append
``--appends`` events each at once, one audit record every two appends, with the audit at
``full`` and at ``normal`` in alternating rounds, and the medians of the appends' p50 and
p99 latency are printed with their ratio. The same process and file system, rounds
alternating: the ratio holds on a shared machine, where the absolute figures move.

    .venv/bin/python -m scripts.bench_audit                # 3 rounds
    .venv/bin/python -m scripts.bench_audit --rounds 5 --threads 20
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from gateway.audit.log import AuditLog
from tests.support.adk_events import agent_says
from tests.support.audit import record
from tests.support.stores import session_store

# A writer's pause between appends, as a run's events come, not back to back.
PAUSE_SECONDS = 0.002


async def one_round(audit_durability: str, threads: int, appends: int) -> tuple[float, float]:
    """The store's appends' p50 and p99 in seconds, the audit at ``audit_durability``."""
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        path = str(Path(tmp) / "gateway.db")
        store = session_store(path)  # durability normal, the default
        await store.open()
        audit = AuditLog(path, durability=audit_durability)
        await audit.open()
        waits: list[float] = []

        async def writer(thread: str) -> None:
            session = await store.create_session(app_name="gateway", user_id="u", session_id=thread)
            for number in range(appends):
                started = time.perf_counter()
                await store.append_event(session, agent_says(f"chunk {number}"))
                waits.append(time.perf_counter() - started)
                if number % 2 == 0:
                    audit.record(record(thread))
                await asyncio.sleep(PAUSE_SECONDS)

        try:
            await asyncio.gather(*(writer(f"t{n}") for n in range(threads)))
            await audit.flush()
        finally:
            await audit.close()
            await store.close()
        waits.sort()
        return statistics.median(waits), waits[int(len(waits) * 0.99)]


async def measured(rounds: int, threads: int, appends: int) -> dict[str, list[tuple[float, float]]]:
    results: dict[str, list[tuple[float, float]]] = {"full": [], "normal": []}
    for _ in range(rounds):
        for durability in results:
            results[durability].append(await one_round(durability, threads, appends))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (3)")
    parser.add_argument("--threads", type=int, default=50, help="threads appending at once (50)")
    parser.add_argument("--appends", type=int, default=20, help="appends a thread (20)")
    args = parser.parse_args()
    results = asyncio.run(measured(args.rounds, args.threads, args.appends))
    p50s = {d: statistics.median(r[0] for r in rounds) for d, rounds in results.items()}
    p99s = {d: statistics.median(r[1] for r in rounds) for d, rounds in results.items()}
    print(
        f"{args.threads} threads x {args.appends} appends, an audit record every two,"
        f" medians of {args.rounds} rounds"
    )
    print(
        f"audit at full (before)   append p50 {p50s['full'] * 1e3:7.1f} ms,"
        f" p99 {p99s['full'] * 1e3:7.1f} ms"
    )
    print(
        f"audit at normal (now)    append p50 {p50s['normal'] * 1e3:7.1f} ms,"
        f" p99 {p99s['normal'] * 1e3:7.1f} ms ({p99s['normal'] / p99s['full']:.2f}x at p99)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
