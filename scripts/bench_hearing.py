"""What hearing a cluster notice costs the listening process's CPU, read two ways.

On a cluster each process hears a notice for every commit of frames by another process
(several a story), each a wake-up of its event loop. Here a sender process commits
``--notices`` notices one at a time, ``--gap-ms`` apart (so each is a wake-up of its own,
as on a cluster), and this process listens with psycopg's ``AsyncConnection.notifies()``
(what the cluster did before) and with ``gateway.cluster.hearing.hear`` (what it does now),
in alternating rounds, counting its own CPU (``time.process_time``) from the first notice
heard to the last. Printed: the CPU a notice of each, medians over the rounds, and their
ratio. One process, rounds alternating: the ratio holds on a shared machine.

    .venv/bin/python -m scripts.bench_hearing               # 3 rounds of each
    .venv/bin/python -m scripts.bench_hearing --rounds 5 --notices 2000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time

import psycopg
import uvloop

from gateway.cluster.hearing import hear
from tests.support.postgres import running_postgres

CHANNEL = "bench_hearing"
PAYLOAD = '{"type":"committed","thread":"3f2a9c1e-5b7d-4e21-9a0c-1d2e3f4a5b6c","seq":17}'

# The sender: each notice in a transaction of its own, paced.
SENDER = """
import sys, time, psycopg
url, channel, payload, count, gap = sys.argv[1:6]
with psycopg.connect(url, autocommit=True) as conn:
    for _ in range(int(count)):
        conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))
        time.sleep(float(gap))
"""


async def listen(url: str, how: str, count: int, gap: float) -> float:
    """Seconds of this process's CPU a notice, heard ``how``."""
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    heard: list[float] = []
    done = asyncio.get_running_loop().create_future()

    def one(_: str) -> None:
        heard.append(time.process_time())
        if len(heard) == count and not done.done():
            done.set_result(None)

    async def by_psycopg() -> None:
        async for notice in conn.notifies():
            one(notice.payload)

    try:
        await conn.execute(f"LISTEN {CHANNEL}")
        reading = asyncio.create_task(by_psycopg() if how == "notifies" else hear(conn, one))
        sender = subprocess.Popen(
            [sys.executable, "-c", SENDER, url, CHANNEL, PAYLOAD, str(count), str(gap)]
        )
        await done
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        sender.wait()
    finally:
        await conn.close()
    return (heard[-1] - heard[0]) / (count - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--notices", type=int, default=1000)
    parser.add_argument("--gap-ms", type=float, default=1.0)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"notifies": [], "hear": []}
    with running_postgres() as postgres:
        url = postgres.fresh_database()
        for number in range(args.rounds):
            for how in results:
                each = uvloop.run(listen(url, how, args.notices, args.gap_ms / 1000))
                results[how].append(each)
                print(f"round {number + 1} {how:<9} {1e6 * each:6.1f} µs of CPU a notice")
    before, after = (statistics.median(results[how]) for how in ("notifies", "hear"))
    print(
        f"medians: psycopg's notifies() {1e6 * before:.1f} µs, hearing.hear {1e6 * after:.1f} µs"
        f" a notice ({after / before:.2f}x)"
    )


if __name__ == "__main__":
    main()
