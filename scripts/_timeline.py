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
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from gateway import timeline
from scripts._bench import percentile

__all__ = ["Reply", "breakdown", "same_clock"]

# Steps beside the first text's way: timed, but not a wait of it.
BESIDE = frozenset({"acknowledged", "input_committed", "local"})
RECEIVED = "received"
# The share of replies, slowest first, whose steps the last columns show.
SLOWEST = 0.01


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
    """The report's lines: each step's time after the answer was sent (above)."""
    if not same_clock():
        return ["  timeline: this platform's perf_counter is not the gateway's clock; not shown"]
    marked = timeline.read(str(directory)) if directory.is_dir() else {}
    runs: list[dict[str, float]] = []
    for reply in replies:
        steps = marked.get(reply.run_id)
        if steps is None:
            continue
        offsets = {step: 1000 * (at - reply.sent) for step, at in steps.items()}
        offsets[RECEIVED] = 1000 * (reply.first_text - reply.sent)
        runs.append(offsets)
    if not runs:
        return ["  timeline: no reply's steps were marked"]
    runs.sort(key=lambda offsets: offsets[RECEIVED])
    slowest = runs[-max(1, round(SLOWEST * len(runs))) :]
    order = [*timeline.STEPS, RECEIVED]
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
        what = timeline.STEPS.get(step, "the client read its first text")
        lines.append(
            f"    {what[:58]:<58} {percentile(every, 0.5):6.0f} {percentile(every, 0.9):6.0f}"
            f" {percentile(every, 0.99):6.0f} {_median(slow):>6} {_median(added):>6}"
        )
    return lines


def _added(offsets: dict[str, float], step: str, order: Sequence[str]) -> float | None:
    """What ``step`` added to the step before it on the first text's way, in one run."""
    if step in BESIDE or step not in offsets:
        return None
    before = [offsets[s] for s in order[: order.index(step)] if s in offsets and s not in BESIDE]
    return offsets[step] - before[-1] if before else offsets[step]


def _median(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.0f}" if values else "-"
