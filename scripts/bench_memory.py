"""What abuse leaves behind: the server's RSS after rounds of hostile clients that then close.

Each round, on loopback against a real gateway process, a crowd of clients does what issue
11 saw grow the heap without bound: floods of large frames behind a run, frames nested past
every limit, reattaches to a thread of megabytes by clients that never read, runs cut off
mid-stream. Then every connection closes, and the server's resident set is read from
/proc. A gateway that frees what a closed connection held ends the last round within a few
percent of the first; one that keeps it (queues, snapshots, exception tracebacks waiting for
a full collection) grows round after round.

    python -m scripts.bench_memory [--rounds 10] [--clients 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import uuid

from websockets.asyncio.client import ClientConnection, connect

from scripts._bench import LocalGateway, local_gateway, rss_mib, user_turn

HOARDER = "demo"


def user_input(thread: str, text: str, history: int = 0) -> str:
    """A turn on ``thread``; ``history``: the size of one earlier message it carries."""
    return json.dumps(user_turn(text, thread_id=thread, earlier=["x" * history] if history else []))


async def until_end(ws: ClientConnection, timeout: float = 30) -> None:
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            return


async def big_thread(gateway: LocalGateway, turns: int, size: int) -> str:
    """A thread of ``turns`` user messages of ``size`` characters, with their replies."""
    thread = f"big-{uuid.uuid4().hex[:8]}"
    async with connect(gateway.ws_url(HOARDER), max_size=None) as ws:
        for turn in range(turns):
            await ws.send(user_input(thread, f"{turn} " + "가" * size))
            await until_end(ws)
            await asyncio.sleep(0.25)  # within the per-user rate limit
    return thread


async def abuser(gateway: LocalGateway, name: str, big: str) -> None:
    async with connect(gateway.ws_url(name), max_size=None, close_timeout=1) as ws:
        thread = f"{name}-{uuid.uuid4().hex[:8]}"
        # A run, then a flood of big frames behind it, sent without reading a thing.
        await ws.send(user_input(thread, "안녕"))
        for _ in range(30):
            await ws.send(user_input(thread, "안녕", history=200_000))
        # Frames past every bound.
        await ws.send("[" * 5000 + "]" * 5000)
        await ws.send('{"threadId": "t", "runId": "r", "messages": [], "state": 1' + "0" * 5000)
    # A reattach to a thread of megabytes by a client that never reads, then leaves.
    async with connect(gateway.ws_url(HOARDER), max_size=None, close_timeout=1) as ws:
        for _ in range(5):
            await ws.send(json.dumps({"type": "reattach", "threadId": big}))
        await asyncio.sleep(0.2)
    # A run cut off mid-stream.
    async with connect(gateway.ws_url(name), max_size=None, close_timeout=1) as ws:
        await ws.send(user_input(f"{thread}-cut", "업무 요청 목록 화면 열어줘"))
        await ws.recv()


async def measure(rounds: int, clients: int, turns: int, size: int) -> list[float]:
    # On a file: what the rounds store (threads, audit rows) must not count as memory held.
    with (
        tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp,
        local_gateway(
            "--scripted-pace-ms",
            "1",
            "--db",
            f"{tmp}/threads.db",
            # Memory bounded without the budget of what reattaches send, as before it.
            "--user-reattach-bytes",
            "0",
        ) as gateway,
    ):
        big = await big_thread(gateway, turns, size)
        print(f"thread {big}: {turns} turns of {size} characters; server pid {gateway.process.pid}")
        samples = []
        for index in range(rounds):
            names = [f"abuser-{index}-{n}" for n in range(clients)]
            results = await asyncio.gather(
                *(abuser(gateway, name, big) for name in names), return_exceptions=True
            )
            failed = [r for r in results if isinstance(r, BaseException)]
            await asyncio.sleep(1.0)  # every connection closed; let the server settle
            samples.append(rss_mib(gateway.process.pid))
            ratio = samples[-1] / samples[0]
            print(
                f"round {index + 1:2d}: RSS {samples[-1]:7.1f} MiB ({ratio:.3f} of round 1)"
                + (f"; {len(failed)} clients failed: {failed[0]!r}" if failed else "")
            )
        return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--turns", type=int, default=8, help="turns of the big thread")
    parser.add_argument("--size", type=int, default=100_000, help="characters per big turn")
    args = parser.parse_args()
    samples = asyncio.run(measure(args.rounds, args.clients, args.turns, args.size))
    later = samples[1:] or samples
    print(
        f"RSS after the last round / after the first: {samples[-1] / samples[0]:.3f}"
        f" (median of rounds 2-{len(samples)}: {statistics.median(later) / samples[0]:.3f})"
    )


if __name__ == "__main__":
    main()
