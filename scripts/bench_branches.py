"""A branch switch against a reattach by snapshot, on a thread of 1,000 messages.

A switch (docs/branches.md) moves the events of the branch it leaves aside and brings
those of the branch it shows back (``gateway.store.branches``), then sends the thread as a
reattach would. The worst case is measured: the thread forks at its first message, so a
switch between its two versions moves the whole thread one way or the other. The
baseline is a reattach by snapshot of the same long version, measured in the same rounds:
what a switch costs beyond it is the move. Each sample is a fresh /ws connection to a real
gateway on 127.0.0.1 with its store on a SQLite file, timed from the frame sent to the
answer's RUN_FINISHED.

    .venv/bin/python -m scripts.bench_branches [--messages 1000] [--samples 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts._bench import local_gateway, percentile, user_turn
from scripts.bench_reattach import describe, reattach_once


async def _turn(url: str, thread: str, message_id: str, **extra: Any) -> str:
    """Runs one greeting turn; returns its run id."""
    frame: dict[str, Any] = user_turn("안녕", thread_id=thread, **extra)
    frame["messages"] = [{"id": message_id, "role": "user", "content": "안녕"}]
    async with connect(url, max_size=None) as ws:
        await ws.send(json.dumps(frame))
        while True:
            event: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                assert event["type"] == "RUN_FINISHED", event
                return str(frame["runId"])


async def build_thread(url: str, messages: int) -> tuple[str, str, str]:
    """A thread of ``messages`` messages, and a second version of its first turn; returns
    it and the run ids that begin its long and its short version."""
    thread = uuid.uuid4().hex
    long = await _turn(url, thread, "first")
    for n in range(messages // 2 - 1):
        await _turn(url, thread, f"m{n}")
    short = await _turn(url, thread, "first", forwardedProps={"branch": {"before": "first"}})
    return thread, long, short


def switch(thread: str, run_id: str) -> dict[str, Any]:
    return user_turn("", thread_id=thread, forwardedProps={"branch": {"switchTo": run_id}})


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-branches-") as tmp:
        flags = ["--db", str(Path(tmp) / "gateway.db"), "--user-rate", "0"]
        flags += ["--user-reattach-bytes", "0"]
        with local_gateway(*flags) as gateway:
            url = gateway.ws_url()
            thread, long, short = await build_thread(url, args.messages)
            print(f"thread of {args.messages} messages, forked at its first")
            reattach = {"type": "reattach", "threadId": thread}
            extra = []
            for round_ in range(1, args.rounds + 1):
                timings: dict[str, tuple[list[float], int]] = {}
                for name in ("to long", "reattach", "to short"):
                    timings[name] = ([], 0)
                for _ in range(args.samples):
                    for name, frame in (
                        ("to long", switch(thread, long)),
                        ("reattach", reattach),
                        ("to short", switch(thread, short)),
                    ):
                        seconds, events = await reattach_once(url, frame)
                        timings[name][0].append(seconds)
                        timings[name] = (timings[name][0], events)
                print(f"round {round_}")
                for name, (samples, events) in timings.items():
                    print(describe(name, samples, events))
                beyond = statistics.median(timings["to long"][0]) - statistics.median(
                    timings["reattach"][0]
                )
                extra.append(beyond)
                print(f"  a switch to the long version costs {beyond * 1000:.2f} ms more (p50)")
                print(f"  p99 to long {percentile(timings['to long'][0], 0.99) * 1000:.2f} ms")
            print(
                f"median of {args.rounds} rounds: a switch moving {args.messages} messages"
                f" costs {statistics.median(extra) * 1000:.2f} ms beyond a reattach"
            )


if __name__ == "__main__":
    asyncio.run(main())
