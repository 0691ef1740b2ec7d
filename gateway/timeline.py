"""A run's timeline, opt-in: when each step from an input's frame to its first text happened.

Theory of operation. The first text of a reply crosses two or three processes (the main
process reads the frame, admits it, reads the thread, plans; a worker runs ADK and the
model; the main process translates the chunk, waits for the input's commit and writes it),
and each step waits for a busy loop's turn. To see which wait is long for the slowest runs,
``GATEWAY_TIMELINE`` names a directory, and every process of the gateway (the main one and
each worker) marks the steps of each run there (``mark``): one file a process, a line a
mark, ``[run id, step, seconds]`` in JSON, the seconds on the machine's monotonic clock
(``CLOCK_MONOTONIC``: one clock for every process of a machine, and Python's
``perf_counter`` on Linux), so a reader lines up one run's marks across processes and
against its client's own clock (``scripts/load.py --timeline``).

Off (the default), ``mark`` is one read of a global and a return. On, a mark is a tuple
appended to a list, written ``BATCH`` at a time (one write system call) and at the
process's exit. A step marked more than once for a run (each model call, each chunk) is
taken at its first by the reader: the first text is what the steps lead to.

The steps, in the order a reply's first text takes them, are ``STEPS``.

Each process also marks its garbage collector's collections, which stop its loop whatever
run is waiting (a whole-heap one of the main process took 60 ms of CPU in session 43):
each as the run id ``COLLECTION`` and a number, its ``collected`` and ``done`` moments,
and its generation as the count ``done/generation``, so a reader sees which of a slow
reply's waits a collection filled, and in which process.

A process may also count what happened up to a step (``count_with``): a worker's loop
counts its turns, the callbacks it ran (the run's own, and every run's), the CPU they
took, the time its thread waited for a core, and what the run asked of the main process
(``gateway.adk.workers.first_turn``). Each count is a line of its own, named
``step/count`` and holding the count where a mark holds its time, so a reader subtracts one
step's counts from a later one's and sees what filled the time between them: work of the
run's own, other runs' work, a wait for the CPU, or a wait for the main process.
"""

from __future__ import annotations

import atexit
import gc
import itertools
import os
import time
from collections.abc import Callable, Iterable

import msgspec

from gateway import logs

__all__ = [
    "BATCH",
    "COLLECTION",
    "STEPS",
    "count_with",
    "mark",
    "merged",
    "on",
    "read",
    "read_by_role",
    "start",
    "stop",
    "text",
    "written",
]

# Marks written at once: a write a few hundred marks, a few dozen runs.
BATCH = 512

# Each step, and where it is marked.
STEPS: dict[str, str] = {
    "read": "the input's frame decoded by its door",
    "admitted": "admitted by the hub (its RUN_STARTED may go out)",
    "acknowledged": "its RUN_STARTED written to the socket",
    "claimed": "the run has its thread (claimed, read)",
    "driven": "the run's driver starts (planned)",
    "local": "its invocation starts in the main process",
    "start_sent": "its Start sent to a worker (the worker chosen)",
    "worker_read": "the worker read its Start",
    "worker_began": "the worker's run task began",
    "model_called": "ADK calls the model",
    "model_woke": "the offline model's pace is over (its timer fired)",
    "model_chunk": "ADK has the model's first chunk",
    "chunk_sent": "the worker sends the run's first event",
    "chunk_read": "the main process read it from the pipe",
    "taken": "the driver took the run's first event",
    "input_committed": "the run knows its input is committed",
    "emitted": "its first text emitted to the run's outbox",
    "written": "its first text written to the socket",
}

# The run id of a collection's marks, before its number: no run's id starts so.
COLLECTION = "~collection-"

_marks: list[tuple[str, str, float]] | None = None
_file = -1
_encoder = msgspec.json.Encoder()
# The first text of a run by its message id, until it is written to a socket (``written``).
_texts: dict[str, str] = {}
# What this process counts at a step, as (name, count) pairs (``count_with``).
Counts = Callable[[str], Iterable[tuple[str, float]]]
_counts: Counts | None = None
# Each collection's number, the moment the one under way began, and the marks of those
# not written yet (they go with the next batch of the runs' marks, not count towards it).
_collections = itertools.count(1)
_collecting = 0.0
_collected_marks: list[tuple[str, str, float]] = []


def on() -> bool:
    """Whether this process marks steps."""
    return _marks is not None


def start(directory: str, role: str) -> None:
    """Marks from now on into ``directory`` (made if need be), in a file named by ``role``
    (``main``, ``worker-1``) and this process's id; nothing for an empty ``directory``."""
    global _marks, _file
    if not directory or _marks is not None:
        return
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{role}-{os.getpid()}.jsonl")
    _file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    _marks = []
    gc.callbacks.append(_collected)
    atexit.register(stop)


def stop() -> None:
    """Writes what is buffered and marks no more."""
    global _marks, _file
    if _marks is None:
        return
    _write()
    os.close(_file)
    _marks, _file = None, -1
    gc.callbacks.remove(_collected)
    _texts.clear()
    count_with(None)


def count_with(counts: Counts | None) -> None:
    """Each mark of a step also writes what ``counts`` returns for it (it is called with
    the step's name, in the marking context), each pair as the line ``step/name``."""
    global _counts
    _counts = counts


def mark(step: str, run_id: str | None = None, levels: Iterable[tuple[str, float]] = ()) -> None:
    """Marks ``step`` of ``run_id`` now (by default the run the log lines name here:
    ``gateway.logs.bind``); nothing while off or outside any run. ``levels``: counts of
    the moment the mark carries as well, each a line as ``count_with``'s are (build them
    only while ``on``: off, they are thrown away)."""
    if _marks is None:
        return
    run_id = run_id or logs.bound_run()
    if run_id:
        _marks.append((run_id, step, time.monotonic()))
        _marks.extend((run_id, f"{step}/{name}", value) for name, value in levels)
        if _counts is not None:
            _marks.extend((run_id, f"{step}/{name}", value) for name, value in _counts(step))
        if len(_marks) >= BATCH:
            _write()


def _collected(phase: str, info: dict[str, int]) -> None:
    """``gc.callbacks``': a collection's start and end, marked (above)."""
    global _collecting
    if phase == "start":
        _collecting = time.monotonic()
    elif _marks is not None:
        collection = f"{COLLECTION}{next(_collections)}"
        _collected_marks.append((collection, "collected", _collecting))
        _collected_marks.append((collection, "done", time.monotonic()))
        _collected_marks.append((collection, "done/generation", info["generation"]))


def text(run_id: str, message_id: str) -> None:
    """A run's first text is emitted under ``message_id``: ``written`` marks it for the run
    once a door writes it."""
    if _marks is not None:
        _texts.setdefault(message_id, run_id)
        mark("emitted", run_id)


def written(message_id: str) -> None:
    """A door wrote a chunk of text of ``message_id`` to a socket: the run whose first text
    it is (``text``) has it ``written``."""
    if _marks is not None and (run_id := _texts.pop(message_id, None)) is not None:
        mark("written", run_id)


def read(directory: str) -> dict[str, dict[str, float]]:
    """Every run's steps as marked in ``directory``, each at its first mark (no
    collection's: ``read_by_role``)."""
    return merged(read_by_role(directory))


def merged(roles: dict[str, dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """``read_by_role``'s marks as ``read``'s: every process's steps of a run together
    (runs only: a process's collections are its own, in ``read_by_role``)."""
    runs: dict[str, dict[str, float]] = {}
    for marked in roles.values():
        for run_id, marks in marked.items():
            if run_id.startswith(COLLECTION):
                continue
            steps = runs.setdefault(run_id, {})
            for step, at in marks.items():
                steps[step] = min(at, steps.get(step, at))
    return runs


def read_by_role(directory: str) -> dict[str, dict[str, dict[str, float]]]:
    """``read``, each role's marks apart (``main``, ``worker-1``: a worker started again in
    its place shares its role): which process ran a run, and from when each marked."""
    roles: dict[str, dict[str, dict[str, float]]] = {}
    decoder = msgspec.json.Decoder(tuple[str, str, float])
    for name in sorted(os.listdir(directory)):
        runs = roles.setdefault(name.rsplit("-", 1)[0], {})
        with open(os.path.join(directory, name), "rb") as lines:
            for line in lines:
                run_id, step, at = decoder.decode(line)
                steps = runs.setdefault(run_id, {})
                steps[step] = min(at, steps.get(step, at))
    return roles


def _write() -> None:
    global _marks, _collected_marks
    if _marks is None or not (_marks or _collected_marks):
        return
    # Each list swapped before it is read: a collection marked meanwhile goes in the next.
    marks, _marks = _marks, []
    collected, _collected_marks = _collected_marks, []
    marks += collected
    os.write(_file, b"".join(_encoder.encode(m) + b"\n" for m in marks))
