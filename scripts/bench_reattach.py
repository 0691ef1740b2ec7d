"""Reattach by cursor against reattach by snapshot, on a thread of 1,000 messages.

A client that lost its connection for a moment has missed the last few events of the
thread. By snapshot (issue 6) it is sent the whole thread again (MESSAGES_SNAPSHOT of up to
``GATEWAY_SNAPSHOT_BYTES``); by cursor (issue 16, ``{"type": "reattach", "after": N}``) only
the events after the last number it saw, read from the thread's log. Each sample is a fresh
/ws connection to a real gateway on 127.0.0.1 with its store on a SQLite file, timed from
the reattach frame sent to the last event of the answer received. Rounds alternate the two,
so both meet the same machine; the ratio is snapshot p99 over cursor p99.

    .venv/bin/python -m scripts.bench_reattach [--messages 1000] [--samples 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts._bench import local_gateway, percentile, user_turn

# The events a client missed: the end of the last reply (its last chunks and RUN_FINISHED).
MISSED = 5


async def build_thread(url: str, messages: int) -> tuple[str, int]:
    """A thread of ``messages`` messages (greeting turns: a user's and an agent's each);
    returns it and the number of its log's last event."""
    thread = uuid.uuid4().hex
    head = 0
    async with connect(url, max_size=None) as ws:
        for _ in range(messages // 2):
            await ws.send(json.dumps(user_turn("안녕", thread_id=thread)))
            while True:
                event: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 30))
                head = (event.get("metadata") or {}).get("gateway.seq", head)
                if event["type"] == "RUN_FINISHED":
                    break
    return thread, head


async def reattach_once(url: str, frame: dict[str, Any]) -> tuple[float, int]:
    """Seconds from the reattach to the answer's last event, and the events received."""
    async with connect(url, max_size=None) as ws:
        sent = time.perf_counter()
        await ws.send(json.dumps(frame))
        received = 0
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 30))
            received += 1
            if event["type"] == "RUN_FINISHED":
                return time.perf_counter() - sent, received


def describe(name: str, samples: list[float], events: int) -> str:
    p50 = statistics.median(samples) * 1000
    p99 = percentile(samples, 0.99) * 1000
    return (
        f"  {name:<10} n={len(samples):<4} {events:>3} events  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-reattach-") as tmp:
        # One client reattaches hundreds of times: no per-user limits.
        flags = ["--db", str(Path(tmp) / "gateway.db"), "--user-rate", "0"]
        flags += ["--user-reattach-bytes", "0"]
        with local_gateway(*flags) as gateway:
            url = gateway.ws_url()
            thread, head = await build_thread(url, args.messages)
            by_snapshot = {"type": "reattach", "threadId": thread}
            by_cursor = {**by_snapshot, "after": head - MISSED}
            print(f"thread of {args.messages} messages, log head {head}; cursor {head - MISSED}")
            ratios = []
            for round_ in range(1, args.rounds + 1):
                timings: dict[str, tuple[list[float], int]] = {}
                for name, frame in (("snapshot", by_snapshot), ("cursor", by_cursor)):
                    samples, events = [], 0
                    for _ in range(args.samples):
                        seconds, events = await reattach_once(url, frame)
                        samples.append(seconds)
                    timings[name] = (samples, events)
                print(f"round {round_}")
                for name, (samples, events) in timings.items():
                    print(describe(name, samples, events))
                ratio = percentile(timings["snapshot"][0], 0.99) / percentile(
                    timings["cursor"][0], 0.99
                )
                ratios.append(ratio)
                print(f"  snapshot p99 / cursor p99: {ratio:.1f}x")
            ratio = statistics.median(ratios)
            print(f"median of {args.rounds} rounds: cursor is {ratio:.1f}x faster at p99")


if __name__ == "__main__":
    asyncio.run(main())
