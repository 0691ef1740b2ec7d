"""Where a reply's first text waited: the gateway's timeline of each run, lined up with the
client's own clock (``scripts/load.py --timeline``).

The gateway marks each run's steps (``gateway.timeline``: ``GATEWAY_TIMELINE`` names a
directory, every process writes its marks there) on the machine's monotonic clock, which is
this script's ``perf_counter`` too on Linux. For each reply whose first text the client
timed (the browser's answer sent, its first TEXT_MESSAGE_CONTENT read), each step is shown
in milliseconds after the answer was sent: its p50, p90 and p99 over every reply, and its
median over the slowest 1% (by first text), with the median of what each step of those
added to the one before it on the first text's way. Steps that run beside that way (the
early RUN_STARTED written, the input's commit known) show their time, not a wait.

A worker's steps carry its counts (``gateway.timeline.count_with``,
``gateway.adk.workers.first_turn``): for each span of ``SPANS`` (the run's task began to
ADK's model call, and on to the first event sent), what the counts grew by in it, over
every reply and over the slowest 1%: the worker's turns, the callbacks it ran (the run's
own and other runs', and of them the pipe's reader's, ``reader``), the CPU they took, the
thread's wait for a core, the collector's time, and what the run waited for from the main
process; a count named ``=...`` is a level at the span's start (runs in flight, callbacks
ready), not a growth. Then what the load client's own thread did from each first text's
write to its read (``scripts._load_client``), and each process's garbage collections
while the replies ran, with how much of a reply's wait a collection of the main process,
or of the reply's worker, filled.

Last, by the time of the round (seconds since the gateway's first mark): where each run's
invocation was placed (the main process or which worker), two seconds a line, with the
moment each worker read its first Start; and the replies' first text p50 and p99, five
seconds a line, with how many of the slowest 1% fall there. A ramp whose runs piled on the
one worker ready while the next was starting shows in both.
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from gateway import timeline
from gateway.timeline import STEPS
from scripts._bench import percentile
from scripts._load_client import Process

__all__ = ["Reply", "breakdown", "same_clock"]

# Steps beside the first text's way: timed, but not a wait of it.
BESIDE = frozenset({"acknowledged", "input_committed", "local"})
ARRIVED = "arrived"
RECEIVED = "received"
CLIENT_STEPS = {
    ARRIVED: "its frame reached the client's connection (data_received)",
    RECEIVED: "the client read its first text",
}
# The main process's role in the timeline's files (a worker's is ``worker-N``).
MAIN = "main"
# Seconds of the round a line of where runs were placed covers, and a line of the replies
# by when their answer was sent.
PLACED_SECONDS = 2.0
REPLIES_SECONDS = 5.0
# The runs in flight in a reply's worker as its task began (``gateway.adk.workers.worker``).
LEVEL = "worker_began/=runs"
# The share of replies, slowest first, whose steps the last columns show.
SLOWEST = 0.01
# The spans of a worker's steps whose counts are shown: the run's task began to ADK's
# model call, the model call to the run's first event sent.
SPANS = (("worker_began", "model_called"), ("model_called", "chunk_sent"))
# The main process's steps whose counts of the moment are shown (``WorkerPool``): a run's
# placing (its worker's runs, starting ones, the least busy's, the events kept) and its
# first event read (its place in the messages of its read, whether its Start went twice).
LEVELS = ("start_sent", "chunk_read")
# Counts derived from two others over a span: (name, what grew, less what).
DERIVED = (
    ("others", "callbacks", "own"),
    ("others_cpu", "cpu", "own_cpu"),
    ("off_cpu", "wall", "on_cpu"),
)


@dataclasses.dataclass(frozen=True)
class Reply:
    """One reply run as its client timed it (``perf_counter`` seconds)."""

    run_id: str
    sent: float  # the browser's answer sent
    first_text: float  # its first TEXT_MESSAGE_CONTENT read
    # Its frame reached the client's connection (``scripts._load_client.Stamped``).
    arrived: float | None = None


def same_clock() -> bool:
    """Whether this process's ``perf_counter`` is the clock the gateway marks with."""
    ours = time.get_clock_info("perf_counter").implementation
    return ours == time.get_clock_info("monotonic").implementation


def breakdown(
    directory: Path, replies: Sequence[Reply], client: Process | None = None
) -> list[str]:
    """The report's lines: each step's time after the answer was sent, what a worker
    counted in its spans, and what the load client did from the first text's write to
    its read (``client``; above)."""
    if not same_clock():
        return ["  timeline: this platform's perf_counter is not the gateway's clock; not shown"]
    roles = timeline.read_by_role(str(directory)) if directory.is_dir() else {}
    marked = timeline.merged(roles)
    runs: list[dict[str, float]] = []
    counts: list[dict[str, float]] = []  # each run's marks, counts too, in the same order
    sent: list[float] = []  # and each one's answer sent
    taken: list[Reply] = []  # and each one as the client timed it
    for reply in sorted(replies, key=lambda reply: reply.first_text - reply.sent):
        steps = marked.get(reply.run_id)
        if steps is None:
            continue
        sent.append(reply.sent)
        taken.append(reply)
        offsets = {step: 1000 * (at - reply.sent) for step, at in steps.items() if step in STEPS}
        if reply.arrived is not None:
            offsets[ARRIVED] = 1000 * (reply.arrived - reply.sent)
        offsets[RECEIVED] = 1000 * (reply.first_text - reply.sent)
        runs.append(offsets)
        counts.append(steps)
    if not runs:
        return ["  timeline: no reply's steps were marked"]
    slowest = runs[-max(1, round(SLOWEST * len(runs))) :]
    order = [*STEPS, ARRIVED, RECEIVED]
    lines = [
        f"  where the first text waited (GATEWAY_TIMELINE, {len(runs)} replies; ms after the"
        f" browser's answer was sent; the slowest {len(slowest)}: median, and what each step"
        " added on the way)",
        f"    {'step':<58} {'p50':>6} {'p90':>6} {'p99':>6} {'slow':>6} {'+':>6}",
    ]
    for step in order:
        every = [offsets[step] for offsets in runs if step in offsets]
        if not every:
            continue
        slow = [offsets[step] for offsets in slowest if step in offsets]
        added = [gap for offsets in slowest if (gap := _added(offsets, step, order)) is not None]
        what = STEPS.get(step) or CLIENT_STEPS[step]
        lines.append(
            f"    {what[:58]:<58} {percentile(every, 0.5):6.0f} {percentile(every, 0.9):6.0f}"
            f" {percentile(every, 0.99):6.0f} {_median(slow):>6} {_median(added):>6}"
        )
    for first, then in SPANS:
        lines += _counted(first, then, counts, counts[-len(slowest) :])
    for step in LEVELS:
        lines += _levels(step, counts, counts[-len(slowest) :])
    if client is not None:
        lines += _client(client, counts, taken, len(slowest))
    lines += _collections(roles, taken, len(slowest))
    start = _began(roles)
    lines += _placed(roles, start)
    lines += _by_time(runs, counts, sent, len(slowest), start)
    return lines


def _client(
    client: Process, marks: Sequence[dict[str, float]], replies: Sequence[Reply], slowest: int
) -> list[str]:
    """What the load client's thread did from each first text's write to the socket
    (``written``) to its frame reaching the connection, and on to the user's read
    (``scripts._load_client``); ``marks`` and ``replies`` in the same order, slowest last."""
    spans: list[dict[str, float]] = []
    slow: list[dict[str, float]] = []
    for index, (steps, reply) in enumerate(zip(marks, replies, strict=True)):
        if "written" not in steps or reply.arrived is None:
            continue
        span = _spent("written→arrived", client, steps["written"], reply.arrived)
        span |= _spent("arrived→read", client, reply.arrived, reply.first_text)
        spans.append(span)
        if index >= len(replies) - slowest:
            slow.append(span)
    if not spans:
        return []
    lines = [
        f"  the load client from the first text's write to its read ({len(spans)} replies;"
        " ms: the span, and the client's thread on a core, waiting for one, collecting,"
        " the latest its tick woke)",
        f"    {'':<58} {'p50':>6} {'p90':>6} {'p99':>6} {'slow':>6}",
    ]
    for name in spans[0]:
        values = [span[name] for span in spans]
        lines.append(
            f"    {name:<58} {percentile(values, 0.5):6.1f} {percentile(values, 0.9):6.1f}"
            f" {percentile(values, 0.99):6.1f} {_median([s[name] for s in slow], '.1f'):>6}"
        )
    lines += client.summary(min(r.sent for r in replies), max(r.first_text for r in replies))
    return lines


def _spent(name: str, client: Process, began: float, ended: float) -> dict[str, float]:
    spent = client.spent(began, ended)
    return {
        name: 1000 * (ended - began),
        f"  {name}: on a core": spent.ran,
        f"  {name}: waiting for a core": spent.waited,
        f"  {name}: collecting": spent.collected,
        f"  {name}: its tick woke late by": spent.late,
    }


def _began(roles: dict[str, dict[str, dict[str, float]]]) -> float:
    """The round's start as the gateway saw it: its first mark of any run (a count's line
    holds a count, not a time; a collection is no run's)."""
    return min(
        at
        for runs in roles.values()
        for run_id, steps in runs.items()
        if not run_id.startswith(timeline.COLLECTION)
        for step, at in steps.items()
        if "/" not in step
    )


def _collections(
    roles: dict[str, dict[str, dict[str, float]]], replies: Sequence[Reply], slowest: int
) -> list[str]:
    """The collections of each process from the first reply's answer to the last one's
    first text, by generation; and of the main process and of each reply's worker, how
    much of the reply's wait (its answer sent to its first text read) a collection filled
    (``replies`` slowest last)."""
    spans = {
        role: sorted(
            (steps["collected"], steps["done"], int(steps.get("done/generation", -1)))
            for run_id, steps in runs.items()
            if run_id.startswith(timeline.COLLECTION) and "done" in steps
        )
        for role, runs in roles.items()
    }
    if not any(spans.values()) or not replies:
        return []
    worker_of = {
        run_id: role
        for role, runs in roles.items()
        if role != MAIN
        for run_id, steps in runs.items()
        if "worker_read" in steps
    }
    began, ended = min(r.sent for r in replies), max(r.first_text for r in replies)
    lines = [
        "  collections while the replies ran (the garbage collector, each process: how many,"
        " ms in all, the longest)",
    ]
    for role, collected in sorted(spans.items()):
        inside = [(end - start, g) for start, end, g in collected if began <= start <= ended]
        by = ", ".join(
            f"generation {g}: {len(times)}, {1000 * sum(times):.0f} ms, {1000 * max(times):.1f}"
            for g in range(3)
            if (times := [took for took, generation in inside if generation == g])
        )
        lines.append(f"    {role:<10} {by or 'none'}")
    filled: dict[str, list[float]] = {"main process": [], "the reply's worker": []}
    slow: dict[str, list[float]] = {name: [] for name in filled}
    for index, reply in enumerate(replies):
        worker = worker_of.get(reply.run_id)
        for name, process in (("main process", MAIN), ("the reply's worker", worker)):
            if process is None:
                continue
            ms = 1000 * sum(
                max(0.0, min(end, reply.first_text) - max(start, reply.sent))
                for start, end, _ in spans.get(process, ())
            )
            filled[name].append(ms)
            if index >= len(replies) - slowest:
                slow[name].append(ms)
    what = "ms of the reply's wait a collection filled, in"
    lines.append(f"    {what:<58} {'p50':>6} {'p90':>6} {'p99':>6} {'slow':>6}")
    for name, values in filled.items():
        if values:
            lines.append(
                f"    {name:<58} {percentile(values, 0.5):6.1f} {percentile(values, 0.9):6.1f}"
                f" {percentile(values, 0.99):6.1f} {_median(slow[name], '.1f'):>6}"
            )
    return lines


def _placed(roles: dict[str, dict[str, dict[str, float]]], began: float) -> list[str]:
    """Where each run's invocation ran (the main process, or the worker that read its
    Start), by when it was placed, ``PLACED_SECONDS`` a line; and when each worker read its
    first Start: a ramp's runs piled on the first worker ready show here."""
    where: dict[str, str] = {}
    for role, runs in roles.items():
        if role != MAIN:
            where.update({run_id: role for run_id, steps in runs.items() if "worker_read" in steps})
    placed: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for run_id, steps in roles.get(MAIN, {}).items():
        if "local" in steps:
            placed[int((steps["local"] - began) // PLACED_SECONDS)][MAIN] += 1
        elif "start_sent" in steps and run_id in where:
            placed[int((steps["start_sent"] - began) // PLACED_SECONDS)][where[run_id]] += 1
    if not placed:
        return []
    columns = [MAIN, *sorted(role for role in roles if role != MAIN)]
    firsts = {
        role: min(steps["worker_read"] for steps in roles[role].values() if "worker_read" in steps)
        for role in columns[1:]
        if any("worker_read" in steps for steps in roles[role].values())
    }
    lines = [
        "  where runs were placed, by seconds since the gateway's first mark (each worker's"
        " first Start read at: "
        + ", ".join(f"{role} {at - began:.1f} s" for role, at in firsts.items())
        + ")",
        f"    {'seconds':<10}" + "".join(f" {role:>9}" for role in columns),
    ]
    for at in range(min(placed), max(placed) + 1):
        span = f"{at * PLACED_SECONDS:g}-{(at + 1) * PLACED_SECONDS:g}"
        lines.append(f"    {span:<10}" + "".join(f" {placed[at][role]:>9}" for role in columns))
    return lines


def _by_time(
    runs: Sequence[dict[str, float]],
    counts: Sequence[dict[str, float]],
    sent: Sequence[float],
    slowest: int,
    began: float,
) -> list[str]:
    """The replies' first text by when the browser's answer was sent, ``REPLIES_SECONDS`` a
    line (``runs``, ``counts`` and ``sent`` in the same order, slowest last): whether the
    slowest 1% are the round's early ones, and the runs in flight in their worker."""
    spans: dict[int, list[int]] = collections.defaultdict(list)
    for index, at in enumerate(sent):
        spans[int((at - began) // REPLIES_SECONDS)].append(index)
    lines = [
        "  the first text by when the browser's answer was sent (seconds since the gateway's"
        " first mark; '=runs': runs in flight in the reply's worker as its task began, median)",
        f"    {'seconds':<10} {'replies':>8} {'p50':>6} {'p99':>6} {'slowest':>8} {'=runs':>6}",
    ]
    for at in sorted(spans):
        chosen = spans[at]
        texts = [runs[index][RECEIVED] for index in chosen]
        level = [counts[i][LEVEL] for i in chosen if LEVEL in counts[i]]
        span = f"{at * REPLIES_SECONDS:g}-{(at + 1) * REPLIES_SECONDS:g}"
        lines.append(
            f"    {span:<10} {len(chosen):>8} {percentile(texts, 0.5):6.0f}"
            f" {percentile(texts, 0.99):6.0f} {sum(i >= len(runs) - slowest for i in chosen):>8}"
            f" {_median(level):>6}"
        )
    return lines


def _counted(
    began: str,
    ended: str,
    every: Sequence[dict[str, float]],
    slowest: Sequence[dict[str, float]],
) -> list[str]:
    """The lines of what a worker counted between two steps (above)."""
    spans = [grown for steps in every if (grown := _grown(steps, began, ended))]
    if not spans:
        return []
    slow = [grown for steps in slowest if (grown := _grown(steps, began, ended))]
    lines = [
        f"  counted in the worker from {began} to {ended} ({len(spans)} replies; ms or counts;"
        " '=': the level at its start)",
        f"    {'count':<58} {'p50':>6} {'p90':>6} {'p99':>6} {'slow':>6}",
    ]
    for name in spans[0]:
        values = [grown[name] for grown in spans if name in grown]
        slow_values = [grown[name] for grown in slow if name in grown]
        lines.append(
            f"    {name:<58} {percentile(values, 0.5):6.1f} {percentile(values, 0.9):6.1f}"
            f" {percentile(values, 0.99):6.1f} {_median(slow_values, '.1f'):>6}"
        )
    return lines


def _levels(
    step: str, every: Sequence[dict[str, float]], slowest: Sequence[dict[str, float]]
) -> list[str]:
    """The lines of the counts a mark of ``step`` carried (above: ``LEVELS``)."""
    names = sorted({key for steps in every for key in steps if key.startswith(f"{step}/")})
    if not names:
        return []
    lines = [
        f"  counted in the main process at {step} ({STEPS[step]})",
        f"    {'count':<51} {'mean':>6} {'p50':>6} {'p90':>6} {'p99':>6} {'slow':>6}",
    ]
    for name in names:
        values = [steps[name] for steps in every if name in steps]
        slow = [steps[name] for steps in slowest if name in steps]
        lines.append(
            f"    {name.partition('/')[2]:<51} {statistics.fmean(values):6.2f}"
            f" {percentile(values, 0.5):6.1f} {percentile(values, 0.9):6.1f}"
            f" {percentile(values, 0.99):6.1f} {_median(slow, '.1f'):>6}"
        )
    return lines


def _grown(steps: dict[str, float], began: str, ended: str) -> dict[str, float]:
    """What each count of ``ended`` grew by since ``began`` (a level: its value at
    ``began``), with the span's wall time and the ``DERIVED`` counts; nothing if either
    step was not counted."""
    if began not in steps or ended not in steps:
        return {}
    grown = {"wall": 1000 * (steps[ended] - steps[began])}
    for key, value in steps.items():
        step, _, name = key.partition("/")
        if step != ended or not name:
            continue
        if name.startswith("="):
            if f"{began}/{name}" in steps:
                grown[name] = steps[f"{began}/{name}"]
        else:  # a count that was not counted yet at the start (a run's asks) was none
            grown[name] = value - steps.get(f"{began}/{name}", 0.0)
    if len(grown) == 1:
        return {}
    for name, total, less in DERIVED:
        if total in grown and less in grown:
            grown[name] = grown[total] - grown[less]
    return grown


def _added(offsets: dict[str, float], step: str, order: Sequence[str]) -> float | None:
    """What ``step`` added to the step before it on the first text's way, in one run."""
    if step in BESIDE or step not in offsets:
        return None
    before = [offsets[s] for s in order[: order.index(step)] if s in offsets and s not in BESIDE]
    return offsets[step] - before[-1] if before else offsets[step]


def _median(values: Sequence[float], spec: str = ".0f") -> str:
    return format(statistics.median(values), spec) if values else "-"
