"""What workers cost a story, told from what the host's speed does: one process and
``GATEWAY_WORKERS=auto`` driven in turns, pair after pair, and their ratio per pair.

``scripts/load.py --workers auto`` runs one process for 40 s and then ``auto`` for 40 s on
fresh gateways; on a shared machine the host's speed differs between those halves (one
process's CPU a story moved 14.1-22.4 ms between rounds of the same code, session 49), and
that decides a round's stories/s ratio more than the code does. Here both gateways are
started once and stay up (``auto``'s workers are started by a warm-up phase, not counted),
and the same users load one, then the other, in short phases (``--duration`` seconds each,
``--ramp`` of it not counted), the order swapped every pair, so a slow minute of the host
falls on both sides of a pair. Each phase is a ``scripts/load.py`` round in all but its
gateways (``_load_stories.Load``: the flagship story, every event checked, every thread
read back by reattach after the phase, outside its figures), and reports each one's server
CPU a story (all its processes, workers included), its main process's, and stories/s.

The figure to read is ``auto``'s CPU a story over one process's, per pair: the work that
exists only because of workers (on 2 cores, ``auto``'s stories/s ratio is about the cores
it gets over one process's, ~1.83 / 1.04, divided by it). With ``--checkout`` given twice
or more, each checkout runs its pair of gateways and the phases go round all of them (the
A/B of two versions of the code, e.g. main's against this one's, in one run).

Bounded: every gateway on 127.0.0.1, each phase's load and check by what is left of
``--timeout``; no phase starts that could not end in time (it is left out, said so).

    .venv/bin/python -m scripts.bench_cores                        # 200 users, 4 pairs
    .venv/bin/python -m scripts.bench_cores --pairs 6 --duration 12
    .venv/bin/python -m scripts.bench_cores --checkout /work/main --checkout .  # main vs this
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import uvloop

from gateway.config import AUTO_WORKERS
from scripts._bench import ROOT, LocalGateway
from scripts._load_machine import Monitor, ensure_open_files, machine, process_tree
from scripts._load_report import Result
from scripts._load_servers import GATEWAY, Setup, served
from scripts._load_stories import Load

ONE, AUTO = Setup("file"), Setup("file", workers=AUTO_WORKERS)
# Seconds a phase needs past its load, for the stories in flight and the check (~10 s at
# 200 users; a phase that takes longer is cut at --timeout).
PHASE_SLACK = 15.0


@dataclasses.dataclass
class Phase:
    """One gateway loaded once: what ``scripts/load.py`` figures of a round."""

    cpu_ms: float  # server CPU a story, all its processes
    main_ms: float  # its main process's alone
    rate: float  # stories/s after the ramp
    text99: float  # the browser's answer to the reply's first text, p99, ms
    load_average: float
    # Over the whole phase (its check too): the share of the CPU spent in the kernel (the
    # pipe's reads and writes, wake-ups), and the main threads' switches off a core a story.
    system: float
    switches: float
    failed: bool
    errors: int
    consistent: str

    @classmethod
    def of(cls, result: Result, kernel: tuple[float, float, int]) -> Phase:
        v = result.values
        user, system, switches = kernel
        return cls(
            v["server_ms"],
            v["main_ms"],
            v["rate"],
            v["text99"],
            v["load_average"],
            system / max(user + system, 1e-9),
            switches / max(v["stories"], 1),
            result.failed,
            sum(result.errors.values()),
            f"{v['consistent']:.0f} of {v['checked']:.0f}",
        )


def phase(args: argparse.Namespace, gateway: LocalGateway, seconds_left: float) -> Phase:
    load_average = float(Path("/proc/loadavg").read_text().split()[0])
    # A phase is timed whole, without the timeline's marks (``load.py --timeline``).
    bounded = argparse.Namespace(**{**vars(args), "timeout": seconds_left, "timeline": False})
    load = Load(bounded, [gateway], kill=False, seed=args.seed)
    monitor = Monitor([gateway.process.pid], None)
    before = kernel(gateway.process.pid)
    uvloop.run(load.run(monitor))
    after = kernel(gateway.process.pid)
    spent = (after[0] - before[0], after[1] - before[1], after[2] - before[2])
    return Phase.of(Result.of(load, monitor, load_average), spent)


def kernel(pid: int) -> tuple[float, float, int]:
    """User and system CPU seconds of the gateway's processes (its workers too, those
    alive now), and their main threads' context switches so far (Linux /proc)."""
    user = system = 0.0
    switches = 0
    tick = os.sysconf("SC_CLK_TCK")
    for each in process_tree(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            user, system = user + int(fields[11]) / tick, system + int(fields[12]) / tick
            status = Path(f"/proc/{each}/status").read_text()
            switches += sum(int(n) for n in re.findall(r"ctxt_switches:\s+(\d+)", status))
    return user, system, switches


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=200, help="users, one socket each (200)")
    parser.add_argument("--ramp", type=float, default=2.0, help="seconds to start them (2)")
    parser.add_argument(
        "--duration", type=float, default=10.0, help="seconds of a phase, ramp included (10)"
    )
    parser.add_argument("--pairs", type=int, default=4, help="phases of each gateway (4)")
    parser.add_argument(
        "--checkout",
        type=Path,
        action="append",
        help="a checkout whose gateway to run (again for each to compare; this one)",
    )
    parser.add_argument("--pace-ms", type=float, default=30.0, help="model pace a chunk (30)")
    parser.add_argument("--story-timeout", type=float, default=30.0, help="seconds (30)")
    parser.add_argument("--timeout", type=float, default=420.0, help="seconds in all (420)")
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout
    checkouts = [path.resolve() for path in args.checkout or [ROOT]]
    # What a load.py round's users are, but for the phases' length: back to back, no cuts.
    args.stories, args.think, args.kill_share, args.seed = sys.maxsize, 0.0, 0.0, 0
    args.frames_per_second, args.user_rate = 0.8 * GATEWAY.user_rate, GATEWAY.user_rate
    ensure_open_files(args.users)
    print(machine())
    print(
        f"{args.users} users (ramp {args.ramp:g} s) back to back, the flagship story, model pace"
        f" {args.pace_ms:g} ms, phases of {args.duration:g} s, a SQLite file each"
    )
    phases: dict[tuple[Path, Setup], list[Phase]] = {}
    with contextlib.ExitStack() as stack:
        gateways: dict[tuple[Path, Setup], LocalGateway] = {}
        for checkout in checkouts:
            for setup in (ONE, AUTO):
                logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cores-")))
                (gateway,) = stack.enter_context(
                    served(args, setup, None, logs=logs, root=checkout)
                )
                gateways[checkout, setup] = gateway
                phases[checkout, setup] = []
        # Not counted: auto starts its workers here, and each gateway warms its path.
        for key, gateway in gateways.items():
            warm = phase(args, gateway, deadline - time.monotonic())
            print(f"warm-up {name(*key)}: {warm.rate:.1f} stories/s, {warm.cpu_ms:.1f} ms a story")
        for pair in range(1, args.pairs + 1):
            # Every other pair in the opposite order, the checkouts' too: A B B A.
            turn = [(checkout, setup) for checkout in checkouts for setup in (ONE, AUTO)]
            if pair % 2 == 0:
                turn.reverse()
            needed = len(turn) * (args.duration + PHASE_SLACK)
            if deadline - time.monotonic() < needed:
                print(f"pair {pair} and after left out: --timeout would end them")
                break
            for key in turn:
                phases[key].append(phase(args, gateways[key], deadline - time.monotonic()))
                done = phases[key][-1]
                print(
                    f"pair {pair} {name(*key):<24} {done.rate:6.1f} stories/s,"
                    f" {done.cpu_ms:5.1f} ms a story (main process {done.main_ms:4.1f}),"
                    f" first text p99 {done.text99:.0f} ms,"
                    f" kernel {100 * done.system:.0f}%, {done.switches:.0f} switches a story,"
                    f" load {done.load_average:.2f}, {done.errors} errors,"
                    f" threads consistent {done.consistent}"
                )
    return report(checkouts, phases)


def name(checkout: Path, setup: Setup) -> str:
    return f"{checkout.name} {'auto' if setup.workers else 'one'}"


def report(checkouts: list[Path], phases: dict[tuple[Path, Setup], list[Phase]]) -> int:
    """Each checkout's auto against its one process, pair by pair, then their medians; with
    several checkouts, each one's CPU ratio against the first's, pair by pair."""
    ratios: dict[Path, list[float]] = {}
    for checkout in checkouts:
        pairs = list(zip(phases[checkout, ONE], phases[checkout, AUTO], strict=False))
        if not pairs:
            continue
        cpu = ratios[checkout] = [auto.cpu_ms / one.cpu_ms for one, auto in pairs]
        rate = [auto.rate / one.rate for one, auto in pairs]
        print(f"\n{checkout} ({len(pairs)} pairs), auto against one process:")
        print("  CPU a story " + " / ".join(f"{r:.3f}" for r in cpu) + f": {spread(cpu)}")
        print("  stories/s   " + " / ".join(f"{r:.2f}" for r in rate) + f": {spread(rate)}")
        for setup in (ONE, AUTO):
            done = phases[checkout, setup]
            print(
                f"  {name(checkout, setup):<24} CPU a story median"
                f" {statistics.median(p.cpu_ms for p in done):.1f} ms"
                f" ({min(p.cpu_ms for p in done):.1f}-{max(p.cpu_ms for p in done):.1f}),"
                f" main process {statistics.median(p.main_ms for p in done):.1f} ms,"
                f" stories/s {statistics.median(p.rate for p in done):.1f},"
                f" first text p99 {statistics.median(p.text99 for p in done):.0f} ms"
            )
    if len(ratios) > 1:
        first, *others = ratios
        for checkout in others:
            against = [b / a for a, b in zip(ratios[first], ratios[checkout], strict=False)]
            print(
                f"\n{checkout.name}'s workers' CPU ratio against {first.name}'s, pair by pair:"
                f" {spread(against)}"
            )
    failed = any(p.failed for done in phases.values() for p in done)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
