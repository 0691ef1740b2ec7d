"""Several gateway processes on one PostgreSQL: runs per second, and fan-out latency.

Runs/s: the demo's one-turn text runs ("안녕" in, the greeting streamed back) over /ws,
each on a new thread, by ``--clients`` connections spread evenly over the processes:

- sqlite x1   one process on a SQLite file: the single-node default, and the baseline
- postgres xN one, two and three processes on one PostgreSQL database

Every configuration runs in the same round on the same machine, so the ratios against the
baseline are what to read; these machines have two cores shared with PostgreSQL and this
driver, so three processes cannot be three times one.

Fan-out: an observer on process B reattaches to a thread, then a client on process A runs
on it; for every event both receive, the time from A's client to B's observer (both in this
process, one clock): what a watcher on another process waits for the same event.

Join: a new tab (a reattach with no cursor) in the middle of a run on A, opened on A (the
baseline: the run's own process) and on B, and the time from its reattach to the snapshot
it paints: what a reload behind a load balancer waits before it shows the thread.

    .venv/bin/python -m scripts.bench_cluster                 # 3 rounds, then their medians
    .venv/bin/python -m scripts.bench_cluster --rounds 1 --runs 120
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import uvloop
from websockets.asyncio.client import ClientConnection, connect

from scripts._bench import LocalGateway, client_tools, local_gateway, percentile, user_turn
from scripts.bench_runs import BENCH_FLAGS, USER, Phase, gateway_run, measure
from tests.support.postgres import running_postgres

# The pace of the scripted model for the fan-out runs: events apart, as a real model sends them.
FANOUT_PACE_MS = "5"
# The demo's long reply (about a hundred chunks): a run to join in its middle.
LONG = "자기소개를 길게 해 주세요"
EVENT_TIMEOUT = 10.0


@contextlib.contextmanager
def processes(count: int, db: str, *flags: str) -> Iterator[list[LocalGateway]]:
    """``count`` gateway processes on the database ``db``, all answering /ping."""
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(local_gateway("--db", db, *BENCH_FLAGS, *flags))
            for _ in range(count)
        ]


async def runs_per_second(gateways: Sequence[LocalGateway], clients: int, runs: int) -> Phase:
    """``runs`` runs by ``clients`` connections, connection i on process i mod N."""
    tools = client_tools(gateways[0])
    async with contextlib.AsyncExitStack() as stack:
        sockets = [
            await stack.enter_async_context(
                connect(gateways[i % len(gateways)].ws_url(USER), max_size=None, compression=None)
            )
            for i in range(clients)
        ]
        for ws in sockets:  # every connection warm, so no process's first run is timed
            await gateway_run(ws, tools)
        return await measure(
            [functools.partial(gateway_run, ws, tools) for ws in sockets],
            runs,
            lambda: 0.0,
        )


async def _arrivals(ws: ClientConnection, seen: dict[str, float], ends: int) -> None:
    """Records when each text chunk arrives, keyed by where it ends, until ``ends`` runs end."""
    finished = 0
    # A connection that falls behind gets text deltas merged, so a point of the stream is the
    # length of a message's text so far, not the number of its chunks.
    length: collections.Counter[str] = collections.Counter()
    while finished < ends:
        raw = await asyncio.wait_for(ws.recv(), EVENT_TIMEOUT)
        now = time.perf_counter()
        event = json.loads(raw)
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            length[event["messageId"]] += len(event["delta"])
            seen[f"{event['messageId']}:{length[event['messageId']]}"] = now
        elif event["type"] == "RUN_ERROR":
            raise RuntimeError(f"a run failed: {raw!r}")
        elif event["type"] == "RUN_FINISHED":
            finished += 1


async def fan_out(a: LocalGateway, b: LocalGateway, runs: int) -> list[float]:
    """Seconds from A's client to B's observer, for every text chunk of ``runs`` runs on A."""
    tools = client_tools(a)
    delays: list[float] = []
    async with (
        connect(a.ws_url(USER), max_size=None, compression=None) as runner,
        connect(b.ws_url(USER), max_size=None, compression=None) as observer,
    ):
        for _ in range(runs):
            thread_id = uuid.uuid4().hex
            await observer.send(json.dumps({"type": "reattach", "threadId": thread_id}))
            await _arrivals(observer, {}, ends=1)  # the empty thread's snapshot run
            on_a: dict[str, float] = {}
            on_b: dict[str, float] = {}
            watching = asyncio.create_task(_arrivals(observer, on_b, ends=1))
            await runner.send(json.dumps(user_turn("안녕", thread_id=thread_id, tools=tools)))
            await _arrivals(runner, on_a, ends=1)
            await watching
            delays += [on_b[key] - on_a[key] for key in on_a if key in on_b]
    return delays


async def _until(ws: ClientConnection, kind: str) -> None:
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), EVENT_TIMEOUT))
        if event["type"] == "RUN_ERROR":
            raise RuntimeError(f"a run failed: {event!r}")
        if event["type"] == kind:
            return


async def joins(a: LocalGateway, b: LocalGateway, runs: int) -> dict[str, list[float]]:
    """Seconds from a new tab's reattach to its MESSAGES_SNAPSHOT, in the middle of each of
    ``runs`` long replies on A: the tab on A, and on B."""
    tools = client_tools(a)
    waits: dict[str, list[float]] = {"on A": [], "on B": []}
    async with connect(a.ws_url(USER), max_size=None, compression=None) as runner:
        for _ in range(runs):
            thread_id = uuid.uuid4().hex
            await runner.send(json.dumps(user_turn(LONG, thread_id=thread_id, tools=tools)))
            await _until(runner, "TEXT_MESSAGE_CONTENT")
            for name, gateway in (("on A", a), ("on B", b)):
                async with connect(gateway.ws_url(USER), max_size=None, compression=None) as tab:
                    started = time.perf_counter()
                    await tab.send(json.dumps({"type": "reattach", "threadId": thread_id}))
                    await _until(tab, "MESSAGES_SNAPSHOT")
                    waits[name].append(time.perf_counter() - started)
            await _until(runner, "RUN_FINISHED")
    return waits


async def one_round(
    url: str, clients: int, runs: int, fanout_runs: int
) -> tuple[dict[str, float], list[float], dict[str, list[float]]]:
    rates: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp,
        processes(1, str(Path(tmp) / "threads.db")) as gateways,
    ):
        rates["sqlite x1"] = (await runs_per_second(gateways, clients, runs)).rate
    for count in (1, 2, 3):
        with processes(count, url) as gateways:
            rates[f"postgres x{count}"] = (await runs_per_second(gateways, clients, runs)).rate
    with processes(2, url, "--scripted-pace-ms", FANOUT_PACE_MS) as (a, b):
        delays = await fan_out(a, b, fanout_runs)
        waits = await joins(a, b, fanout_runs)
    return rates, delays, waits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=240, help="runs per configuration")
    parser.add_argument("--clients", type=int, default=6, help="connections, over all processes")
    parser.add_argument("--fanout-runs", type=int, default=20, help="runs watched from B")
    args = parser.parse_args()
    with running_postgres() as server:
        rounds = []
        joined: list[dict[str, list[float]]] = []
        for number in range(1, args.rounds + 1):
            url = server.fresh_database()
            rates, delays, waits = uvloop.run(
                one_round(url, args.clients, args.runs, args.fanout_runs)
            )
            rounds.append((rates, delays))
            joined.append(waits)
            print(f"round {number}: " + ", ".join(f"{k} {v:.1f} runs/s" for k, v in rates.items()))
            print(
                f"  fan-out A->B: p50 {percentile(delays, 0.5) * 1000:.2f} ms, "
                f"p99 {percentile(delays, 0.99) * 1000:.2f} ms ({len(delays)} events)"
            )
            print(
                "  new tab mid-run: "
                + ", ".join(
                    f"{name} p50 {percentile(w, 0.5) * 1000:.2f} ms" for name, w in waits.items()
                )
            )
    print(f"\nmedians of {len(rounds)} rounds ({args.clients} clients, {args.runs} runs each):")
    base = statistics.median(r["sqlite x1"] for r, _ in rounds)
    for name in rounds[0][0]:
        rate = statistics.median(r[name] for r, _ in rounds)
        print(f"  {name:12} {rate:7.1f} runs/s  {rate / base:5.2f}x sqlite x1")
    p50 = statistics.median(percentile(d, 0.5) for _, d in rounds) * 1000
    p99 = statistics.median(percentile(d, 0.99) for _, d in rounds) * 1000
    print(f"  fan-out A->B  p50 {p50:.2f} ms  p99 {p99:.2f} ms (medians of the rounds')")
    join = {
        name: statistics.median(percentile(w[name], 0.5) for w in joined) * 1000
        for name in ("on A", "on B")
    }
    print(
        f"  new tab mid-run  on A p50 {join['on A']:.2f} ms  on B p50 {join['on B']:.2f} ms"
        f"  {join['on B'] / join['on A']:.2f}x on A (medians of the rounds')"
    )


if __name__ == "__main__":
    main()
