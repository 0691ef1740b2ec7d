"""What traces cost: runs per second and CPU per run, traces exported against traces off.

Each round starts two fresh gateways one after the other (``python -m gateway``, the demo,
the scripted model at pace 0, ``--db :memory:``), one with traces off (no ``OTEL_*``) and
one exporting over OTLP/HTTP to a collector on loopback (``OTEL_EXPORTER_OTLP_ENDPOINT``,
the same OpenTelemetry SDK and batch processor a deployment runs). Each phase is measured
in four parts with the modes taking turns, so that the load of a shared machine, which
moves within seconds, falls on both. Each gateway is warmed by a few runs, then driven
through the same one-turn text runs as ``scripts/bench_runs.py`` ("안녕" in, the greeting
streamed back in 20 chunks, every run on a new thread) by C websocket clients.

A traced run exports its run span and ADK's invoke_workflow, invoke_agent and generate_content
spans, with a store_commit event for each commit it joined. The collector
(``tests.support.traces.OtlpReceiver``) decodes every request as a real one would, in a
process of its own as a deployment's is: in this one, its decoding would take the CPU of the
clients that drive the traced phases and of nothing else, and slow those phases for a
reason that is not the gateway's. The figures that matter are the gateway's: "cpu ms/run"
is the serving process's CPU over the phase divided by its runs, the steadier figure on a
shared machine, and "loop ms/run" the part of it on the event loop (the main thread); the
rest is the other threads', the exporter's encoding and sending above all, so the summary
says where what tracing adds goes. Each round names the machine's load as it began.

    .venv/bin/python -m scripts.bench_traces              # 3 rounds, then their medians
    .venv/bin/python -m scripts.bench_traces --rounds 5 --runs 400 --clients 1,8
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence

import uvloop

from scripts._bench import ROOT, LocalGateway, client_tools, cpu_seconds, local_gateway
from scripts.bench_runs import (
    BENCH_FLAGS,
    Phase,
    gateway_phases,
    joined,
    phase_arguments,
    slices,
)
from tests.support.traces import OtlpReceiver

# Issue 28's target: traces to a local collector cost under 10% of runs per second.
OVERHEAD_TARGET = 0.10
WARM_UP_RUNS = 10
MODES = ("off", "traced")


@contextlib.contextmanager
def environment(variables: dict[str, str]) -> Iterator[None]:
    """The process's environment, which a gateway started now inherits, with ``variables``
    set and every other OTEL_* variable unset; restored afterwards."""
    saved = dict(os.environ)
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        del os.environ[name]
    os.environ.update(variables)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@dataclasses.dataclass(frozen=True)
class Measured:
    """A phase, and the CPU its gateway spent on the event loop (the main thread) and on its
    other threads (the span exporter's among them) over the phase's parts, their sockets'
    opening and closing included."""

    phase: Phase
    loop_cpu: float
    others_cpu: float

    @property
    def cpu_per_run(self) -> float:
        return (self.loop_cpu + self.others_cpu) / len(self.phase.timings)

    @property
    def loop_per_run(self) -> float:
        return self.loop_cpu / len(self.phase.timings)

    @property
    def others_per_run(self) -> float:
        return self.others_cpu / len(self.phase.timings)


async def measured_slice(
    gateway: LocalGateway, runs: int, clients: int, tools: list[object]
) -> tuple[Phase, float, float]:
    """One part of a phase, and the CPU seconds of its event loop and of its other threads."""
    pid = gateway.process.pid
    process, loop = cpu_seconds(pid), cpu_seconds(pid, thread=pid)
    [phase] = await gateway_phases(gateway, runs, [clients], tools)
    loop = cpu_seconds(pid, thread=pid) - loop
    return phase, loop, cpu_seconds(pid) - process - loop


async def measure(
    gateways: dict[str, LocalGateway], order: Sequence[str], runs: int, clients: Sequence[int]
) -> dict[str, list[Measured]]:
    """Each gateway warmed, then for each number of clients one phase of each, measured in
    ``SLICES`` parts with the modes taking turns (in ``order``, then reversed, and so on):
    on a shared machine whose load moves within seconds, both modes meet the same moments."""
    tools = client_tools(gateways["off"])
    for gateway in gateways.values():
        await gateway_phases(gateway, WARM_UP_RUNS, [1], tools)
    phases: dict[str, list[Measured]] = {mode: [] for mode in gateways}
    for count in clients:
        parts: dict[str, list[Phase]] = {mode: [] for mode in gateways}
        loops, others = dict.fromkeys(gateways, 0.0), dict.fromkeys(gateways, 0.0)
        for index, sliced in enumerate(slices(runs, count)):
            for mode in order if index % 2 == 0 else reversed(order):
                part, loop, other = await measured_slice(gateways[mode], sliced, count, tools)
                parts[mode].append(part)
                loops[mode] += loop
                others[mode] += other
        for mode, measured in parts.items():
            phases[mode].append(Measured(joined(measured), loops[mode], others[mode]))
    return phases


@dataclasses.dataclass(frozen=True)
class Collector:
    """The collector's process: ``endpoint`` is what OTEL_* takes."""

    endpoint: str
    process: subprocess.Popen[str]

    def received(self) -> int:
        """How many spans have arrived so far."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return int(self.process.stdout.readline())


@contextlib.contextmanager
def collector_process() -> Iterator[Collector]:
    """A collector in a process of its own (this script with ``--collector``)."""
    command = [sys.executable, "-m", "scripts.bench_traces", "--collector"]
    pipe = subprocess.PIPE
    with subprocess.Popen(command, cwd=ROOT, stdin=pipe, stdout=pipe, text=True) as process:
        assert process.stdout is not None and process.stdin is not None
        try:
            yield Collector(process.stdout.readline().strip(), process)
        finally:
            process.stdin.close()  # it ends as its input does
            process.wait(timeout=10)


def serve_collector() -> None:
    """The collector's side: prints its endpoint, then the spans received so far for each
    line read, until its input ends."""
    with OtlpReceiver() as receiver:
        print(receiver.endpoint, flush=True)
        for _ in sys.stdin:
            with receiver.lock:
                print(len(receiver.spans), flush=True)


def otel_variables(mode: str, collector: Collector) -> dict[str, str]:
    """What turns a gateway's traces on: none for "off", the collector for "traced"."""
    if mode == "off":
        return {}
    # The SDK's batch delay is 5 s; a shorter one keeps the spans of a short phase current.
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "1000"}


def row(mode: str, measured: Measured) -> str:
    phase = measured.phase
    return f"{mode:<8}{phase.clients:>8}{len(phase.timings):>6}{phase.rate:>10.1f}" + (
        f"{measured.cpu_per_run * 1000:>14.2f}{measured.loop_per_run * 1000:>14.2f}"
    )


def main() -> None:
    parser = phase_arguments(__doc__ or "")
    parser.add_argument("--collector", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.collector:
        serve_collector()
        return
    concurrency = [int(c) for c in args.clients.split(",")]
    logging.basicConfig(filename=os.devnull, level=logging.INFO)
    # Per number of clients, each round's traced/off ratios of runs/s and of CPU per run,
    # and what tracing added to a run's CPU on the event loop and on the other threads.
    rates: dict[int, list[float]] = {clients: [] for clients in concurrency}
    cpus: dict[int, list[float]] = {clients: [] for clients in concurrency}
    loops: dict[int, list[float]] = {clients: [] for clients in concurrency}
    others: dict[int, list[float]] = {clients: [] for clients in concurrency}
    header = (
        f"{'traces':<8}{'clients':>8}{'runs':>6}{'runs/s':>10}{'cpu ms/run':>14}{'loop ms/run':>14}"
    )
    with collector_process() as collector:
        for number in range(1, args.rounds + 1):
            print(f"round {number} (load {os.getloadavg()[0]:.1f})\n{header}")
            order = MODES if number % 2 else tuple(reversed(MODES))
            before = collector.received()
            with contextlib.ExitStack() as stack:
                gateways = {}
                for mode in MODES:  # each process reads OTEL_* as it starts
                    with environment(otel_variables(mode, collector)):
                        gateways[mode] = stack.enter_context(local_gateway(*BENCH_FLAGS))
                phases = uvloop.run(measure(gateways, order, args.runs, concurrency))
            for index, clients in enumerate(concurrency):
                off, traced = phases["off"][index], phases["traced"][index]
                print(row("off", off))
                print(row("traced", traced))
                rates[clients].append(traced.phase.rate / off.phase.rate)
                cpus[clients].append(traced.cpu_per_run / off.cpu_per_run)
                loops[clients].append(traced.loop_per_run - off.loop_per_run)
                others[clients].append(traced.others_per_run - off.others_per_run)
            # The traced gateway's exit flushed what its batches held.
            print(f"  spans received: {collector.received() - before}")
    print(
        f"\ntraced against off, medians of the {args.rounds} rounds (load {os.getloadavg()[0]:.1f})"
    )
    for clients in concurrency:
        rate, cpu = statistics.median(rates[clients]) - 1, statistics.median(cpus[clients]) - 1
        verdict = "within" if -rate < OVERHEAD_TARGET else "over"
        print(
            f"traced against off, {clients} client{'s' if clients > 1 else ''}: "
            f"runs/s {rate:+.1%}, cpu/run {cpu:+.1%} "
            f"({verdict} the {OVERHEAD_TARGET:.0%} target for runs/s); a run's CPU "
            f"{statistics.median(loops[clients]) * 1000:+.2f} ms on the event loop, "
            f"{statistics.median(others[clients]) * 1000:+.2f} ms on other threads (the exporter's)"
        )


if __name__ == "__main__":
    main()
