"""Time to first token and cost per chunk: a provider's stream through the gateway, against
the same stream read directly, for an OpenAI-compatible provider and for Gemini.

All sides read one local provider (``tests.support.providers`` in a process of its own: the real
one's wire format, its first chunk at once, then one every ``--pace-ms``):

- direct: the generation request the gateway's model sent (the provider records it) sent
  again with httpx, its SSE frames read and decoded as they come: the floor.
- adk: a plain ADK Runner in this process on the same agent and model (ADK's adapter and
  the provider's SDK, in-memory sessions): what ADK alone costs over the floor.
- gateway: ``agent-gateway`` in a subprocess (``--model`` naming the provider's model, the
  demo agent, in-memory store) over /ws, a new thread each run.
- before (with ``--before CHECKOUT``): the same, run from another checkout of the gateway
  (main, say, unpacked with ``git archive``), so a change is measured against what it
  changes in the same run, under the same load.

"request at the provider" is from a run's start (sending the RunAgentInput, calling the
Runner, sending the request) to its model request's arrival at the provider, which notes
the time on the machine's monotonic clock (``time.perf_counter``) as the request's head
comes in: what each side does before its request leaves, p50 and p99 over a round's runs.
"first token" is from sending the request (the RunAgentInput) to the first frame with
text (the first TEXT_MESSAGE_CONTENT, ADK's first partial text event), p50 and p99 over a
round's runs. "chunk delay" is how much later each chunk's text arrives than it did
directly: for every direct frame, the time the other side's stream reached the same text
less the frame's own time, p50 and p99 over every frame of every set of runs; and the same
for the later chunks counted from each stream's first token: a side whose request reaches
the provider later (ADK builds its request for a few ms) gets every chunk that much later,
which the first token shows already; what is left is what each chunk's own way adds.
"CPU per chunk" is the serving side's CPU time (the gateway's process; this process for the
others) over the runs, divided by the provider's chunks. The sides take turns run by run after a
few unmeasured ones; each round is a fresh provider and gateway; the figures are each
round's, then their medians.

    .venv/bin/python -m scripts.bench_providers              # 3 rounds of 30 runs a side
    .venv/bin/python -m scripts.bench_providers --rounds 1 --runs 5 --pace-ms 0
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
import uvloop
from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.run_config import RunConfig
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from websockets.asyncio.client import ClientConnection, connect

from gateway.adk.hosting import Hosted, runnable_app
from gateway.doors.warmup import skip_absent_a2a
from gateway.examples.navigator.agent import build_agent, load_catalog
from gateway.models import names
from scripts._bench import ROOT, LocalGateway, cpu_seconds, free_port, local_gateway, user_turn
from tests.support.providers import ChatCompletions, GeminiApi, Provider
from tests.support.providers.provider import RECORDED_PATH

PROMPT = "안녕"
WARM_UP_RUNS = 5
RUN_TIMEOUT = 30.0
PROVIDERS: dict[str, type[Provider]] = {"chat-completions": ChatCompletions, "gemini": GeminiApi}
SIDES = ("direct", "adk", "gateway")
BEFORE = "before"


@dataclasses.dataclass(frozen=True)
class Stream:
    """When each piece of a run's text arrived: seconds from the request, text so far;
    and when the run began (``time.perf_counter``)."""

    times: list[float]
    lengths: list[int]
    started: float

    @property
    def first_token(self) -> float:
        return self.times[0]

    def reached(self, length: int) -> float:
        """When the text so far first reached ``length`` characters."""
        return self.times[min(bisect.bisect_left(self.lengths, length), len(self.times) - 1)]


class Collector:
    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.times: list[float] = []
        self.lengths: list[int] = []

    def text(self, piece: str) -> None:
        if piece:
            self.times.append(time.perf_counter() - self.started)
            self.lengths.append((self.lengths[-1] if self.lengths else 0) + len(piece))

    def stream(self) -> Stream:
        if not self.times:
            raise RuntimeError("a run streamed no text")
        return Stream(self.times, self.lengths, self.started)


@dataclasses.dataclass
class Side:
    streams: list[Stream] = dataclasses.field(default_factory=list)
    # CPU seconds of the side's serving work over its measured runs.
    cpu: float = 0.0
    # Seconds from each measured run's start to its model request's arrival at the provider.
    requested: list[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Round:
    chunks: int
    sides: dict[str, Side]

    def first_token(self, side: str, quantile: float = 0.5) -> float:
        return percentile([s.first_token for s in self.sides[side].streams], quantile)

    def request_arrived(self, side: str, quantile: float = 0.5) -> float:
        return percentile(self.sides[side].requested, quantile)

    def chunk_delay(self, side: str, quantile: float = 0.5, *, own_start: bool = False) -> float:
        """How much later each chunk arrives than directly; ``own_start``: each counted from
        its stream's first token, so what the first token waited is not counted again."""
        direct, other = self.sides["direct"].streams, self.sides[side].streams
        return percentile(
            [
                later.reached(length)
                - at
                - (later.first_token - floor.first_token if own_start else 0.0)
                for floor, later in zip(direct, other, strict=True)
                for at, length in zip(
                    floor.times[own_start:], floor.lengths[own_start:], strict=True
                )
            ],
            quantile,
        )

    def cpu_per_chunk(self, side: str) -> float:
        return self.sides[side].cpu / (len(self.sides[side].streams) * self.chunks)


def percentile(values: list[float], quantile: float) -> float:
    """The value below which ``quantile`` of ``values`` fall (linear between neighbours)."""
    if quantile == 0.5:
        return statistics.median(values)
    return statistics.quantiles(values, n=100, method="inclusive")[round(quantile * 100) - 1]


@contextlib.contextmanager
def provider_process(provider: Provider, pace_ms: float) -> Iterator[Provider]:
    """``python -m tests.support.providers`` on ``provider.port`` until the block ends."""
    kind = next(name for name, kind in PROVIDERS.items() if isinstance(provider, kind))
    command = [sys.executable, "-m", "tests.support.providers", kind, "--port", str(provider.port)]
    process = subprocess.Popen([*command, "--pace-ms", str(pace_ms)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{provider.port}{provider.probe_path}")
                break
            except (urllib.error.URLError, ConnectionError):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the local provider did not start") from None
                time.sleep(0.05)
        yield provider
    finally:
        process.terminate()
        process.wait(10)


def recorded(provider: Provider) -> dict[str, Any]:
    """The provider's generation requests (``generations``) and when each arrived
    (``arrivals``, ``time.perf_counter``: the machine's monotonic clock, which this process
    reads too)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{provider.port}{RECORDED_PATH}") as answer:
        found: dict[str, Any] = json.load(answer)
        return found


def frame_text(frame: Any) -> str:
    """The reply text a chunk carries: ``delta.content``, or a Gemini candidate's parts."""
    if not isinstance(frame, dict):
        return ""
    if "choices" in frame:
        return "".join((c.get("delta") or {}).get("content") or "" for c in frame["choices"])
    return "".join(
        part.get("text", "")
        for candidate in frame.get("candidates") or []
        for part in (candidate.get("content") or {}).get("parts") or []
        if not part.get("thought")
    )


async def direct_run(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Stream:
    collected = Collector()
    async with client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                collected.text(frame_text(json.loads(line[len("data: ") :])))
    return collected.stream()


def adk_runner(provider: Provider) -> Callable[[], Any]:
    """A plain ADK Runner on the demo agent with the provider's model, as GATEWAY_MODEL
    builds it; returns one run."""
    skip_absent_a2a()
    catalog = load_catalog()
    agent = build_agent(names.build(provider.model_name), catalog)
    runner = Runner(
        app=runnable_app(Hosted(agent, catalog=catalog)),
        session_service=InMemorySessionService(),
        auto_create_session=True,
    )
    config = RunConfig(streaming_mode=StreamingMode.SSE)

    async def run() -> Stream:
        collected = Collector()
        message = types.Content(role="user", parts=[types.Part(text=PROMPT)])
        async for event in runner.run_async(
            user_id="bench", session_id=uuid.uuid4().hex, new_message=message, run_config=config
        ):
            if event.partial and event.content and event.content.parts:
                collected.text("".join(p.text or "" for p in event.content.parts if not p.thought))
        return collected.stream()

    return run


async def gateway_run(ws: ClientConnection) -> Stream:
    frame = user_turn(PROMPT)
    collected = Collector()
    await ws.send(json.dumps(frame))
    while True:
        event = json.loads(await ws.recv())
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            collected.text(event["delta"])
        elif event["type"] == "RUN_ERROR":
            raise RuntimeError(f"the gateway failed a run: {event}")
        elif event["type"] == "RUN_FINISHED":
            return collected.stream()


async def measure(
    provider: Provider, gateway: LocalGateway, runs: int, earlier: LocalGateway | None = None
) -> Round:
    async with contextlib.AsyncExitStack() as stack:
        ws = await stack.enter_async_context(
            connect(gateway.ws_url(), max_size=None, compression=None)
        )
        client = await stack.enter_async_context(httpx.AsyncClient(timeout=RUN_TIMEOUT))
        await asyncio.wait_for(gateway_run(ws), RUN_TIMEOUT)
        request = recorded(provider)["generations"][-1]
        url = f"http://127.0.0.1:{provider.port}{provider.generation_path}"
        adk = adk_runner(provider)
        this_process = time.process_time
        served_by: dict[str, tuple[Callable[[], Any], Callable[[], float]]] = {
            "direct": (lambda: direct_run(client, url, request), this_process),
            "adk": (adk, this_process),
            "gateway": (lambda: gateway_run(ws), lambda: cpu_seconds(gateway.process.pid)),
        }
        if earlier is not None:
            old = await stack.enter_async_context(
                connect(earlier.ws_url(), max_size=None, compression=None)
            )
            await asyncio.wait_for(gateway_run(old), RUN_TIMEOUT)
            served_by[BEFORE] = (lambda: gateway_run(old), lambda: cpu_seconds(earlier.process.pid))
        sides = {name: Side() for name in served_by}
        # Each run makes one generation request, in the order the runs are made.
        first_request = len(recorded(provider)["arrivals"])
        measured: list[tuple[str, Stream]] = []
        for index in range(WARM_UP_RUNS + runs):
            for name, (run, cpu) in served_by.items():
                before = cpu()
                stream = await asyncio.wait_for(run(), RUN_TIMEOUT)
                measured.append((name, stream))
                if index >= WARM_UP_RUNS:
                    sides[name].streams.append(stream)
                    sides[name].cpu += cpu() - before
        arrivals = recorded(provider)["arrivals"][first_request:]
        if len(arrivals) != len(measured):
            raise RuntimeError(f"{len(measured)} runs made {len(arrivals)} model requests")
        counted = list(zip(measured, arrivals, strict=True))[-runs * len(sides) :]
        for (name, stream), arrived in counted:
            sides[name].requested.append(arrived - stream.started)
    chunks = len(provider.plan(request).text)
    return Round(chunks, sides)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs"


def report(title: str, rounds: list[Round]) -> None:
    def median(values: Iterable[float]) -> float:
        return statistics.median(values)

    sides = list(rounds[0].sides)
    cpu = {side: median(r.cpu_per_chunk(side) for r in rounds) for side in sides}
    print(f"  {title}:")
    for name, quantile in (("p50", 0.5), ("p99", 0.99)):
        first = {side: median(r.first_token(side, quantile) for r in rounds) for side in sides}
        others = [side for side in sides if side != "direct"]
        delay = {side: median(r.chunk_delay(side, quantile) for r in rounds) for side in others}
        later = {
            side: median(r.chunk_delay(side, quantile, own_start=True) for r in rounds)
            for side in others
        }
        arrived = {
            side: median(r.request_arrived(side, quantile) for r in rounds) for side in sides
        }
        print(
            f"    request at the provider {name}: "
            + ", ".join(f"{side} {ms(arrived[side])}" for side in sides)
            + " after the run's start"
        )
        print(
            f"    first token {name}: "
            + ", ".join(f"{side} {ms(first[side])}" for side in sides)
            + f"; gateway adds {ms(first['gateway'] - first['direct'])} to direct,"
            f" {ms(first['gateway'] - first['adk'])} to adk"
        )
        print(
            f"    chunk delay against direct {name}: "
            + ", ".join(f"{side} {ms(delay[side])}" for side in delay)
            + "; from the stream's first token: "
            + ", ".join(f"{side} {ms(later[side])}" for side in later)
        )
    print(
        "    CPU per chunk: "
        + ", ".join(f"{side} {us(cpu[side])}" for side in sides)
        + f"; gateway/direct {cpu['gateway'] / cpu['direct']:.1f},"
        f" gateway/adk {cpu['gateway'] / cpu['adk']:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh providers and gateways (3)")
    parser.add_argument("--runs", type=int, default=30, help="measured runs a side a round (30)")
    parser.add_argument(
        "--pace-ms", type=float, default=10.0, help="the provider's delay between chunks (10)"
    )
    parser.add_argument(
        "--providers", default=",".join(PROVIDERS), help="which, comma-separated (both)"
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="another checkout of the gateway, measured as side 'before' in the same runs",
    )
    args = parser.parse_args()
    for name in args.providers.split(","):
        results = []
        for _ in range(args.rounds):
            provider = PROVIDERS[name]()
            provider.port = free_port()
            os.environ.update(provider.env())
            flags = ("--model", provider.model_name, "--user-rate", "0")
            with contextlib.ExitStack() as stack:
                stack.enter_context(provider_process(provider, args.pace_ms))
                gateway = stack.enter_context(local_gateway(*flags))
                before = (
                    stack.enter_context(local_gateway(*flags, root=args.before.resolve()))
                    if args.before is not None
                    else None
                )
                results.append(uvloop.run(measure(provider, gateway, args.runs, before)))
        print(
            f"{name} ({PROVIDERS[name].model_name}): {results[0].chunks} text chunks a reply,"
            f" {args.pace_ms:g} ms apart; {args.runs} runs a side in each of {args.rounds} rounds"
        )
        for number, result in enumerate(results, 1):
            report(f"round {number}", [result])
        if len(results) > 1:
            report(f"medians of {len(results)} rounds", results)


if __name__ == "__main__":
    main()
