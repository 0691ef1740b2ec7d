"""A run's timeline (``GATEWAY_TIMELINE``): off it marks nothing; on, each process writes
its marks where a reader lines them up by run, each step at its first mark, and a served
gateway stopped by SIGTERM writes the marks it still held; each garbage collection is
marked too."""

from __future__ import annotations

import gc
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway import logs, timeline
from tests.support.agui import new_id, user_input
from tests.support.budgets import scaled
from tests.support.processes import gateway_process, run_over_ws

pytestmark = pytest.mark.unit


@pytest.fixture
def stopped() -> Iterator[None]:
    """The timeline is this process's: a test leaves it off."""
    timeline.stop()
    yield
    timeline.stop()


def test_off_it_marks_nothing_and_starts_for_no_directory(stopped: None, tmp_path: Path) -> None:
    timeline.mark("read", "run-1")
    timeline.text("run-1", "message-1")
    timeline.written("message-1")
    timeline.start("", "main")  # the setting's default
    assert not timeline.on()
    assert list(tmp_path.iterdir()) == []


def test_each_step_of_a_run_is_read_back_at_its_first_mark(stopped: None, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    timeline.start(str(marks), "main")
    assert timeline.on()
    timeline.mark("read", "run-1")
    timeline.mark("model_chunk", "run-1")
    timeline.mark("model_chunk", "run-1")  # a later chunk: not the first
    timeline.mark("read", "run-2")
    timeline.stop()
    [written] = list(marks.iterdir())
    assert written.name.startswith("main-")
    runs = timeline.read(str(marks))
    assert set(runs) == {"run-1", "run-2"}
    assert list(runs["run-1"]) == ["read", "model_chunk"]
    assert runs["run-1"]["read"] <= runs["run-1"]["model_chunk"]
    assert len(written.read_text().splitlines()) == 4


def test_a_marks_levels_are_lines_of_their_own_under_its_step(
    stopped: None, tmp_path: Path
) -> None:
    timeline.start(str(tmp_path), "main")
    timeline.mark("chunk_read", "run-1", [("=before", 3), ("=read", 9)])
    timeline.mark("chunk_read", "run-2")  # none: the step alone
    timeline.stop()
    runs = timeline.read(str(tmp_path))
    assert runs["run-1"]["chunk_read/=before"] == 3
    assert runs["run-1"]["chunk_read/=read"] == 9
    assert list(runs["run-2"]) == ["chunk_read"]


def test_a_mark_names_the_run_its_log_lines_name_when_not_given(
    stopped: None, tmp_path: Path
) -> None:
    timeline.start(str(tmp_path), "worker-1")
    logs.bind(run="run-7")
    try:
        timeline.mark("worker_began")
    finally:
        logs.bind(run=None)
    timeline.mark("worker_began")  # outside any run: nothing
    timeline.stop()
    assert list(timeline.read(str(tmp_path))) == ["run-7"]


def test_a_runs_first_text_is_marked_written_once_a_door_writes_it(
    stopped: None, tmp_path: Path
) -> None:
    timeline.start(str(tmp_path), "main")
    timeline.written("message-1")  # not a first text the timeline knows: nothing
    timeline.text("run-1", "message-1")
    timeline.written("message-1")
    timeline.written("message-1")  # its later chunks: not marked again
    timeline.stop()
    steps = timeline.read(str(tmp_path))["run-1"]
    assert list(steps) == ["emitted", "written"]


def test_marks_are_written_a_batch_at_a_time_before_the_end(stopped: None, tmp_path: Path) -> None:
    timeline.start(str(tmp_path), "main")
    for number in range(timeline.BATCH):
        timeline.mark("read", f"run-{number}")
    # Written already, before the process stops: a reader of a killed process finds them.
    assert len(timeline.read(str(tmp_path))) == timeline.BATCH


@pytest.mark.process
async def test_a_served_gateway_writes_its_batched_marks_when_sigterm_stops_it(
    tmp_path: Path,
) -> None:
    # uvicorn ends a process it stopped on SIGTERM by raising the signal again: the exit
    # handler never runs, so the shutdown itself must write what fewer than BATCH marks left.
    marks, log = tmp_path / "marks", tmp_path / "gateway.log"
    environment = {"GATEWAY_TIMELINE": str(marks)}
    async with gateway_process(tmp_path / "threads.db", log, environment=environment) as (
        process,
        port,
    ):
        frame = user_input(new_id("t"), "안녕하세요")
        events = await run_over_ws(port, frame)
        assert events[-1]["type"] == "RUN_FINISHED"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=scaled(30)) == -signal.SIGTERM
    [main] = marks.glob("main-*.jsonl")
    assert main.read_text(), "the main process wrote none of its marks"
    steps = timeline.read(str(marks))[frame["runId"]]
    assert {"read", "admitted", "acknowledged"} <= set(steps), sorted(steps)


def test_what_a_process_counts_at_a_step_is_read_back_beside_it(
    stopped: None, tmp_path: Path
) -> None:
    timeline.start(str(tmp_path), "worker-1")
    timeline.count_with(lambda step: [("turns", 3.0), ("=runs", 2.0)] if step == "x" else [])
    timeline.mark("x", "run-1")
    timeline.mark("y", "run-1")  # counts nothing
    timeline.stop()
    steps = timeline.read(str(tmp_path))["run-1"]
    assert set(steps) == {"x", "y", "x/turns", "x/=runs"}
    assert (steps["x/turns"], steps["x/=runs"]) == (3.0, 2.0)
    timeline.start(str(tmp_path / "again"), "worker-1")  # stopped: it counts no more
    timeline.mark("x", "run-2")
    timeline.stop()
    assert set(timeline.read(str(tmp_path / "again"))["run-2"]) == {"x"}


def test_each_collection_of_the_collector_is_marked_with_its_generation(
    stopped: None, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    gc.collect(1)  # off: not marked
    timeline.start(str(marks), "main")
    gc.collect(2)
    timeline.stop()
    gc.collect(0)  # off again: not marked
    assert timeline.read(str(marks)) == {}  # runs only
    [(collection, steps)] = timeline.read_by_role(str(marks))["main"].items()
    assert collection.startswith(timeline.COLLECTION)
    assert steps["collected"] <= steps["done"]
    assert steps["done/generation"] == 2
