"""What the gateway adds to a voice turn: latency per audio chunk, each way, against a client
connected straight to the same local Live server, in the same run.

Each round runs two sides against a fresh local Gemini Live server
(``tests/support/gemini_live.py``, TLS on loopback):

- **direct**: google-genai's live client, as an app without the gateway would hold it;
- **gateway**: a websockets client on /ws of a gateway on loopback (``liveStart``, binary
  frames), the gateway bridging through ADK's ``Runner.run_live`` to the same server.

On each side the client sends ``--chunks`` chunks of 16 kHz audio (``--pace-ms`` apart, 20 ms
as a browser's worklet does), each carrying its number in its first 4 bytes; the server
notes when each arrives (**up**). Then the server sends as many chunks of 24 kHz speech,
as paced and numbered, and the client notes when each arrives (**down**). Client, gateway
and server share one process and one clock (``time.perf_counter``), so a latency is a
difference of two readings of one clock. A round prints each side's p50 and p99 each way,
and what the gateway adds (gateway minus direct); the summary prints the medians of the
rounds. The issue's target is under 5 ms p50 and 20 ms p99 added each way.

    .venv/bin/python -m scripts.bench_voice                  # 3 rounds of 200 chunks
    .venv/bin/python -m scripts.bench_voice --rounds 5 --chunks 500
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

from google import genai
from google.adk.agents import LlmAgent
from google.genai import types
from websockets.asyncio.client import connect

from gateway.wire import live as wire
from tests.support import gemini_live as live
from tests.support.servers import running_gateway

MIC = f"audio/pcm;rate={live.INPUT_RATE}"
UP_BYTES = 640  # 20 ms at 16 kHz
DOWN_BYTES = 960  # 20 ms at 24 kHz


def numbered(seq: int, size: int) -> bytes:
    return seq.to_bytes(4, "big") + bytes(size - 4)


def script(chunks: int, pace: float) -> list[live.Step]:
    steps: list[live.Step] = [live.WaitAudio(chunks * UP_BYTES)]
    for seq in range(chunks):
        steps += [live.Send(live.audio_out(numbered(seq, DOWN_BYTES))), live.Pause(pace)]
    steps.append(live.Send(live.turn_complete()))
    return steps


def latencies(sent: list[float], arrived: dict[int, float]) -> list[float]:
    """Milliseconds from each chunk's send to its arrival, by its number."""
    return [(arrived[seq] - at) * 1000 for seq, at in enumerate(sent) if seq in arrived]


def arrivals(connection: live.Connection) -> dict[int, float]:
    return {int.from_bytes(head, "big"): at for at, head in connection.chunk_arrivals}


async def direct(chunks: int, pace: float) -> tuple[list[float], list[float]]:
    async with live.LiveServer([script(chunks, pace)]) as server:
        client = genai.Client(**server.client_options())
        config = types.LiveConnectConfig(response_modalities=[types.Modality.AUDIO])
        async with client.aio.live.connect(model=live.MODEL, config=config) as session:
            sent: list[float] = []
            for seq in range(chunks):
                sent.append(time.perf_counter())
                blob = types.Blob(data=numbered(seq, UP_BYTES), mime_type=MIC)
                await session.send_realtime_input(audio=blob)
                await asyncio.sleep(pace)
            heard: dict[int, float] = {}
            async for message in session.receive():
                content = message.server_content
                if content and content.model_turn and content.model_turn.parts:
                    data = content.model_turn.parts[0].inline_data
                    if data is not None and data.data:
                        heard[int.from_bytes(data.data[:4], "big")] = time.perf_counter()
        connection = server.connections[0]
        return latencies(sent, arrivals(connection)), latencies(connection.sent_at, heard)


async def through_gateway(chunks: int, pace: float) -> tuple[list[float], list[float]]:
    async with live.LiveServer([script(chunks, pace)]) as server, _gateway(server) as url:
        async with connect(url, max_size=None) as ws:
            await ws.send(json.dumps({"type": "liveStart", "threadId": "bench", "runId": "r1"}))
            while "gateway.live.started" not in str(await ws.recv()):
                pass
            sent: list[float] = []
            for seq in range(chunks):
                sent.append(time.perf_counter())
                await ws.send(wire.audio_in_frame(numbered(seq, UP_BYTES)))
                await asyncio.sleep(pace)
            heard: dict[int, float] = {}
            while len(heard) < chunks:
                frame = await asyncio.wait_for(ws.recv(), 30)
                if isinstance(frame, bytes):
                    pcm = frame[wire.HEADER_BYTES :]
                    heard[int.from_bytes(pcm[:4], "big")] = time.perf_counter()
            await ws.send(json.dumps({"type": "liveStop", "threadId": "bench"}))
            while '"RUN_FINISHED"' not in str(await ws.recv()):
                pass
        connection = server.connections[0]
        # The server's first sends are the script's: one per chunk, then the turn's end.
        return latencies(sent, arrivals(connection)), latencies(connection.sent_at, heard)


@contextlib.asynccontextmanager
async def _gateway(server: live.LiveServer) -> AsyncIterator[str]:
    agent = LlmAgent(name="voice", model=server.live_model(), instruction="Answer briefly.")
    async with running_gateway(agent=agent, log_level="error") as gateway:
        yield gateway.ws_url()


def pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def main(args: argparse.Namespace) -> None:
    pace = args.pace_ms / 1000
    summary: dict[str, list[float]] = {}
    for number in range(1, args.rounds + 1):
        # Alternate which side goes first, so a neighbour's burst favours neither.
        sides: list[tuple[str, Any]] = [("direct", direct), ("gateway", through_gateway)]
        if number % 2 == 0:
            sides.reverse()
        measured = {name: await side(args.chunks, pace) for name, side in sides}
        print(f"round {number}: {args.chunks} chunks each way, {args.pace_ms:g} ms apart")
        for way, index in (("up", 0), ("down", 1)):
            row = {name: measured[name][index] for name in ("direct", "gateway")}
            assert all(len(values) == args.chunks for values in row.values()), "chunks lost"
            for name, values in row.items():
                print(
                    f"  {way:4} {name:7}: p50 {pct(values, 0.5):6.2f} ms"
                    f"  p99 {pct(values, 0.99):6.2f} ms"
                )
            for stat, share in (("p50", 0.5), ("p99", 0.99)):
                added = pct(row["gateway"], share) - pct(row["direct"], share)
                summary.setdefault(f"{way} {stat}", []).append(added)
            print(
                f"  {way:4} added  : p50 {summary[f'{way} p50'][-1]:6.2f} ms"
                f"  p99 {summary[f'{way} p99'][-1]:6.2f} ms"
            )
    print(
        f"medians of {args.rounds} rounds, added by the gateway (target: p50 < 5 ms, p99 < 20 ms)"
    )
    for key, values in summary.items():
        print(f"  {key}: {statistics.median(values):.2f} ms")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--pace-ms", type=float, default=20.0)
    return parser.parse_args(argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)
    asyncio.run(main(parse()))
