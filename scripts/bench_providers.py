"""Time to first token and cost per chunk: a provider's stream through the gateway, against
the same stream read directly, for an OpenAI-compatible provider and for Gemini.

All sides read one local provider (``tests.support.providers`` in a process of its own: the real
one's wire format, its first chunk at once, then one every ``--pace-ms``):

- direct: the generation request the gateway's model sent (the provider records it) sent
  again with httpx, its SSE frames read and decoded as they come: the floor.
- adk: a plain ADK Runner in this process on the same agent and model (ADK's adapter and
  the provider's SDK, in-memory sessions): what ADK alone costs over the floor.
- gateway: ``agent-gateway`` in a subprocess (``--model`` naming the provider's model, the
  demo agent, the store of ``--db``) over /ws, a new thread each run.
- before (with ``--before CHECKOUT``): the same, run from another checkout of the gateway
  (main, say, unpacked with ``git archive``), so a change is measured against what it
  changes in the same run, under the same load.

What is measured, p50 and p99 over a round's runs (each chunk's figures over every chunk of
every run), all on the machine's monotonic clock (``time.perf_counter``), which the provider's
process reads too:

- "request at the provider": from a run's start (sending the RunAgentInput, calling the
  Runner, sending the request) to its model request's arrival at the provider, which notes
  the time as the request's head comes in: what each side does before its request leaves.
- "first token": from the run's start to the first frame with text (the first
  TEXT_MESSAGE_CONTENT, ADK's first partial text event): the start's delay and the first
  chunk's way back, the goal's "added to the model's first token" against direct's.
- "a chunk's transit": from the provider's send of a chunk (it notes when it hands each
  frame to its server) to the client's read of its text; the first chunk of each reply,
  and the later ones. Nothing of the start is in it: this is what the goal's "each later
  chunk" names, and the gateway's less direct's is what the gateway adds to a chunk. A
  chunk the gateway holds to join a burst (``gateway.hub.text_bursts``) counts its wait.
- "the provider's sends": the provider's gap between two frames of a reply to each side
  (``--pace-ms`` when it keeps its pace), and how much later than its pace each later
  text chunk left, counted from the reply's first: a provider process slowed during one
  side's runs (it shares the cores with that side's work) sends that side's chunks late,
  which no transit shows but the arrival below does.
- "chunk arrival after direct's": for every direct frame, the time the other side's stream
  reached the same text less the direct frame's own, both counted from their run's start:
  a side whose request leaves later gets every chunk that much later, so this counts the
  start's delay again in every chunk; and the same from each stream's own first token.
- "CPU per chunk": the serving side's CPU time (the gateway's process; this process for the
  others) over the runs, divided by the provider's chunks.
- "waits for a core": how long, over a run, the provider's process and the serving side's
  (the gateway's; this process for the others) were ready to run and had no core (each
  thread's run delay, ``/proc/<pid>/task/*/schedstat``), p50 and p99 over a round's runs.
  A provider that waits is a provider that sends late: what the lag above is made of when
  a side keeps the cores busy.

The sides take turns run by run after a few unmeasured ones; each round is a fresh provider
and gateway, for each store of ``--db`` in turn (in memory; a SQLite file, the production
store, whose streamed text is saved as it goes); the figures are each round's, then their
medians.

    .venv/bin/python -m scripts.bench_providers              # 3 rounds of 30 runs a side
    .venv/bin/python -m scripts.bench_providers --rounds 1 --runs 5 --pace-ms 0
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import dataclasses
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
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
# The gateway's stores: in memory, and a SQLite file (the default, whose commits run on
# aiosqlite's thread and whose streamed text is saved as it goes: docs/durability.md).
STORES = ("memory", "file")
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

    def arrived(self, length: int) -> float:
        """When the text so far first reached ``length`` characters, on the machine's clock."""
        return self.started + self.reached(length)


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
    # Each chunk's transit: from the provider's send to this side's client reading its text;
    # the first chunk of each run's reply, and the later ones.
    first_transits: list[float] = dataclasses.field(default_factory=list)
    later_transits: list[float] = dataclasses.field(default_factory=list)
    # The provider's own sends to this side: each gap between two frames of a reply, and
    # how late each later text chunk left against its reply's first (``sending``).
    send_gaps: list[float] = dataclasses.field(default_factory=list)
    send_lags: list[float] = dataclasses.field(default_factory=list)
    # Seconds each measured run's provider process, and the side's serving process, were
    # ready to run with no core free (``waited``).
    provider_waits: list[float] = dataclasses.field(default_factory=list)
    own_waits: list[float] = dataclasses.field(default_factory=list)


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

    def transit(self, side: str, quantile: float = 0.5, *, later: bool = False) -> float:
        """A chunk's way from the provider's send to the client's read: the first chunk of
        each reply, or (``later``) each later one."""
        found = self.sides[side]
        return percentile(found.later_transits if later else found.first_transits, quantile)

    def sending(self, side: str, quantile: float = 0.5, *, lag: bool = False) -> float:
        """The provider's gap between two sends of a reply to ``side``, or (``lag``) how
        much later than its pace a later chunk left, counted from the reply's first."""
        found = self.sides[side]
        return percentile(found.send_lags if lag else found.send_gaps, quantile)

    def waits(self, side: str, quantile: float = 0.5, *, provider: bool = True) -> float:
        """How long a run of ``side`` had the provider's process (or the side's own) ready
        to run with no core free."""
        found = self.sides[side]
        return percentile(found.provider_waits if provider else found.own_waits, quantile)

    def cpu_per_chunk(self, side: str) -> float:
        return self.sides[side].cpu / (len(self.sides[side].streams) * self.chunks)


def transits(stream: Stream, sent: list[float], texts: list[str]) -> list[float]:
    """Each text chunk's transit, in the provider's order: the stream's arrival of the text
    so far up to the chunk, less when the provider sent the chunk (``sent``, a time each
    frame of the reply, whose texts are ``texts``). A side that joins chunks (the gateway's
    text bursts) gets the held chunk's wait counted in its transit."""
    if len(sent) != len(texts):
        raise RuntimeError(f"the provider sent {len(sent)} frames of a reply of {len(texts)}")
    length = 0
    found = []
    for at, text in zip(sent, texts, strict=True):
        if text:
            length += len(text)
            found.append(stream.arrived(length) - at)
    return found


def sends(sent: list[float], texts: list[str], pace: float) -> tuple[list[float], list[float]]:
    """The provider's own sends of a reply: the gap between each frame and the next, and
    for each text chunk after the first, how much later it left than ``pace`` a frame
    after the first text chunk would have it. A chunk's arrival counted from its stream's
    first token holds this lag and its transit; a provider slowed on one side's turn
    (sharing the cores with that side's work) shows here, not in the transit."""
    gaps = [later - earlier for earlier, later in itertools.pairwise(sent)]
    with_text = [index for index, text in enumerate(texts) if text]
    if not with_text:
        return gaps, []
    first = with_text[0]
    lags = [sent[i] - sent[first] - (i - first) * pace for i in with_text[1:]]
    return gaps, lags


def waited(pid: int, proc: Path = Path("/proc")) -> float:
    """Seconds the threads of process ``pid`` have spent ready to run with no core free
    (the second field of each thread's ``schedstat``: the scheduler's run delay)."""
    total = 0
    for stat in (proc / str(pid) / "task").glob("*/schedstat"):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a thread that ended
            total += int(stat.read_text().split()[1])
    return total / 1e9


def percentile(values: list[float], quantile: float) -> float:
    """The value below which ``quantile`` of ``values`` fall (linear between neighbours)."""
    if quantile == 0.5:
        return statistics.median(values)
    return statistics.quantiles(values, n=100, method="inclusive")[round(quantile * 100) - 1]


@contextlib.contextmanager
def provider_process(provider: Provider, pace_ms: float) -> Iterator[int]:
    """``python -m tests.support.providers`` on ``provider.port`` until the block ends;
    yields its process id."""
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
        yield process.pid
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


def frame_texts(provider: Provider, request: dict[str, Any]) -> list[str]:
    """The reply text each frame of the provider's answer to ``request`` carries."""
    texts = []
    for frame in provider.frames(provider.plan(request), request):
        try:
            texts.append(frame_text(json.loads(frame.removeprefix(b"data: "))))
        except ValueError:  # [DONE]
            texts.append("")
    return texts


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
    provider: Provider,
    provider_pid: int,
    gateway: LocalGateway,
    runs: int,
    pace: float,
    earlier: LocalGateway | None = None,
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
        serving = {"direct": os.getpid(), "adk": os.getpid(), "gateway": gateway.process.pid}
        if earlier is not None:
            old = await stack.enter_async_context(
                connect(earlier.ws_url(), max_size=None, compression=None)
            )
            await asyncio.wait_for(gateway_run(old), RUN_TIMEOUT)
            served_by[BEFORE] = (lambda: gateway_run(old), lambda: cpu_seconds(earlier.process.pid))
            serving[BEFORE] = earlier.process.pid
        sides = {name: Side() for name in served_by}
        # Each run makes one generation request, in the order the runs are made.
        first_request = len(recorded(provider)["arrivals"])
        measured: list[tuple[str, Stream]] = []
        for index in range(WARM_UP_RUNS + runs):
            for name, (run, cpu) in served_by.items():
                before = cpu()
                provider_before, own_before = waited(provider_pid), waited(serving[name])
                stream = await asyncio.wait_for(run(), RUN_TIMEOUT)
                measured.append((name, stream))
                if index >= WARM_UP_RUNS:
                    sides[name].streams.append(stream)
                    sides[name].cpu += cpu() - before
                    sides[name].provider_waits.append(waited(provider_pid) - provider_before)
                    sides[name].own_waits.append(waited(serving[name]) - own_before)
        found = recorded(provider)
        arrivals, sent = found["arrivals"][first_request:], found["sent"][first_request:]
        if len(arrivals) != len(measured):
            raise RuntimeError(f"{len(measured)} runs made {len(arrivals)} model requests")
        texts = frame_texts(provider, request)
        counted = list(zip(measured, arrivals, sent, strict=True))[-runs * len(sides) :]
        for (name, stream), arrived, frames_sent in counted:
            side = sides[name]
            side.requested.append(arrived - stream.started)
            first, *later = transits(stream, frames_sent, texts)
            side.first_transits.append(first)
            side.later_transits.extend(later)
            gaps, lags = sends(frames_sent, texts, pace)
            side.send_gaps.extend(gaps)
            side.send_lags.extend(lags)
    chunks = len(provider.plan(request).text)
    return Round(chunks, sides)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs"


def listed(figures: dict[str, float], unit: Callable[[float], str] = ms) -> str:
    """Each side's figure, in the order of the sides: "direct 1.0 ms, adk 2.8 ms, ..."."""
    return ", ".join(f"{side} {unit(value)}" for side, value in figures.items())


def report(title: str, rounds: list[Round]) -> None:
    sides = list(rounds[0].sides)

    def across(
        measure: Callable[..., float], *args: object, of: Iterable[str] = sides, **named: object
    ) -> dict[str, float]:
        """Each side's median over the rounds of ``measure(round, side, *args, **named)``."""
        return {
            side: statistics.median(measure(r, side, *args, **named) for r in rounds) for side in of
        }

    cpu = across(Round.cpu_per_chunk)
    print(f"  {title}:")
    for name, quantile in (("p50", 0.5), ("p99", 0.99)):
        first = across(Round.first_token, quantile)
        others = [side for side in sides if side != "direct"]
        delay = across(Round.chunk_delay, quantile, of=others)
        later = across(Round.chunk_delay, quantile, of=others, own_start=True)
        arrived = across(Round.request_arrived, quantile)
        print(f"    request at the provider {name}: " + listed(arrived) + " after the run's start")
        print(
            f"    first token {name}: "
            + listed(first)
            + f"; gateway adds {ms(first['gateway'] - first['direct'])} to direct,"
            f" {ms(first['gateway'] - first['adk'])} to adk"
        )
        transit = {kind: across(Round.transit, quantile, later=kind) for kind in (False, True)}
        print(
            f"    a chunk's transit {name}, provider to client: first chunk "
            + listed(transit[False])
            + "; later chunks "
            + listed(transit[True])
            + "; gateway adds"
            f" {ms(transit[False]['gateway'] - transit[False]['direct'])} and"
            f" {ms(transit[True]['gateway'] - transit[True]['direct'])} to direct"
        )
        gap = across(Round.sending, quantile)
        lag = across(Round.sending, quantile, lag=True)
        print(
            f"    the provider's sends {name}: gap between frames "
            + listed(gap)
            + "; a later chunk behind its pace from the reply's first "
            + listed(lag)
        )
        print(
            f"    chunk arrival after direct's {name}, from the run's start: "
            + listed(delay)
            + "; from each stream's first token: "
            + listed(later)
        )
        waits = {whose: across(Round.waits, quantile, provider=whose) for whose in (True, False)}
        print(
            f"    waits for a core {name}, a run: the provider's while serving "
            + listed(waits[True])
            + "; the side's own process "
            + listed(waits[False])
        )
    print(
        "    CPU per chunk: "
        + listed(cpu, us)
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
    parser.add_argument(
        "--db",
        default=",".join(STORES),
        help="the gateways' stores, comma-separated, each its own provider and gateways in"
        " every round: memory, file (a SQLite file, the production default) (both)",
    )
    args = parser.parse_args()
    stores = args.db.split(",")
    if unknown := set(stores) - set(STORES):
        parser.error(f"--db: {', '.join(sorted(unknown))}? say memory, file or both")
    for name in args.providers.split(","):
        results: dict[str, list[Round]] = {store: [] for store in stores}
        for _ in range(args.rounds):
            for store in stores:  # taking turns, so each round's load is both stores'
                results[store].append(one_round(PROVIDERS[name](), store, args))
        for store, found in results.items():
            print(
                f"{name} ({PROVIDERS[name].model_name}), the gateway's store {store}:"
                f" {found[0].chunks} text chunks a reply, {args.pace_ms:g} ms apart;"
                f" {args.runs} runs a side in each of {args.rounds} rounds"
            )
            for number, result in enumerate(found, 1):
                report(f"round {number}", [result])
            if len(found) > 1:
                report(f"medians of {len(found)} rounds", found)


def one_round(provider: Provider, store: str, args: argparse.Namespace) -> Round:
    """A fresh provider and gateway (and the ``--before`` one), each gateway on ``store``."""
    provider.port = free_port()
    os.environ.update(provider.env())
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="providers-")))

        def gateway(side: str, root: Path = ROOT) -> LocalGateway:
            flags: tuple[str, ...] = ("--model", provider.model_name, "--user-rate", "0")
            if store == "file":  # after local_gateway's own --db :memory:, so it wins
                flags += ("--db", str(folder / f"{side}.db"))
            return stack.enter_context(local_gateway(*flags, root=root))

        pid = stack.enter_context(provider_process(provider, args.pace_ms))
        this = gateway("gateway")
        before = gateway(BEFORE, args.before.resolve()) if args.before is not None else None
        return uvloop.run(measure(provider, pid, this, args.runs, args.pace_ms / 1000, before))


if __name__ == "__main__":
    main()
