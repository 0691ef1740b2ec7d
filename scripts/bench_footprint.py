"""What the gateway holds: RSS idle, its growth per completed run and per idle WebSocket,
against issue 32's targets; with ``--heap``, where the memory went.

Each round is a fresh ``python -m gateway`` (the demo, the scripted model at pace 0, no
per-user rate limit) on loopback, its threads on a SQLite file (``--db file``, the default)
or in memory (``--db memory``):

- idle: VmRSS once /ping answers and the process has sat still for a second;
- per run: RSS after ``--warm`` runs (everything a first run loads, loaded), then after
  ``--runs`` more, each a one-turn text run on a new thread over /ws by ``--clients``
  connections, each of a user of its own; the growth over those runs, divided by their number;
- per idle socket: ``--sockets`` more /ws connections opened and left idle; the growth,
  divided by their number;
- a worker, with ``--workers N`` (``GATEWAY_WORKERS=N``, docs/multicore.md): the RSS of
  each of the N worker processes the gateway spawned, idle and after the counted runs (the
  median of the N), besides the main process's figures above. Not counted: multiprocessing's
  resource tracker, one more child of ~13 MiB that spawning starts (``scripts/load.py``
  adds up every process of the tree).

RSS moves in pages and with the allocator's arenas, so one round's growth per run is
noisy: the medians of ``--rounds`` rounds are printed against the targets.

Which store is the honest measure of growth per run: a file. In memory, each run's thread
*is* RSS, about 9 KiB of SQLite pages (its events, its event log, the thread index and the
audit rows): the data the user asked to keep, growing as it should until threads expire,
not something the gateway holds on the side. On a file that data is on disk, and what
grows is what the process keeps per run besides it (the hub's bookkeeping, caches, the
memory service); SQLite's page cache is bounded (2 MiB a connection), and the warm-up
runs on a file are enough to fill it, so that it is not counted as growth.

Which interpreter: idle RSS counts every module a start imports, and this checkout's venv
holds the test extras, some of which the gateway's own dependencies would import when they
find them (google-genai httpx2, mcp's; httpx its command line's pygments, pytest's):
``gateway/optional_imports.py`` keeps those out. google-genai's aiohttp (ag-ui-adk's, 9.6 MiB)
stays, as google-genai sends with it where it is installed; the census below names it.
``--python`` runs the gateway on another venv's interpreter, one with only what
``pip install .`` installs: what a deployment holds. The report says which venv its figures
are for, from an idle gateway's own modules (``scripts/_idle_census.py``): those of packages
outside the gateway's requirements, which only a venv with more installed (this checkout's)
makes it import, are named and counted.

``--heap`` runs one more gateway the same way under tracemalloc
(``scripts/_heap_gateway.py``, tracing from the end of the warm-up runs) and prints the
allocation sites that grew most over the runs and over the idle sockets, each with the
gateway's own line that led there: the heap profile that says what to cut, where RSS only
says how much. (What start-up holds is mostly imports, whose C parts tracemalloc does not
see: read it as RSS, ``python -X importtime`` and the modules a start loads.)

    .venv/bin/python -m scripts.bench_footprint              # 3 rounds, then their medians
    .venv/bin/python -m scripts.bench_footprint --db memory  # each run's thread counted too
    .venv/bin/python -m scripts.bench_footprint --heap --rounds 1
    .venv/bin/python -m scripts.bench_footprint --workers 2    # a worker's RSS too
    python3 -m venv /tmp/prod && /tmp/prod/bin/pip install .      # the gateway alone, then
    .venv/bin/python -m scripts.bench_footprint --python /tmp/prod/bin/python
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import uvloop
from websockets.asyncio.client import ClientConnection, connect

from scripts._bench import ROOT, LocalGateway, client_tools, free_port, local_gateway, rss_mib
from scripts._load_machine import process_tree
from scripts.bench_runs import BENCH_FLAGS, USER, gateway_run

# Issue 32's targets: last turn's figures, and a bound per idle connection.
IDLE_MIB = 115.0
RUN_KIB = 3.6
SOCKET_KIB = 25.0
# How long the process sits still before its RSS is read.
SETTLE_SECONDS = 1.0
HEAP_FRAMES = 25
SNAPSHOT_SECONDS = 60.0


@dataclasses.dataclass(frozen=True)
class Footprint:
    idle_mib: float
    run_kib: float
    socket_kib: float
    # A worker process's RSS (the median of the gateway's workers), idle and after the runs;
    # None without workers.
    worker_idle_mib: float | None = None
    worker_mib: float | None = None


async def settled_rss(gateway: LocalGateway) -> float:
    await asyncio.sleep(SETTLE_SECONDS)
    return rss_mib(gateway.process.pid)


def workers(gateway: LocalGateway) -> list[int]:
    """The gateway's worker processes: its children that multiprocessing spawned (not its
    resource tracker, a child too)."""
    return [
        pid
        for pid in process_tree(gateway.process.pid)[1:]
        if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]


def worker_rss(gateway: LocalGateway) -> float | None:
    found = workers(gateway)
    return statistics.median(rss_mib(pid) for pid in found) if found else None


async def runs(gateway: LocalGateway, count: int, clients: int) -> None:
    """``count`` one-turn runs, each on a new thread, shared by ``clients`` connections."""
    tools = client_tools(gateway)
    left = iter(range(count))

    async def client(user: str) -> None:
        async with connect(gateway.ws_url(user), max_size=None, compression=None) as ws:
            for _ in left:
                await gateway_run(ws, tools)

    # A user of its own a connection: one user may keep only so many threads.
    await asyncio.gather(*(client(f"{USER}-{n}") for n in range(clients)))


@contextlib.asynccontextmanager
async def idle_sockets(gateway: LocalGateway, count: int) -> AsyncIterator[list[ClientConnection]]:
    async with contextlib.AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(
                connect(gateway.ws_url(f"idle-{n}"), max_size=None, compression=None)
            )
            for n in range(count)
        ]


async def measure(
    gateway: LocalGateway, args: argparse.Namespace, heap: Heap | None = None
) -> Footprint:
    idle = await settled_rss(gateway)
    worker_idle = worker_rss(gateway)
    await runs(gateway, args.warm, args.clients)
    warm = await settled_rss(gateway)
    if heap:
        heap.signal()  # tracing starts
    await runs(gateway, args.runs, args.clients)
    ran = await settled_rss(gateway)
    worker_ran = worker_rss(gateway)
    if heap:
        heap.snapshots["runs"] = heap.signal()
    async with idle_sockets(gateway, args.sockets):
        connected = await settled_rss(gateway)
        if heap:
            heap.snapshots["sockets"] = heap.signal()
    return Footprint(
        idle,
        (ran - warm) * 1024 / args.runs,
        (connected - ran) * 1024 / args.sockets,
        worker_idle,
        worker_ran,
    )


class Heap:
    """A ``_heap_gateway``'s traced heap, read by signal: tracing starts at the first, and
    each later signal gives a snapshot of what was allocated since, and is still held."""

    def __init__(self, gateway: LocalGateway, directory: Path) -> None:
        self.gateway, self.directory = gateway, directory
        self.signals = 0
        self.snapshots: dict[str, tracemalloc.Snapshot] = {}

    def signal(self) -> tracemalloc.Snapshot:
        done = self.directory / f"signal-{self.signals}.done"
        os.kill(self.gateway.process.pid, signal.SIGUSR1)
        deadline = time.monotonic() + SNAPSHOT_SECONDS
        while not done.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the gateway did not answer a signal in {SNAPSHOT_SECONDS} s")
            time.sleep(0.1)
        self.signals += 1
        snapshots = sorted(self.directory.glob("heap-*.pickle"))
        if not snapshots:
            return tracemalloc.Snapshot([], HEAP_FRAMES)
        latest = max(snapshots, key=lambda path: int(path.stem.split("-")[1]))
        return tracemalloc.Snapshot.load(str(latest))


@contextlib.contextmanager
def gateway_for(
    args: argparse.Namespace, heap_directory: Path | None = None
) -> Iterator[LocalGateway]:
    with tempfile.TemporaryDirectory(prefix="footprint-") as tmp:
        flags = [*BENCH_FLAGS, "--workers", str(args.workers)]
        if args.db == "file":
            flags += ["--db", str(Path(tmp) / "gateway.db")]
        entry: tuple[str, ...] = ("-m", "gateway")
        if heap_directory is not None:
            entry = ("-m", "scripts._heap_gateway", str(heap_directory))
        with local_gateway(*flags, entry=entry, python=args.python) as gateway:
            yield gateway


def which_venv(args: argparse.Namespace) -> str:
    """Which venv the figures are for, as an idle gateway on ``args.python`` shows it: the
    modules it imported, and those of packages outside the gateway's own requirements,
    imported only because the venv has them (``scripts/_idle_census.py``)."""
    flags = ["--host", "127.0.0.1", "--port", str(free_port()), "--db", ":memory:"]
    command = [args.python, "-m", "scripts._idle_census", *flags, "--scripted-pace-ms", "0"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return f"{args.python} (no census: {done.stderr.strip().splitlines()[-1:]})"
    found = json.loads(done.stdout.splitlines()[-1])
    modules = collections.Counter(name.split(".")[0] for name in found["modules"])
    # A .pth hook's module (setuptools' _distutils_hack) is the venv's, not an import's.
    outside = {top: modules[top] for top in found["outside"] if not top.startswith("_")}
    total = sum(modules.values())
    if not outside:
        return (
            f"{args.python}: an idle gateway imported {total} modules, all of the gateway's"
            " own requirements (a venv of the gateway alone, as `pip install .` makes it)"
        )
    extra = ", ".join(f"{top} {count}" for top, count in sorted(outside.items(), key=_most))
    return (
        f"{args.python}: an idle gateway imported {total} modules, {sum(outside.values())} of"
        f" them of packages outside the gateway's requirements, imported only because this"
        f" venv has them (test extras; a deployment's venv has none of them): {extra}"
    )


def _most(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


def _short(frame: tracemalloc.Frame) -> str:
    return f"{'/'.join(Path(frame.filename).parts[-2:])}:{frame.lineno}"


def print_sites(title: str, stats: Sequence[tracemalloc.StatisticDiff], top: int) -> None:
    """Each site: where it was allocated, and the gateway's own line that led there."""
    print(f"\n{title}")
    for stat in stats[:top]:
        frames = list(stat.traceback)  # oldest first
        ours = next((f for f in reversed(frames) if "/gateway/" in f.filename), None)
        print(
            f"  {stat.size_diff / 1024:9.1f} KiB {stat.count_diff:+7d} blocks"
            f"  {_short(frames[-1])}" + (f"  (from {_short(ours)})" if ours else "")
        )


def print_heap(heap: Heap, args: argparse.Namespace, top: int) -> None:
    empty = tracemalloc.Snapshot([], HEAP_FRAMES)
    grew = heap.snapshots["runs"].compare_to(empty, "traceback")
    print_sites(f"held after {args.runs} runs, allocated during them, by site:", grew, top)
    total = sum(stat.size_diff for stat in grew)
    print(f"  all together: {total / 1024:.1f} KiB, {total / 1024 / args.runs:.2f} KiB a run")
    held = heap.snapshots["sockets"].compare_to(heap.snapshots["runs"], "traceback")
    print_sites(f"held by {args.sockets} idle sockets, by site:", held, top)
    total = sum(stat.size_diff for stat in held)
    print(f"  all together: {total / 1024:.1f} KiB, {total / 1024 / args.sockets:.2f} KiB a socket")


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "NOT met"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh gateways (3)")
    parser.add_argument(
        "--db", choices=("file", "memory"), default="file", help="where threads are kept (file)"
    )
    parser.add_argument(
        "--warm",
        type=int,
        help="runs before the count (file: 500, which fills SQLite's page cache; memory: 100)",
    )
    parser.add_argument("--runs", type=int, default=1000, help="runs counted (1000)")
    parser.add_argument("--clients", type=int, default=4, help="connections running them (4)")
    parser.add_argument("--sockets", type=int, default=500, help="idle sockets (500)")
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter the gateway runs on: another venv's, for its dependencies alone",
    )
    parser.add_argument(
        "--workers", type=int, default=0, help="GATEWAY_WORKERS: a worker's RSS too (0: none)"
    )
    parser.add_argument("--heap", action="store_true", help="one more round, under tracemalloc")
    parser.add_argument("--top", type=int, default=12, help="sites the heap profile shows (12)")
    args = parser.parse_args()
    if args.warm is None:
        args.warm = 500 if args.db == "file" else 100
    found = []
    for number in range(1, args.rounds + 1):
        with gateway_for(args) as gateway:
            found.append(uvloop.run(measure(gateway, args)))
        f = found[-1]
        print(
            f"round {number}: idle {f.idle_mib:.1f} MiB, {f.run_kib:.2f} KiB a run,"
            f" {f.socket_kib:.1f} KiB an idle socket"
            + (
                f"; a worker {f.worker_idle_mib:.1f} MiB idle, {f.worker_mib:.1f} after the runs"
                if f.worker_idle_mib is not None and f.worker_mib is not None
                else ""
            )
        )
    if found:
        print(f"\nwhich venv: {which_venv(args)}")
        idle = statistics.median(f.idle_mib for f in found)
        run = statistics.median(f.run_kib for f in found)
        socket = statistics.median(f.socket_kib for f in found)
        print(
            f"\nmedians of {len(found)} rounds, threads on {args.db}, gateway on {args.python},"
            " against issue 32's targets:"
        )
        print(
            f"  idle RSS            {idle:7.1f} MiB  target {IDLE_MIB:g}: {verdict(idle, IDLE_MIB)}"
        )
        print(f"  growth per run      {run:7.2f} KiB  target {RUN_KIB:g}: {verdict(run, RUN_KIB)}")
        print(
            f"  per idle WebSocket  {socket:7.1f} KiB  target {SOCKET_KIB:g}:"
            f" {verdict(socket, SOCKET_KIB)}"
        )
        worker_idle = [f.worker_idle_mib for f in found if f.worker_idle_mib is not None]
        worker_ran = [f.worker_mib for f in found if f.worker_mib is not None]
        if worker_idle and worker_ran:
            print(f"  a worker, idle      {statistics.median(worker_idle):7.1f} MiB")
            print(f"  a worker, after runs{statistics.median(worker_ran):7.1f} MiB")
    if args.heap:
        with (
            tempfile.TemporaryDirectory(prefix="heap-") as tmp,
            gateway_for(args, Path(tmp)) as gateway,
        ):
            heap = Heap(gateway, Path(tmp))
            uvloop.run(measure(gateway, args, heap))
            print_heap(heap, args, args.top)


if __name__ == "__main__":
    main()
