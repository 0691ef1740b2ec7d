"""scripts/_timeline.py: what a worker counted between two of a reply's steps is shown as
what each count grew by in the span, over every reply and over the slowest, with the
counts derived from two others (another run's callbacks, the time off the CPU)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gateway import timeline
from scripts import _timeline

pytestmark = pytest.mark.unit

# A worker's counts at each step of one reply (cumulative, as a worker writes them).
COUNTED = {
    "worker_began": {"own": 1.0, "callbacks": 100.0, "on_cpu": 50.0, "=runs": 40.0},
    "model_called": {"own": 13.0, "callbacks": 400.0, "on_cpu": 54.0, "=runs": 45.0},
}


def test_a_workers_counts_show_what_each_grew_by_between_two_steps(tmp_path: Path) -> None:
    timeline.stop()
    timeline.start(str(tmp_path), "worker-1")
    try:
        timeline.count_with(lambda step: COUNTED.get(step, {}).items())
        timeline.mark("worker_began", "run-1")
        timeline.mark("model_called", "run-1")
    finally:
        timeline.stop()
    steps = timeline.read(str(tmp_path))["run-1"]
    sent = steps["worker_began"] - 0.010
    wall = 1000 * (steps["model_called"] - steps["worker_began"])
    reply = _timeline.Reply("run-1", sent, steps["model_called"] + 0.010)
    lines = _timeline.breakdown(tmp_path, [reply])
    report = "\n".join(lines)
    assert "counted in the worker from worker_began to model_called (1 replies" in report
    shown = {
        match[1]: float(match[2])
        for line in lines
        if (match := re.match(r"^    (\S+) +(-?[\d.]+) ", line))
    }
    assert shown["own"] == 12.0 and shown["callbacks"] == 300.0
    assert shown["others"] == 288.0  # callbacks of other runs: the run's own taken out
    assert shown["=runs"] == 40.0  # a level: its value at the span's start
    assert shown["off_cpu"] == pytest.approx(wall - 4.0, abs=0.1)  # not on the CPU
    # No counts for the span to the first event sent: that step was not marked.
    assert "from model_called to chunk_sent" not in report
