"""What ``scripts/load.py`` measures of the machine and the servers' processes: their RSS and
CPU sampled over a round (``Monitor``, from /proc), the machine it ran on, and the open files
its users need.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import os
import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from scripts._bench import cpu_seconds, rss_mib

SAMPLE_SECONDS = 0.25
# Open files this process needs besides one socket a user; the server needs as many.
SPARE_FILES = 200


@dataclasses.dataclass(frozen=True)
class Sample:
    at: float
    rss_mib: float
    # What the processes grew by since each was first seen: a worker that ``auto`` starts
    # at the first run counts its growth, not the imports every idle worker holds.
    grown_mib: float
    server_cpu: float
    # The gateways' own processes alone, without their workers: the one loop every event
    # crosses, whose share says how near it is to a core's worth.
    main_cpu: float
    own_cpu: float
    machine_cpu: float


def machine_cpu() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants that are alive now (Linux /proc)."""
    found = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                found += process_tree(int(child))
    return found


class Monitor:
    """The servers' RSS and CPU (all their processes', workers included, added up), this
    process's CPU and the machine's, over a round."""

    def __init__(
        self,
        pids: Sequence[int],
        statements: Callable[[], collections.Counter[str] | None] | None,
    ) -> None:
        self.servers = pids
        self.samples: list[Sample] = []
        self._first_rss: dict[int, float] = {}
        # When the users were done: the RSS peak is of the load, not of the check after it.
        self.load_ended: float | None = None
        # The statements the database ran, by text, counted by PostgreSQL
        # (``pg_stat_statements``), from now to the end of the load (not the check after
        # it); None where not counted.
        self._count = statements or (lambda: None)
        self._counted_before = self._count()
        self.statements: collections.Counter[str] | None = None

    @property
    def pids(self) -> list[int]:
        """The servers' processes, their workers (GATEWAY_WORKERS) included."""
        return [pid for server in self.servers for pid in process_tree(server)]

    def take(self) -> None:
        pids = self.pids
        rss = {pid: _alive(rss_mib, pid) for pid in pids}
        for pid, mib in rss.items():
            self._first_rss.setdefault(pid, mib)
        self.samples.append(
            Sample(
                time.perf_counter(),
                sum(rss.values()),
                sum(mib - self._first_rss[pid] for pid, mib in rss.items() if mib),
                sum(_alive(cpu_seconds, pid) for pid in pids),
                sum(_alive(cpu_seconds, pid) for pid in self.servers),
                cpu_seconds(),
                machine_cpu(),
            )
        )

    def mark(self) -> None:
        self.take()
        self.load_ended = self.samples[-1].at
        before, after = self._counted_before, self._count()
        if before is not None and after is not None:
            self.statements = after - before  # a Counter's difference keeps what grew

    async def sample_until_cancelled(self) -> None:
        while True:
            self.take()
            await asyncio.sleep(SAMPLE_SECONDS)

    def nearest(self, moment: float) -> Sample:
        return min(self.samples, key=lambda sample: abs(sample.at - moment))


def _alive(figure: Callable[[int], float], pid: int) -> float:
    """A process's figure, 0 for one that exited since it was listed."""
    try:
        return figure(pid)
    except OSError:
        return 0.0


def machine() -> str:
    """The machine a run measured: its cores, their model, and how busy it was already."""
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown CPU",
    )
    load_averages = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return f"machine: {os.cpu_count()} cores ({model}), load average {load_averages} (1, 5, 15 min)"


def ensure_open_files(users: int) -> None:
    """Raises the soft limit on open files if needed; the server inherits it."""
    needed = users + SPARE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise SystemExit(
            f"{users} users need {needed} open files here and as many in the server, but"
            f" ulimit -n allows {soft} (at most {hard}): raise the hard limit or use fewer users"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
