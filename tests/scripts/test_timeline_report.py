"""scripts/_timeline.py: what a worker counted between two of a reply's steps is shown as
what each count grew by in the span, over every reply and over the slowest, with the
counts derived from two others (another run's callbacks, the time off the CPU); and, by
the time of the round, where runs were placed and how slow the replies' first texts were."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
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


def marked(directory: Path, name: str, *marks: tuple[str, str, float]) -> None:
    """A process's timeline file as ``gateway.timeline`` writes it, at chosen moments."""
    with (directory / f"{name}.jsonl").open("ab") as lines:
        lines.writelines(msgspec.json.encode(mark) + b"\n" for mark in marks)


def rows(lines: list[str], after: str) -> dict[str, list[str]]:
    """The table under the line that starts with ``after``, by its first column."""
    start = next(n for n, line in enumerate(lines) if line.startswith(after))
    table: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("    "):
            break
        first, *rest = line.split()
        table[first] = rest
    return table


def test_runs_are_shown_by_where_and_when_they_were_placed(tmp_path: Path) -> None:
    marked(tmp_path, "main-10", ("a", "local", 100.0), ("b", "start_sent", 100.5))
    marked(tmp_path, "main-10", ("c", "start_sent", 103.0), ("d", "start_sent", 103.1))
    marked(tmp_path, "main-10", ("e", "start_sent", 103.5))
    marked(tmp_path, "worker-1-11", ("b", "worker_read", 100.6), ("c", "worker_read", 103.1))
    # Worker 2 died and was started again in its place: one role, two files.
    marked(tmp_path, "worker-2-12", ("d", "worker_read", 103.2))
    marked(tmp_path, "worker-2-13", ("e", "worker_read", 103.6), ("e", "worker_began/own", 1))
    roles = timeline.read_by_role(str(tmp_path))
    assert sorted(roles) == ["main", "worker-1", "worker-2"]
    assert sorted(roles["worker-2"]) == ["d", "e"]
    assert timeline.read(str(tmp_path))["e"] == {
        "start_sent": 103.5,
        "worker_read": 103.6,
        "worker_began/own": 1,
    }
    reply = _timeline.Reply("e", 103.4, 104.0)
    lines = _timeline.breakdown(tmp_path, [reply])
    [title] = [line for line in lines if line.startswith("  where runs were placed")]
    assert title.endswith("first Start read at: worker-1 0.6 s, worker-2 3.2 s)")
    assert lines[lines.index(title) + 1].split() == ["seconds", "main", "worker-1", "worker-2"]
    placed = rows(lines, "  where runs were placed")
    assert placed == {"0-2": ["1", "1", "0"], "2-4": ["0", "1", "2"]}


def test_replies_are_shown_by_when_their_answer_was_sent(tmp_path: Path) -> None:
    marks = [("first", "read", 100.0)]
    # Three replies: the slowest (900 ms) early in the round, two faster ones later.
    for run, at in (("slow", 101.0), ("fast", 106.0), ("faster", 107.0)):
        marks += [(run, "start_sent", at), (run, "worker_began/=runs", 7 if run == "slow" else 3)]
    marked(tmp_path, "main-10", *marks)
    replies = [
        _timeline.Reply("slow", 101.0, 101.9),
        _timeline.Reply("fast", 106.0, 106.2),
        _timeline.Reply("faster", 107.0, 107.1),
    ]
    by_time = rows(_timeline.breakdown(tmp_path, replies), "  the first text by when")
    # seconds: replies, p50, p99, of the slowest 1% (here the one slowest), =runs
    assert by_time == {"0-5": ["1", "900", "900", "1", "7"], "5-10": ["2", "100", "200", "0", "3"]}


def test_the_main_processs_counts_at_a_runs_placing_and_first_event_read_are_shown(
    tmp_path: Path,
) -> None:
    marks = []
    # Ten replies placed in a worker with 4 runs (one starting), the least busy at 2; the
    # slowest one's first event came 90th of a read of 100, and its Start went twice.
    for n in range(10):
        slowest = n == 9
        marks += [
            (f"r{n}", "start_sent", 100.0 + n),
            (f"r{n}", "start_sent/=runs", 4),
            (f"r{n}", "start_sent/=starting", 1),
            (f"r{n}", "start_sent/=least", 2),
            (f"r{n}", "chunk_read", 100.2 + n),
            (f"r{n}", "chunk_read/=before", 90 if slowest else 0),
            (f"r{n}", "chunk_read/=read", 100 if slowest else 10),
            (f"r{n}", "chunk_read/=resent", 1 if slowest else 0),
        ]
    marked(tmp_path, "main-10", *marks)
    replies = [_timeline.Reply(f"r{n}", 100.0 + n, 100.3 + n + (n == 9)) for n in range(10)]
    lines = _timeline.breakdown(tmp_path, replies)
    placed = rows(lines, "  counted in the main process at start_sent")
    # count: mean, p50, p90, p99, the slowest 1%'s median
    assert placed == {
        "=least": ["2.00", "2.0", "2.0", "2.0", "2.0"],
        "=runs": ["4.00", "4.0", "4.0", "4.0", "4.0"],
        "=starting": ["1.00", "1.0", "1.0", "1.0", "1.0"],
    }
    read = rows(lines, "  counted in the main process at chunk_read")
    assert read["=before"][0] == "9.00" and read["=before"][-1] == "90.0"
    assert read["=resent"] == ["0.10", "0.0", "0.0", "1.0", "1.0"]


def test_a_collection_is_shown_with_the_share_of_a_replys_wait_it_filled(
    tmp_path: Path,
) -> None:
    collection = f"{timeline.COLLECTION}1"
    # A whole-heap collection of the main process, 100 ms from 100.1, and one before the
    # round's first run (start-up), which moves neither the round's start nor a reply.
    marked(
        tmp_path,
        "main-10",
        (f"{timeline.COLLECTION}0", "collected", 90.0),
        (f"{timeline.COLLECTION}0", "done", 90.5),
        ("r", "start_sent", 100.05),
        (collection, "collected", 100.1),
        (collection, "done", 100.2),
        (collection, "done/generation", 2),
    )
    marked(tmp_path, "worker-1-11", ("r", "worker_read", 100.06))
    lines = _timeline.breakdown(tmp_path, [_timeline.Reply("r", 100.0, 100.5)])
    report = "\n".join(lines)
    assert "    main       generation 2: 1, 100 ms, 100.0" in report
    assert "    worker-1   none" in report
    [main] = [line.split()[2:] for line in lines if line.startswith("    main process ")]
    assert main == ["100.0", "100.0", "100.0", "100.0"]
    [worker] = [line.split()[3:] for line in lines if line.startswith("    the reply's worker")]
    assert worker == ["0.0", "0.0", "0.0", "0.0"]
    # The round began at the first run's mark, not at start-up's collection.
    assert "first Start read at: worker-1 0.0 s" in report
