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
own and other runs'), the CPU they took, the thread's wait for a core, the collector's
time, and what the run waited for from the main process; a count named ``=...`` is a
level at the span's start (runs in flight, callbacks ready), not a growth.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from gateway import timeline
from gateway.timeline import STEPS
from scripts._bench import percentile

__all__ = ["Reply", "breakdown", "same_clock"]

# Steps beside the first text's way: timed, but not a wait of it.
BESIDE = frozenset({"acknowledged", "input_committed", "local"})
RECEIVED = "received"
# The share of replies, slowest first, whose steps the last columns show.
SLOWEST = 0.01
# The spans of a worker's steps whose counts are shown: the run's task began to ADK's
# model call, the model call to the run's first event sent.
SPANS = (("worker_began", "model_called"), ("model_called", "chunk_sent"))
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


def same_clock() -> bool:
    """Whether this process's ``perf_counter`` is the clock the gateway marks with."""
    ours = time.get_clock_info("perf_counter").implementation
    return ours == time.get_clock_info("monotonic").implementation


def breakdown(directory: Path, replies: Sequence[Reply]) -> list[str]:
    """The report's lines: each step's time after the answer was sent, and what a worker
    counted in its spans (above)."""
    if not same_clock():
        return ["  timeline: this platform's perf_counter is not the gateway's clock; not shown"]
    marked = timeline.read(str(directory)) if directory.is_dir() else {}
    runs: list[dict[str, float]] = []
    counts: list[dict[str, float]] = []  # each run's marks, counts too, in the same order
    for reply in sorted(replies, key=lambda reply: reply.first_text - reply.sent):
        steps = marked.get(reply.run_id)
        if steps is None:
            continue
        offsets = {step: 1000 * (at - reply.sent) for step, at in steps.items() if step in STEPS}
        offsets[RECEIVED] = 1000 * (reply.first_text - reply.sent)
        runs.append(offsets)
        counts.append(steps)
    if not runs:
        return ["  timeline: no reply's steps were marked"]
    slowest = runs[-max(1, round(SLOWEST * len(runs))) :]
    order = [*STEPS, RECEIVED]
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
        what = STEPS.get(step, "the client read its first text")
        lines.append(
            f"    {what[:58]:<58} {percentile(every, 0.5):6.0f} {percentile(every, 0.9):6.0f}"
            f" {percentile(every, 0.99):6.0f} {_median(slow):>6} {_median(added):>6}"
        )
    for began, ended in SPANS:
        lines += _counted(began, ended, counts, counts[-len(slowest) :])
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
