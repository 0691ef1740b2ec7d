"""What the gateway adds to a voice turn: latency per audio chunk each way and barge-in to
silence, against a client connected straight to the same local Live server, in the same run;
and the gateway's CPU per second of audio with 50 live sessions at once.

Each round runs two sides against a fresh local Gemini Live server
(``tests/support/gemini_live.py``, TLS on loopback):

- **direct**: google-genai's live client, as an app without the gateway would hold it;
- **gateway**: a websockets client on /ws of a gateway on loopback (``liveStart``, binary
  frames), the gateway bridging through ADK's ``Runner.run_live`` to the same server.

**Latency.** On each side the client sends ``--chunks`` chunks of 16 kHz audio
(``--pace-ms`` apart, 20 ms as a browser's worklet does), each carrying its number in its
first 4 bytes; the server notes when each arrives (**up**). Then the server sends as many
chunks of 24 kHz speech, as paced and numbered, and the client notes when each arrives
(**down**). Client, gateway and server share one process and one clock
(``time.perf_counter``), so a latency is a difference of two readings of one clock. A round
prints each side's p50 and p99 each way, and what the gateway adds (gateway minus direct),
with the times the process was preempted while the chunks went down (involuntary context
switches): on a busy machine those, not the gateway's code, make the p99.

**Barge-in to silence.** The agent speaks (20 ms chunks, paced); once the client has heard
200 ms of it the person starts speaking (at a random point between two of its chunks), and
the server, once it received 60 ms of that speech (three chunks, the last sent 40 ms after
the first: its stand-in for Gemini's voice detection, the same on both sides), interrupts
its turn and stops. Timed: the client's
time from its speech start to the last chunk of the agent's speech it received, and to the
interruption's notice (``gateway.live.interrupted``; direct, ``serverContent.interrupted``),
``--barge-ins`` times a round on each side.

**CPU at N sessions.** After the rounds, a gateway in a process of its own (``python -m
gateway``, the agent of ``scripts/_voice_agent.py``) serves ``--sessions`` live turns at
once, each streaming ``--session-seconds`` of audio up and hearing as much speech down, in
real time; the gateway's CPU time (``/proc``) over the seconds of audio it carried, either
way, and the share of one core. The clients and the Live server (this process) are shown
beside it for scale. Loopback only; every wait is bounded, and the run ends by itself.

    .venv/bin/python -m scripts.bench_voice                  # 3 rounds, then 50 sessions
    .venv/bin/python -m scripts.bench_voice --rounds 5 --chunks 500 --sessions 0
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import random
import resource
import statistics
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from google import genai
from google.adk.agents import LlmAgent
from google.genai import types
from websockets.asyncio.client import ClientConnection, connect

from gateway.wire import live as wire
from scripts._bench import cpu_seconds, local_gateway
from tests.support import gemini_live as live
from tests.support.servers import running_gateway

MIC = f"audio/pcm;rate={live.INPUT_RATE}"
UP_BYTES = 640  # 20 ms at 16 kHz
DOWN_BYTES = 960  # 20 ms at 24 kHz
# Barge-in: the client speaks once it heard this many chunks of the agent; the server stops
# once it heard this many of the person's (its stand-in for voice detection: 60 ms of
# speech, the last chunk sent 40 ms after the first).
HEARD_BEFORE_SPEAKING, SPEECH_BEFORE_STOPPING = 10, 3
# Any one wait of the benchmark, at most.
WAIT_SECONDS = 30.0


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


def preemptions() -> int:
    """Times this process was taken off a core against its will, so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


@dataclasses.dataclass
class Way:
    """One side's chunks one way: their latencies, and the preemptions meanwhile."""

    ms: list[float]
    preempted: int = 0


async def paced(pace: float, count: int, send: Any) -> float:
    """Calls ``send(seq)`` ``count`` times, ``pace`` seconds apart by the clock (not by
    sleeps that add up); when the first went."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    for seq in range(count):
        await asyncio.sleep(max(0.0, began + seq * pace - loop.time()))
        await send(seq)
    return began


async def direct(chunks: int, pace: float) -> tuple[Way, Way]:
    async with live.LiveServer([script(chunks, pace)]) as server:
        client = genai.Client(**server.client_options())
        config = types.LiveConnectConfig(response_modalities=[types.Modality.AUDIO])
        async with client.aio.live.connect(model=live.MODEL, config=config) as session:
            sent: list[float] = []

            async def speak(seq: int) -> None:
                sent.append(time.perf_counter())
                blob = types.Blob(data=numbered(seq, UP_BYTES), mime_type=MIC)
                await session.send_realtime_input(audio=blob)

            await paced(pace, chunks, speak)
            heard: dict[int, float] = {}
            preempted = preemptions()
            async for message in session.receive():
                if (pcm := _speech(message)) is not None:
                    heard[int.from_bytes(pcm[:4], "big")] = time.perf_counter()
            preempted = preemptions() - preempted
        connection = server.connections[0]
        up = Way(latencies(sent, arrivals(connection)))
        return up, Way(latencies(connection.sent_at, heard), preempted)


def _speech(message: types.LiveServerMessage) -> bytes | None:
    content = message.server_content
    if content and content.model_turn and content.model_turn.parts:
        data = content.model_turn.parts[0].inline_data
        if data is not None and data.data:
            return data.data
    return None


async def through_gateway(chunks: int, pace: float) -> tuple[Way, Way]:
    async with live.LiveServer([script(chunks, pace)]) as server, _gateway(server) as url:
        async with connect(url, max_size=None) as ws:
            await _start(ws, "bench")
            sent: list[float] = []

            async def speak(seq: int) -> None:
                sent.append(time.perf_counter())
                await ws.send(wire.audio_in_frame(numbered(seq, UP_BYTES)))

            await paced(pace, chunks, speak)
            heard: dict[int, float] = {}
            preempted = preemptions()
            while len(heard) < chunks:
                frame = await asyncio.wait_for(ws.recv(), WAIT_SECONDS)
                if isinstance(frame, bytes):
                    pcm = frame[wire.HEADER_BYTES :]
                    heard[int.from_bytes(pcm[:4], "big")] = time.perf_counter()
            preempted = preemptions() - preempted
            await _stop(ws, "bench")
        connection = server.connections[0]
        # The server's first sends are the script's: one per chunk, then the turn's end.
        up = Way(latencies(sent, arrivals(connection)))
        return up, Way(latencies(connection.sent_at, heard), preempted)


async def _start(ws: ClientConnection, thread_id: str) -> None:
    await ws.send(json.dumps({"type": "liveStart", "threadId": thread_id, "runId": "r1"}))
    while "gateway.live.started" not in str(await asyncio.wait_for(ws.recv(), WAIT_SECONDS)):
        pass


async def _stop(ws: ClientConnection, thread_id: str) -> None:
    await ws.send(json.dumps({"type": "liveStop", "threadId": thread_id}))
    while '"RUN_FINISHED"' not in str(await asyncio.wait_for(ws.recv(), WAIT_SECONDS)):
        pass


@contextlib.asynccontextmanager
async def _gateway(server: live.LiveServer) -> AsyncIterator[str]:
    agent = LlmAgent(name="voice", model=server.live_model(), instruction="Answer briefly.")
    async with running_gateway(agent=agent, log_level="error") as gateway:
        yield gateway.ws_url()


# --- barge-in to silence ----------------------------------------------------------------


def barge_in_script(pace: float) -> list[live.Step]:
    """The person's first words start the agent, who speaks until the person is heard
    speaking over it, then stops its turn."""
    stop_at = UP_BYTES * (1 + SPEECH_BEFORE_STOPPING)
    speech = numbered(0, DOWN_BYTES)
    return [
        live.WaitAudio(UP_BYTES),
        live.Speak(speech, pace, chunks=int(WAIT_SECONDS / pace), until_heard=stop_at),
        live.Send(live.interrupted(), live.turn_complete()),
    ]


@dataclasses.dataclass
class BargeIn:
    """Milliseconds from the person's first chunk to the agent's last chunk received, and to
    the interruption's notice."""

    to_silence: float
    to_notice: float


class Listener:
    """What a client heard of the agent during a barge-in: when, and when it was told."""

    def __init__(self) -> None:
        self.chunks = 0
        self.last_chunk = 0.0
        self.told = 0.0
        self.heard_enough = asyncio.Event()
        self.interrupted = asyncio.Event()

    def chunk(self) -> None:
        if self.interrupted.is_set():
            return  # a later turn's
        self.chunks += 1
        self.last_chunk = time.perf_counter()
        if self.chunks >= HEARD_BEFORE_SPEAKING:
            self.heard_enough.set()

    def notice(self) -> None:
        if not self.interrupted.is_set():
            self.told = time.perf_counter()
            self.interrupted.set()

    async def barge_in(self, pace: float, speak: Any) -> BargeIn:
        """Waits until the agent has said enough, then speaks over it until told."""
        await asyncio.wait_for(self.heard_enough.wait(), WAIT_SECONDS)
        # Anywhere between two of the agent's chunks: which chunk is its last depends on
        # where the person starts, and a fixed start would favour one side.
        await asyncio.sleep(random.uniform(0, pace))
        began = time.perf_counter()

        async def speaking() -> None:
            await paced(pace, int(WAIT_SECONDS / pace), speak)

        talker = asyncio.create_task(speaking())
        try:
            await asyncio.wait_for(self.interrupted.wait(), WAIT_SECONDS)
        finally:
            talker.cancel()
        return BargeIn((self.last_chunk - began) * 1000, (self.told - began) * 1000)


async def barge_ins_direct(trials: int, pace: float) -> list[BargeIn]:
    async with live.LiveServer([barge_in_script(pace)]) as server:
        client = genai.Client(**server.client_options())
        return [await _barge_in_direct(client, pace) for _ in range(trials)]


async def _barge_in_direct(client: genai.Client, pace: float) -> BargeIn:
    config = types.LiveConnectConfig(response_modalities=[types.Modality.AUDIO])
    async with client.aio.live.connect(model=live.MODEL, config=config) as session:
        heard = Listener()

        async def speak(seq: int) -> None:
            blob = types.Blob(data=numbered(seq, UP_BYTES), mime_type=MIC)
            await session.send_realtime_input(audio=blob)

        async def listen() -> None:
            while not heard.interrupted.is_set():
                async for message in session.receive():
                    if _speech(message) is not None:
                        heard.chunk()
                    content = message.server_content
                    if content is not None and content.interrupted:
                        heard.notice()

        await speak(0)
        listening = asyncio.create_task(listen())
        try:
            return await heard.barge_in(pace, speak)
        finally:
            listening.cancel()


async def barge_ins_gateway(trials: int, pace: float) -> list[BargeIn]:
    async with live.LiveServer([barge_in_script(pace)]) as server, _gateway(server) as url:
        return [await _barge_in_gateway(url, f"barge-in-{n}", pace) for n in range(trials)]


async def _barge_in_gateway(url: str, thread_id: str, pace: float) -> BargeIn:
    async with connect(url, max_size=None) as ws:
        await _start(ws, thread_id)
        heard = Listener()

        async def speak(seq: int) -> None:
            await ws.send(wire.audio_in_frame(numbered(seq, UP_BYTES)))

        async def listen() -> None:
            while not heard.interrupted.is_set():
                frame = await ws.recv()
                if isinstance(frame, bytes):
                    heard.chunk()
                elif wire.INTERRUPTED in frame:
                    heard.notice()

        await speak(0)
        listening = asyncio.create_task(listen())
        try:
            cut = await heard.barge_in(pace, speak)
        finally:
            listening.cancel()
        await _stop(ws, thread_id)
        return cut


# --- CPU at N sessions ------------------------------------------------------------------


@dataclasses.dataclass
class Load:
    sessions: int
    wall: float
    gateway_cpu: float
    bench_cpu: float
    # Seconds of audio the sessions sent up and the agent spoke down, and of those, what
    # crossed the gateway (reached the Live server, reached the clients) within the window.
    sent: float
    carried: float


async def sessions_at_once(sessions: int, seconds: float, pace: float) -> Load:
    chunks = max(1, round(seconds / pace))
    steps: list[live.Step] = [
        live.WaitAudio(UP_BYTES),
        live.Speak(numbered(0, DOWN_BYTES), pace, chunks=chunks),
        live.Send(live.turn_complete()),
    ]
    async with live.LiveServer([steps]) as server:
        os.environ.update(server.environ())
        flags: tuple[str, ...] = ("--agent", "scripts._voice_agent:root_agent", "--user-rate", "0")
        flags += ("--warm-up-runs", "0", "--log-level", "error")
        flags += ("--live-turns-per-user", "1", "--max-runs", str(max(200, sessions)))
        with contextlib.ExitStack() as process:
            # Started and stopped in a thread: it asks this loop's Live server meanwhile.
            gateway = await asyncio.to_thread(process.enter_context, local_gateway(*flags))
            try:
                return await _load(
                    server, gateway.ws_url, gateway.process.pid, sessions, chunks, pace
                )
            finally:
                await asyncio.to_thread(process.close)


async def _load(
    server: live.LiveServer,
    ws_url: Callable[[str], str],
    pid: int,
    sessions: int,
    chunks: int,
    pace: float,
) -> Load:
    """The sessions' audio both ways in real time, for as long as it lasts plus as long
    again: what has not crossed the gateway by then is what it fell behind by."""
    async with contextlib.AsyncExitStack() as stack:
        sockets = [
            await stack.enter_async_context(
                connect(ws_url(f"bench-{n}"), max_size=None, compression=None)
            )
            for n in range(sessions)
        ]
        await asyncio.gather(*(_start(ws, f"load-{n}") for n, ws in enumerate(sockets)))
        heard = [0] * sessions

        async def session(n: int, ws: ClientConnection) -> None:
            async def speak(seq: int) -> None:
                await ws.send(wire.audio_in_frame(numbered(seq, UP_BYTES)))

            async def listen() -> None:
                while heard[n] < chunks:
                    if isinstance(await ws.recv(), bytes):
                        heard[n] += 1

            await asyncio.gather(paced(pace, chunks, speak), listen())

        cpu, bench, began = cpu_seconds(pid), time.process_time(), time.perf_counter()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(session(n, ws) for n, ws in enumerate(sockets))),
                2 * chunks * pace + 1,
            )
        wall = time.perf_counter() - began
        cpu, bench = cpu_seconds(pid) - cpu, time.process_time() - bench
        up = sum(len(c.audio) for c in server.connections) / (2 * live.INPUT_RATE)
        down = sum(heard) * DOWN_BYTES / (2 * live.OUTPUT_RATE)
        with contextlib.suppress(Exception):  # a gateway that fell behind is stopped anyway
            await asyncio.wait_for(
                asyncio.gather(*(_stop(ws, f"load-{n}") for n, ws in enumerate(sockets))),
                WAIT_SECONDS,
            )
    sent = sessions * chunks * pace * 2
    return Load(sessions, wall, cpu, bench, sent, up + down)


# --- the report -------------------------------------------------------------------------


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
            row: dict[str, Way] = {name: measured[name][index] for name in ("direct", "gateway")}
            assert all(len(w.ms) == args.chunks for w in row.values()), "chunks lost"
            for name, w in row.items():
                preempted = f"  (preempted {w.preempted}x)" if way == "down" else ""
                print(
                    f"  {way:4} {name:7}: p50 {pct(w.ms, 0.5):6.2f} ms"
                    f"  p99 {pct(w.ms, 0.99):6.2f} ms{preempted}"
                )
            for stat, share in (("p50", 0.5), ("p99", 0.99)):
                added = pct(row["gateway"].ms, share) - pct(row["direct"].ms, share)
                summary.setdefault(f"{way} {stat}", []).append(added)
            print(
                f"  {way:4} added  : p50 {summary[f'{way} p50'][-1]:6.2f} ms"
                f"  p99 {summary[f'{way} p99'][-1]:6.2f} ms"
            )
        if args.barge_ins:
            cuts = {"direct": await barge_ins_direct(args.barge_ins, pace)}
            cuts["gateway"] = await barge_ins_gateway(args.barge_ins, pace)
            for name, trials in cuts.items():
                silence = statistics.median(t.to_silence for t in trials)
                told = statistics.median(t.to_notice for t in trials)
                summary.setdefault(f"barge-in {name}", []).append(silence)
                print(
                    f"  barge-in {name:7}: to silence {silence:6.1f} ms,"
                    f" to the notice {told:6.1f} ms (median of {len(trials)})"
                )
    print(
        f"medians of {args.rounds} rounds, added by the gateway (target: p50 < 5 ms, p99 < 20 ms)"
    )
    for key, values in summary.items():
        if not key.startswith("barge-in"):
            print(f"  {key}: {statistics.median(values):.2f} ms")
    if args.barge_ins:
        direct_cut = statistics.median(summary["barge-in direct"])
        gateway_cut = statistics.median(summary["barge-in gateway"])
        print(
            f"  barge-in to silence: {gateway_cut:.1f} ms through the gateway,"
            f" {direct_cut:.1f} ms direct (added {gateway_cut - direct_cut:.1f} ms; both"
            f" include the {(SPEECH_BEFORE_STOPPING - 1) * args.pace_ms:g} ms until the"
            " person's chunk that the server's stand-in for voice detection stops at)"
        )
    for sessions in args.sessions:
        load = await sessions_at_once(sessions, args.session_seconds, pace)
        per_audio = load.gateway_cpu / load.carried * 1000
        # A machine with more runnable processes than cores gives each only its share.
        busy = os.getloadavg()[0]
        print(
            f"{load.sessions} live sessions at once, {args.session_seconds:g} s of audio each way"
            f" each: {load.carried:.0f} s of the {load.sent:.0f} s of audio crossed the gateway"
            f" in {load.wall:.1f} s (load average {busy:.1f} on {os.cpu_count()} cores)"
        )
        print(
            f"  gateway: {per_audio:.2f} ms of CPU per second of audio,"
            f" {load.gateway_cpu / load.wall * 100:.0f}% of one core"
        )
        print(
            f"  clients and Live server (this process): "
            f"{load.bench_cpu / load.carried * 1000:.2f} ms per second of audio,"
            f" {load.bench_cpu / load.wall * 100:.0f}% of one core"
        )


def _session_counts(text: str) -> list[int]:
    counts = [int(part) for part in text.split(",") if part.strip()]
    if any(not 0 <= count <= 200 for count in counts):
        raise argparse.ArgumentTypeError("each count of sessions is 0-200")
    return [count for count in counts if count]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--pace-ms", type=float, default=20.0)
    parser.add_argument("--barge-ins", type=int, default=10, help="a round, each side (0: none)")
    parser.add_argument(
        "--sessions",
        type=_session_counts,
        default=[10, 50],
        help="live sessions at once, comma-separated runs (each 1-200; 0: none)",
    )
    parser.add_argument("--session-seconds", type=float, default=5.0)
    return parser.parse_args(argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)
    asyncio.run(main(parse()))
