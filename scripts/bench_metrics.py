"""What counting costs: runs per second with GATEWAY_METRICS=on against off, in the same run.

Each round starts two fresh gateways, one with metrics off and one with them on, and drives
each through the same one-turn text runs as ``scripts/bench_runs.py`` ("안녕" in, the
greeting streamed back, the scripted model at pace 0), for every number of clients; which
side goes first alternates from round to round, so a machine that slows down over a round
does not favour either. The metrics side is scraped once a phase, as Prometheus would be,
and the scrape is checked to have counted every run. Printed: each round's runs/s and CPU per
run on both sides, then the medians of the rounds and their ratio (on/off; the target keeps
the loss under 5%).

    .venv/bin/python -m scripts.bench_metrics                 # 3 rounds, 400 runs a phase
    .venv/bin/python -m scripts.bench_metrics --rounds 5 --db file
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import uvloop

from scripts._bench import LocalGateway, client_tools, local_gateway
from scripts.bench_runs import UNLIMITED, Phase, gateway_phases, phase_arguments

# Runs/s with metrics on, as a share of the same with them off.
RATIO_TARGET = 0.95
SIDES = ("off", "on")


@contextlib.contextmanager
def served(db: str, metrics: str) -> Iterator[LocalGateway]:
    with contextlib.ExitStack() as stack:
        flags = [*UNLIMITED, "--metrics", metrics]
        if db == "file":
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-"))
            flags += ["--db", str(Path(directory) / "gateway.db")]
        yield stack.enter_context(local_gateway(*flags))


def runs_counted(gateway: LocalGateway) -> float:
    """The runs a scrape of GET /metrics counts, all outcomes together."""
    with urllib.request.urlopen(f"{gateway.http}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("gateway_runs_total{")
    )


def measure_side(args: argparse.Namespace, metrics: str, clients: list[int]) -> list[Phase]:
    with served(args.db, metrics) as gateway:
        tools = client_tools(gateway)
        phases = []
        for count in clients:
            phases += uvloop.run(gateway_phases(gateway, args.runs, [count], tools))
            if metrics == "on":
                done = sum(len(phase.timings) for phase in phases)
                counted = runs_counted(gateway)
                if counted != done:
                    raise RuntimeError(f"GET /metrics counted {counted:g} runs of {done}")
        return phases


def main() -> None:
    parser = phase_arguments(__doc__)
    parser.add_argument(
        "--db",
        choices=("memory", "file"),
        default="memory",
        help="the gateways' store: ':memory:' (default) or a SQLite file in a temporary "
        "directory, as a deployment runs it",
    )
    args = parser.parse_args()
    clients = [int(c) for c in args.clients.split(",")]
    logging.basicConfig(filename=os.devnull, level=logging.INFO)
    # side -> clients -> each round's phase
    results: dict[str, dict[int, list[Phase]]] = {s: {c: [] for c in clients} for s in SIDES}
    for number in range(1, args.rounds + 1):
        order = SIDES if number % 2 else SIDES[::-1]
        for side in order:
            for phase in measure_side(args, side, clients):
                results[side][phase.clients].append(phase)
        print(f"round {number} ({' then '.join(order)})")
        for count in clients:
            for side in SIDES:
                phase = results[side][count][-1]
                print(
                    f"  metrics {side:3} {count} clients {len(phase.timings)} runs: "
                    f"{phase.rate:6.1f} runs/s, {phase.cpu_per_run * 1000:5.2f} ms CPU/run"
                )
    print(f"\nmedians of {args.rounds} rounds (metrics on / off; target >= {RATIO_TARGET})")
    for count in clients:
        rate = {s: statistics.median(p.rate for p in results[s][count]) for s in SIDES}
        cpu = {s: statistics.median(p.cpu_per_run for p in results[s][count]) for s in SIDES}
        print(
            f"  {count} clients: {rate['on']:.1f} vs {rate['off']:.1f} runs/s, "
            f"ratio {rate['on'] / rate['off']:.3f}; CPU/run {cpu['on'] * 1000:.2f} vs "
            f"{cpu['off'] * 1000:.2f} ms, ratio {cpu['off'] / cpu['on']:.3f}"
        )


if __name__ == "__main__":
    main()
