"""scripts/_bench.py's alternating rounds, which the bench scripts time their ways in: each
round checks, then times every way in turn; each way's median is what they print.

And the scripts that time that way, on a small budget: what they print is for people;
this checks the plumbing (each way timed, the ratios printed), never a speed.
"""

from __future__ import annotations

import re

import pytest

from scripts._bench import alternating, timed, timing
from tests.support.processes import script_report


@pytest.mark.unit
def test_each_round_checks_then_times_every_way_in_turn_and_medians_come_back() -> None:
    calls: list[str] = []
    figures = {"before": [3.0, 1.0, 2.0], "now": [10.0, 30.0, 20.0]}

    def way(name: str) -> float:
        calls.append(name)
        return figures[name].pop(0)

    medians = alternating(
        3,
        {"before": lambda: way("before"), "now": lambda: way("now")},
        lambda: calls.append("check"),
    )
    assert calls == ["check", "before", "now"] * 3
    assert medians == {"before": 2.0, "now": 20.0}


@pytest.mark.unit
def test_a_piece_of_work_is_timed_over_its_repeats() -> None:
    done: list[int] = []
    assert timed(lambda: done.append(1), 7) >= 0.0 and len(done) == 7
    ways = timing({"work": lambda: done.append(2)}, 3)
    assert ways["work"]() >= 0.0 and done.count(2) == 3


@pytest.mark.process
def test_the_pipe_benchmark_times_both_ways_of_taking_frames_and_of_looking_at_workers() -> None:
    report = script_report("scripts.bench_pipe", "--rounds 1")
    for row in (
        "received, one message a write",
        "received, all in one write",
        "two workers looked at, 4 times",
    ):
        assert re.search(rf"^  {row} +\d+\.\d +\d+\.\d +\d+\.\d\dx$", report, re.M), report


@pytest.mark.process
@pytest.mark.parametrize(
    ("module", "rows"),
    [
        ("scripts.bench_chunks", ("whole (until session 45)", "as their text after the first")),
        ("scripts.bench_kept", ("whole (until session 46)", "without the events the worker kept")),
    ],
)
def test_a_crossing_benchmark_times_both_ways_on_each_side(
    module: str, rows: tuple[str, str]
) -> None:
    report = script_report(module, "--rounds 1")
    for row in rows:
        assert re.search(rf"^  {re.escape(row)} +\d+\.\d +\d+\.\d$", report, re.M), report
    assert re.search(r"^  ratio +\d+\.\d\dx +\d+\.\d\dx$", report, re.M), report


@pytest.mark.process
def test_the_kept_benchmark_puts_earlier_stories_at_the_head_of_a_long_threads_sessions() -> None:
    """``--earlier``: the whole Starts grow with the thread, the kept ones do not."""
    report = script_report("scripts.bench_kept", "--rounds 1 --earlier 3")
    found = re.search(r"kept by their worker; (\d+) bytes whole, (\d+) without them", report)
    assert found, report
    whole, kept = int(found[1]), int(found[2])
    assert kept < 1_000 and whole > 30 * kept, report
    sessions = re.search(r"sessions of \[(\d+), (\d+)\] events, \[(\d+), (\d+)\] of them", report)
    assert sessions, report
    first, second, kept_first, kept_second = map(int, sessions.groups())
    assert first == kept_first > 0 and second == kept_second > first, report


@pytest.mark.process
def test_the_chunks_benchmark_times_the_main_process_rebuild_both_ways() -> None:
    report = script_report("scripts.bench_chunks", "--rounds 1")
    assert re.search(r"rebuilt chunk by chunk \(until session 49\) +\d+\.\d$", report, re.M)
    assert re.search(r"from what they share \(now\) +\d+\.\d \(\d+\.\d\dx\)$", report, re.M)


@pytest.mark.process
def test_the_projection_benchmark_times_a_storys_appends_both_ways() -> None:
    report = script_report("scripts.bench_projection", "--rounds 1")
    assert re.search(r"a flagship story: (\d+) appends", report), report
    assert re.search(r"^until session 49 +\d+\.\d µs a story", report, re.M), report
    assert re.search(r"^now +\d+\.\d µs a story \(\d+\.\d\dx\)$", report, re.M), report
