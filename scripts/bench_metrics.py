"""What counting costs: runs per second with GATEWAY_METRICS=on against off, in the same run.

Each round starts two fresh gateways at once, one with metrics off and one with them on,
and drives both through the same one-turn text runs as ``scripts/bench_runs.py`` ("안녕"
in, the greeting streamed back, the scripted model at pace 0), for every number of
clients, in short phases that alternate between them (off then on, on then off, ...): on a
machine shared with others, a neighbour's burst lands on both sides of a pair, not on one
side of the round. Each pair gives a ratio (runs/s on/off, CPU per run off/on); a round
prints their medians, then the medians of the rounds (the target keeps the loss under 5%).
The metrics side is scraped at the end of each round, as Prometheus would be, and the
scrape must have counted every run it served.

    .venv/bin/python -m scripts.bench_metrics                 # 3 rounds, 400 runs a side
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
from scripts.bench_runs import BENCH_FLAGS, Phase, gateway_phases, phase_arguments

# Runs/s with metrics on, as a share of the same with them off.
RATIO_TARGET = 0.95


@contextlib.contextmanager
def served(db: str, metrics: str) -> Iterator[LocalGateway]:
    with contextlib.ExitStack() as stack:
        flags = [*BENCH_FLAGS, "--metrics", metrics]
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


def measure_round(
    args: argparse.Namespace, clients: list[int], number: int
) -> dict[int, list[tuple[Phase, Phase]]]:
    """Both gateways up at once; for each number of clients, ``--pairs`` short phases on
    each side, interleaved (off then on, on then off, ...): clients -> (off, on) pairs."""
    pairs: dict[int, list[tuple[Phase, Phase]]] = {c: [] for c in clients}
    with served(args.db, "off") as off, served(args.db, "on") as on:
        tools = client_tools(off)
        done = 0
        for count in clients:
            for turn in range(args.pairs):
                measured = {}
                first_on = (number + turn) % 2 == 0
                order = (("on", on), ("off", off)) if first_on else (("off", off), ("on", on))
                for side, gateway in order:
                    runs = max(1, args.runs // args.pairs)
                    [phase] = uvloop.run(gateway_phases(gateway, runs, [count], tools))
                    measured[side] = phase
                done += len(measured["on"].timings)
                pairs[count].append((measured["off"], measured["on"]))
        counted = runs_counted(on)  # as Prometheus would scrape it
        if counted != done:
            raise RuntimeError(f"GET /metrics counted {counted:g} runs of {done}")
    return pairs


def ratios(pairs: list[tuple[Phase, Phase]]) -> tuple[float, float]:
    """Medians over the pairs: runs/s on/off, and CPU per run off/on (above 1: on is cheaper)."""
    rate = statistics.median(on.rate / off.rate for off, on in pairs)
    cpu = statistics.median(off.cpu_per_run / on.cpu_per_run for off, on in pairs)
    return rate, cpu


def main() -> None:
    parser = phase_arguments(__doc__)
    parser.add_argument(
        "--db",
        choices=("memory", "file"),
        default="memory",
        help="the gateways' store: ':memory:' (default) or a SQLite file in a temporary "
        "directory, as a deployment runs it",
    )
    parser.add_argument(
        "--pairs", type=int, default=8, help="interleaved off/on phases per round (8)"
    )
    args = parser.parse_args()
    clients = [int(c) for c in args.clients.split(",")]
    logging.basicConfig(filename=os.devnull, level=logging.INFO)
    rounds: dict[int, list[tuple[float, float]]] = {c: [] for c in clients}
    for number in range(1, args.rounds + 1):
        measured = measure_round(args, clients, number)
        print(f"round {number}")
        for count in clients:
            off = [o for o, _ in measured[count]]
            on = [o for _, o in measured[count]]
            rate, cpu = ratios(measured[count])
            rounds[count].append((rate, cpu))
            print(
                f"  {count} clients, {len(measured[count])} pairs of "
                f"{len(on[0].timings)} runs: on {statistics.median(p.rate for p in on):.1f} "
                f"vs off {statistics.median(p.rate for p in off):.1f} runs/s, ratio {rate:.3f}; "
                f"CPU/run on {statistics.median(p.cpu_per_run for p in on) * 1000:.2f} vs off "
                f"{statistics.median(p.cpu_per_run for p in off) * 1000:.2f} ms, ratio {cpu:.3f}"
            )
    print(f"\nmedians of {args.rounds} rounds (metrics on / off; target >= {RATIO_TARGET})")
    for count in clients:
        rate = statistics.median(r for r, _ in rounds[count])
        cpu = statistics.median(c for _, c in rounds[count])
        print(f"  {count} clients: runs/s ratio {rate:.3f}, CPU per run ratio {cpu:.3f}")


if __name__ == "__main__":
    main()
