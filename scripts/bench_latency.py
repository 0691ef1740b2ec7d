"""Cancel latency and reattach time, measured against a real gateway on 127.0.0.1.

Cancel: the time from sending ``{"type": "cancel"}`` to receiving RUN_FINISHED, in the
middle of a streamed reply (issue 4; tests/hub/test_upstream.py covers a slow server tool).
Reattach: the time from sending ``{"type": "reattach"}`` to the end of the answer for a
thread of 1,000 messages (issue 6, target p99 under 50 ms). Bounded in count and time.

    .venv/bin/python scripts/bench_latency.py [--cancels 40] [--reattaches 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts._bench import local_gateway, user_turn


async def until(ws: ClientConnection, kind: str) -> dict[str, Any]:
    while True:
        event: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if event["type"] == kind:
            return event


async def cancel_mid_reply(url: str, count: int) -> list[float]:
    samples = []
    async with connect(url) as ws:
        for _ in range(count):
            thread = uuid.uuid4().hex
            await ws.send(json.dumps(user_turn("자기소개를 길게 해 주세요", thread_id=thread)))
            await until(ws, "TEXT_MESSAGE_CONTENT")
            sent = time.perf_counter()
            await ws.send(json.dumps({"type": "cancel", "threadId": thread}))
            finished = await until(ws, "RUN_FINISHED")
            samples.append(time.perf_counter() - sent)
            assert finished["outcome"]["type"] == "cancelled", finished
    return samples


async def reattach_times(url: str, messages: int, count: int) -> tuple[list[float], int]:
    thread = uuid.uuid4().hex
    async with connect(url, max_size=None) as ws:
        # Each greeting turn adds a user message and an assistant message.
        for _ in range(messages // 2):
            await ws.send(json.dumps(user_turn("안녕", thread_id=thread)))
            await until(ws, "RUN_FINISHED")
        samples = []
        size = 0
        for _ in range(count):
            sent = time.perf_counter()
            await ws.send(json.dumps({"type": "reattach", "threadId": thread}))
            while True:
                event = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if event["type"] == "MESSAGES_SNAPSHOT":
                    size = len(event["messages"])
                if event["type"] == "RUN_FINISHED":
                    break
            samples.append(time.perf_counter() - sent)
    return samples, size


def describe(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000
    return f"{name:<28} n={len(samples):<4} p50 {p50:7.1f} ms   p99 {p99:7.1f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cancels", type=int, default=40)
    parser.add_argument("--reattaches", type=int, default=100)
    parser.add_argument("--messages", type=int, default=1000)
    args = parser.parse_args()
    with local_gateway("--scripted-pace-ms", "10") as gateway:
        url = gateway.ws_url()
        print(describe("cancel mid-reply", await cancel_mid_reply(url, args.cancels)))
    # One client sends hundreds of turns to build the thread: no per-user rate limit.
    with local_gateway(
        "--history-window",
        str(args.messages * 2),
        "--user-rate",
        "0",
        "--user-reattach-bytes",
        "0",
    ) as gateway:
        samples, size = await reattach_times(gateway.ws_url(), args.messages, args.reattaches)
        print(describe(f"reattach, {size} messages", samples))


if __name__ == "__main__":
    asyncio.run(main())
