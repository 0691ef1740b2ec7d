"""What the scripts and their tests share: a real gateway in a subprocess on a loopback port,
and the alternating rounds a benchmark times its ways in (``alternating``, ``timed``).

Stdlib only, so every script can import it whatever else it needs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclasses.dataclass(frozen=True)
class LocalGateway:
    port: int
    process: subprocess.Popen[bytes]
    log: Path
    # Seconds from spawning the process to the first healthy /ping.
    ready_after: float

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, user: str = "demo") -> str:
        return f"ws://127.0.0.1:{self.port}/ws?user={user}"


@contextlib.contextmanager
def local_gateway(
    *flags: str,
    timeout: float = 60.0,
    entry: Sequence[str] = ("-m", "gateway"),
    python: str = sys.executable,
    root: Path = ROOT,
    log: Path | None = None,
) -> Iterator[LocalGateway]:
    """Runs ``python -m gateway`` (scripted model, pace 0, in-memory db) until the block ends.

    Yields once GET /ping answers; uvicorn binds only after start-up, so the first answer
    means the agent is built and warmed. The server's output goes to a file (a pipe nobody
    reads would fill up and stall the server), quoted in the error if start-up fails.
    ``entry`` is what follows ``python`` before the gateway's flags, for a script that runs
    the gateway its own way (``scripts/_load_users.py``); ``python`` the interpreter (another
    venv's: the gateway's code is this checkout's either way, its dependencies that venv's);
    ``root`` the checkout whose gateway it runs (another one, to compare with this one);
    ``log`` the file its output goes to, kept after the block for what the gateway said as
    it stopped (by default one in a temporary directory, removed with it).
    """
    port = free_port()
    with contextlib.ExitStack() as stack:
        if log is None:
            log = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gateway-")))
            log /= "server.log"
        command = [python, *entry, "--host", "127.0.0.1", "--port", str(port)]
        command += ["--db", ":memory:", "--scripted-pace-ms", "0", *flags]
        with log.open("wb") as out:
            started = time.perf_counter()
            process = subprocess.Popen(command, cwd=root, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_healthy(port, process, log, started + timeout)
            yield LocalGateway(port, process, log, time.perf_counter() - started)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_healthy(port: int, process: subprocess.Popen[bytes], log: Path, deadline: float) -> None:
    url = f"http://127.0.0.1:{port}/ping"
    while time.perf_counter() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the gateway exited with {process.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.02)
    raise RuntimeError(f"the gateway did not answer {url} in time:\n{log.read_text()}")


def user_turn(
    text: str,
    *,
    thread_id: str | None = None,
    tools: Sequence[object] = (),
    earlier: Sequence[str] = (),
    **fields: object,
) -> dict[str, object]:
    """A RunAgentInput of one user message (none for ``text=""``: a branch switch, a
    resend), on ``thread_id`` or a new thread, every other id fresh. ``earlier``: texts of
    user messages the input carries before it (a client's history); ``fields`` replace the
    input's own (``forwardedProps``)."""
    said = [*earlier, text] if text else list(earlier)
    return {
        "threadId": thread_id or uuid.uuid4().hex,
        "runId": uuid.uuid4().hex,
        "protocolVersion": "1.0",
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": t} for t in said],
        "tools": list(tools),
        "context": [],
        "state": {},
        "forwardedProps": {},
        **fields,
    }


def client_tools(gateway: LocalGateway) -> list[object]:
    """The client tools a browser declares, as GET /tools gives them."""
    with urllib.request.urlopen(f"{gateway.http}/tools", timeout=5) as response:
        tools: list[object] = json.load(response)["tools"]
    return tools


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest rank: the smallest value with at least q of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def cpu_seconds(pid: int | None = None, thread: int | None = None) -> float:
    """User + system CPU time a process has used (Linux /proc); this process when pid is None;
    only its thread ``thread`` when given (a process's main thread has the process's id).

    CPU per run is the steadier figure on a shared machine: it does not move when a
    neighbour takes a core, where runs per second does.
    """
    if pid is None:
        return time.process_time()
    stat = Path(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    """A process's resident memory now (VmRSS in /proc/<pid>/status), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def rounds_parser(doc: str, rounds: int = 15) -> argparse.ArgumentParser:
    """A benchmark's command line: described by its docstring's first paragraph, with
    ``--rounds``, the alternating rounds it times (``alternating``)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=rounds, help=f"alternating rounds ({rounds})")
    return parser


def timed(work: Callable[[], object], repeats: int) -> float:
    """Seconds of one ``work()``, averaged over ``repeats`` in a row: enough of them that
    a timer's tick is nothing."""
    started = time.perf_counter()
    for _ in range(repeats):
        work()
    return (time.perf_counter() - started) / repeats


def timing(
    ways: Mapping[str, Callable[[], object]], repeats: int
) -> dict[str, Callable[[], float]]:
    """Pieces of work by name, as ``alternating`` takes ways: each ``timed`` over ``repeats``."""
    return {name: functools.partial(timed, work, repeats) for name, work in ways.items()}


def alternating(
    rounds: int,
    ways: Mapping[str, Callable[[], float]],
    check: Callable[[], object] | None = None,
) -> dict[str, float]:
    """Each way's median over ``rounds`` rounds, by name; a round times every way once, in
    turn (a way returns the seconds it measured), after ``check()`` (that the ways still
    do the same). Alternating, a neighbour's load falls on every way alike: the ratios
    hold on a shared machine, where the absolute figures move with the neighbours."""
    seen: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):
        if check is not None:
            check()
        for name, way in ways.items():
            seen[name].append(way())
    return {name: statistics.median(figures) for name, figures in seen.items()}


def print_against(
    before: tuple[str, float],
    now: tuple[str, float],
    rounds: int,
    *,
    width: int = 20,
    digits: int = 0,
) -> None:
    """How a bench of two ways (``alternating``) ends: each way's median, in µs a story, the
    second as a ratio of the first."""
    (was_name, was), (is_name, is_) = before, now
    print(f"{was_name:<{width}}{was * 1e6:8.{digits}f} µs a story (median of {rounds})")
    print(f"{is_name:<{width}}{is_ * 1e6:8.{digits}f} µs a story ({is_ / was:.2f}x)")
