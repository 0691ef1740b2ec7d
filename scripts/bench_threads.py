"""The thread door's list and search against one thread's reattach, on a full database.

A SQLite file is filled through the store (``SessionService``, as a gateway writes it):
one user with ``--per-user`` threads (1,000) and other users' threads up to ``--total``
(10,000 by default, a short run; ``--full`` makes it 100,000), each thread a user's message
and a reply with a few words in Korean and English and an order number. Then a real gateway
serves the file, and each round times, one request after another on loopback:

- list:    GET /threads (the first page of 30, pinned then newest)
- search:  GET /threads?q=업무 요청 (a phrase every thread of the user holds: the worst case)
- rare:    GET /threads?q=R-742 (an order number one of the user's threads holds)
- short:   GET /threads?q=r (one letter: a prefix of every word starting with it, the
  costliest query a user can send)
- page:    the next page of the list, by its cursor
- reattach: a fresh /ws, a reattach to one of the user's threads, until its snapshot's end
  (the baseline: the door a client already uses to open a thread)

Each sample is one request from send to the last byte. Rounds interleave the kinds, so all
meet the same machine; p50 and p99 per round, then medians over the rounds.

    .venv/bin/python -m scripts.bench_threads [--per-user 1000] [--total 10000] [--full]
        [--samples 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from google.adk.events import Event
from google.genai import types
from websockets.asyncio.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.examples.navigator.agent import APP_NAME
from gateway.store import SessionService
from gateway.translate.history import event_messages
from scripts._bench import local_gateway, percentile

USER = "demo"
WORDS = (
    "화면",
    "목록",
    "승인",
    "경비",
    "보고서",
    "invoice",
    "refund",
    "travel",
    "budget",
    "screen",
)
# Threads written at once: their appends share the writer's transactions.
BATCH = 500


def said(author: str, text: str) -> Event:
    role = "user" if author == "user" else "model"
    parts = [types.Part(text=text)]
    return Event(
        invocation_id="bench", author=author, content=types.Content(role=role, parts=parts)
    )


async def one_thread(store: SessionService, user: str, number: int) -> None:
    session = await store.create_session(app_name=APP_NAME, user_id=user, session_id=f"t{number}")
    pick = random.Random(number)
    words = " ".join(pick.choice(WORDS) for _ in range(4))
    await store.append_event(session, said("user", f"업무 요청 R-{number % 1000} {words}"))
    await store.append_event(session, said("navigator", f"{words} 확인했습니다. done"))


async def fill(path: str, per_user: int, total: int) -> float:
    """Writes the threads; seconds it took."""
    store = SessionService(path, messages=event_messages)
    await store.open()
    started = time.perf_counter()
    try:
        owners = [USER] * per_user + [f"user-{n % 997}" for n in range(total - per_user)]
        for start in range(0, total, BATCH):
            batch = range(start, min(start + BATCH, total))
            await asyncio.gather(*(one_thread(store, owners[n], n) for n in batch))
    finally:
        await store.close()
    return time.perf_counter() - started


async def timed(request: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await request()
    return time.perf_counter() - started


async def reattach(url: str, thread: str) -> None:
    async with connect(url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "reattach", "threadId": thread}))
        while json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] != "RUN_FINISHED":
            pass


def describe(name: str, samples: list[float]) -> str:
    p50 = statistics.median(samples) * 1000
    p99 = percentile(samples, 0.99) * 1000
    return f"  {name:<9} n={len(samples):<4} p50 {p50:7.2f} ms  p99 {p99:7.2f} ms"


async def measure(gateway_http: str, ws_url: str, samples: int, rounds: int) -> None:
    async with httpx.AsyncClient(base_url=gateway_http, headers={"X-Gateway-User": USER}) as http:

        async def get(path: str) -> None:
            response = await http.get(path)
            response.raise_for_status()

        first = (await http.get("/threads")).json()
        assert len(first["threads"]) == 30, first
        cursor = urllib.parse.quote(first["nextCursor"])
        searched = (await http.get("/threads?q=" + urllib.parse.quote("업무 요청"))).json()
        rare = (await http.get("/threads?q=R-742")).json()
        print(
            f"search finds {len(searched['threads'])} (a page), rare finds {len(rare['threads'])}"
        )
        thread = first["threads"][0]["threadId"]
        kinds: dict[str, Callable[[], Awaitable[object]]] = {
            "list": lambda: get("/threads"),
            "search": lambda: get("/threads?q=" + urllib.parse.quote("업무 요청")),
            "rare": lambda: get("/threads?q=R-742"),
            "short": lambda: get("/threads?q=r"),
            "page": lambda: get(f"/threads?cursor={cursor}"),
            "reattach": lambda: reattach(ws_url, thread),
        }
        p50s: dict[str, list[float]] = {name: [] for name in kinds}
        p99s: dict[str, list[float]] = {name: [] for name in kinds}
        for round_ in range(1, rounds + 1):
            timings: dict[str, list[float]] = {name: [] for name in kinds}
            for _ in range(samples):
                for name, request in kinds.items():
                    timings[name].append(await timed(request))
            print(f"round {round_}")
            for name, values in timings.items():
                print(describe(name, values))
                p50s[name].append(statistics.median(values))
                p99s[name].append(percentile(values, 0.99))
        print(f"medians of {rounds} rounds (p50 / p99, ms; reattach is the baseline):")
        for name in kinds:
            p50 = statistics.median(p50s[name]) * 1000
            p99 = statistics.median(p99s[name]) * 1000
            ratio = statistics.median(p99s[name]) / statistics.median(p99s["reattach"])
            print(f"  {name:<9} {p50:7.2f} / {p99:7.2f}   p99 {ratio:4.2f}x reattach's")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-user", type=int, default=1000)
    parser.add_argument("--total", type=int, default=10_000)
    parser.add_argument("--full", action="store_true", help="100,000 threads in the database")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    total = 100_000 if args.full else max(args.total, args.per_user)
    with tempfile.TemporaryDirectory(prefix="bench-threads-") as tmp:
        path = str(Path(tmp) / "gateway.db")
        seconds = await fill(path, args.per_user, total)
        print(f"{total} threads ({args.per_user} of {USER!r}) written in {seconds:.1f} s")
        flags = ["--db", path, "--user-rate", "0", "--user-reattach-bytes", "0"]
        flags += ["--user-threads", "0"]
        with local_gateway(*flags) as gateway:
            await measure(gateway.http, gateway.ws_url(USER), args.samples, args.rounds)


if __name__ == "__main__":
    asyncio.run(main())
