"""scripts/load.py on a small budget: a few users and stories, each run on a fresh server.

What it prints is for people; this checks the plumbing (every story counted, the cut ones
recovered, every thread read back and judged, a refusal reported as an error), never a
speed. The three runs share the machine at once, to stay within seconds. The judge of a
thread is tested on its own with threads that are wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.config import AUTO_WORKERS
from scripts import _load_machine as machine
from scripts import _load_servers as servers
from scripts import _load_stories as stories
from scripts import load
from scripts._bench import ROOT, LocalGateway, free_port
from tests.support.agui import tool_answer

pytestmark = pytest.mark.process

SMALL = ["--users", "5", "--stories", "3", "--ramp", "0.5"]
RUNS = {
    "normal": SMALL,
    "kill": [*SMALL, "--kill", "--kill-share", "1"],
    # Users who open their socket, then think between stories, as people do.
    "thinking": [*SMALL, "--think", "0.3"],
    # Each reply's steps marked in the gateway, lined up with what the client timed.
    "timeline": [*SMALL, "--timeline"],
    # One process against two worker processes: the reply's run goes to the worker that
    # kept the story's first run, without those events.
    "workers": [*SMALL, "--workers", "2"],
    # A SQLite file against two processes on one PostgreSQL database, in one invocation.
    "side by side": [*SMALL, "--db", "file", "postgres-x2"],
    # 40 stories are 80 frames from one user: past the burst of 40, however slowly the
    # machine lets them go, for the gateway gives a user back one frame in 10 s.
    "too fast": [
        "--users",
        "1",
        "--stories",
        "40",
        "--frames-per-second",
        "1000",
        "--pace-ms",
        "0",
        "--user-rate",
        "0.1",
    ],
}


@pytest.fixture(scope="module")
def reports() -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    running = {
        name: subprocess.Popen(
            [sys.executable, "-m", "scripts.load", *flags],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, flags in RUNS.items()
    }
    done = {}
    try:
        for name, process in running.items():
            stdout, stderr = process.communicate(timeout=120)
            done[name] = subprocess.CompletedProcess(
                process.args, process.returncode, stdout, stderr
            )
    finally:
        for process in running.values():
            process.kill()
            process.wait()
    yield done


def assert_every_story_told(done: subprocess.CompletedProcess[str]) -> None:
    """5 users x 3 stories: all told, no error, every thread read back consistent."""
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stories: 15 done, 0 failed" in done.stdout
    assert "errors: none" in done.stdout
    read_back = "threads read back: 15 (15 of stories done), consistent 15; problems: none"
    assert read_back in done.stdout


def test_every_story_is_told_and_every_thread_reads_back_consistent(
    reports: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    done = reports["normal"]
    assert_every_story_told(done)
    for row in ("frame -> RUN_STARTED", "browser's answer -> first text", "story:"):
        assert re.search(rf"{re.escape(row)}.*\s\d+\.\d\s+\d+\.\d$", done.stdout, re.M), row
    assert re.search(r"server RSS MiB: start \d+, peak \d+, end \d+", done.stdout)
    # The main process's share of the server's CPU (the rest is its workers'), in one line.
    cpu = r"CPU cores: server [\d.]+ \([\d.]+ ms a story; its main process [\d.]+, [\d.]+ ms\)"
    assert re.search(cpu, done.stdout), done.stdout


def test_thinking_users_keep_their_socket_and_are_weighed_by_it(
    reports: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    done = reports["thinking"]
    assert_every_story_told(done)
    assert re.search(r"^machine: \d+ cores \(.*\), load average [\d.]+ ", done.stdout, re.M)
    assert "think 0.3 s on average" in done.stdout
    # Each user opened its socket on arrival and kept it through its pauses.
    weighed = r"; -?\d+\.\d KiB a connected user \(growth, over the 5 connected at most\)"
    assert re.search(weighed, done.stdout), done.stdout


def test_cut_stories_are_finished_by_reattaching_and_their_threads_stay_consistent(
    reports: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    done = reports["kill"]
    assert_every_story_told(done)
    cut = re.search(r"cut after .*: (\d+) stories, (\d+) finished after reconnecting", done.stdout)
    assert cut, done.stdout
    # A busy server merges text chunks, so a story may end before its cut comes.
    assert int(cut[1]) == int(cut[2]) > 0
    assert re.search(r"the reattaches: \w", done.stdout)


def test_the_timeline_shows_where_each_replys_first_text_waited(
    reports: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    done = reports["timeline"]
    assert_every_story_told(done)
    assert re.search(r"where the first text waited \(GATEWAY_TIMELINE, \d+ replies", done.stdout)
    # One process: its steps from the frame read to the client's read of the first text.
    for step in (
        "the input's frame decoded by its door",
        "its invocation starts in the main process",
        "ADK calls the model",
        "its first text written to the socket",
        "its frame reached the client's connection (data_received)",
        "the client read its first text",
    ):
        row = rf"^    {re.escape(step)} +-?\d+ +-?\d+ +-?\d+ +-?\d+ "
        assert re.search(row, done.stdout, re.M), (step, done.stdout)
    # And what the client's own thread did from the first text's write to its read.
    assert "the load client from the first text's write to its read" in done.stdout
    assert re.search(r"^      written→arrived: waiting for a core +\d", done.stdout, re.M)


def test_stores_side_by_side_tell_every_story_and_compare_their_cost(
    reports: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    done = reports["side by side"]
    assert_every_story_told(done)
    assert done.stdout.count("stories: 15 done, 0 failed") == 2, done.stdout
    assert "store postgres x2" in done.stdout
    # Both processes' CPU counts: each took some of the users.
    for setup in ("file", "postgres x2"):
        row = rf"^  {re.escape(setup)} +\d+\.\d stories/s \(\d\.\d\dx\), server CPU +\d+\.\d ms"
        assert re.search(row, done.stdout, re.M), done.stdout
    # And under each, what the load at scale is read by.
    latencies = (
        r"^ {15}RUN_STARTED p99 \d+\.\d ms, first text p99 \d+\.\d ms, 0 errors, -?\d+\.\d KiB"
    )
    assert len(re.findall(latencies, done.stdout, re.M)) == 2, done.stdout


def test_with_workers_the_report_says_how_many_starts_went_without_kept_events(
    reports: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    done = reports["workers"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("stories: 15 done, 0 failed") == 2, done.stdout
    kept = re.findall(
        r"^  kept sessions: Starts that went without the events their worker kept: (\d+);"
        r" answered Unkept and sent again whole: (\d+) more$",
        done.stdout,
        re.M,
    )
    # Only the setup with workers has the line; a story's reply may go elsewhere (the
    # keeping worker much busier), but not every one of 15.
    assert len(kept) == 1 and int(kept[0][0]) > 0, done.stdout


def test_workers_run_beside_one_process_unless_alone() -> None:
    file, x2 = servers.Setup("file"), servers.Setup("postgres", 2)
    assert load.setups([file, x2], [2, AUTO_WORKERS]) == [
        file,
        servers.Setup("file", workers=2),
        servers.Setup("file", workers=AUTO_WORKERS),
        x2,
        servers.Setup("postgres", 2, workers=2),
        servers.Setup("postgres", 2, workers=AUTO_WORKERS),
    ]
    assert load.setups([file], [AUTO_WORKERS], alone=True) == [
        servers.Setup("file", workers=AUTO_WORKERS)
    ]
    assert load.setups([file], []) == [file]


def test_a_store_setup_is_named_or_refused() -> None:
    assert servers.Setup.parse("postgres-x3") == servers.Setup("postgres", 3)
    assert str(servers.Setup.parse("postgres")) == "postgres x1"
    for wrong in ("file-x2", "postgres-x0", "postgres-xa", "mysql"):
        with pytest.raises(argparse.ArgumentTypeError):
            servers.Setup.parse(wrong)


def test_a_refused_frame_is_reported_as_an_error_never_hidden(
    reports: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    done = reports["too fast"]
    assert done.returncode == 1, done.stdout + done.stderr
    refused = re.search(r"errors: .*RUN_ERROR RATE_LIMIT_EXCEEDED (\d+)", done.stdout)
    assert refused and int(refused[1]) > 0, done.stdout
    failed = re.search(r"stories: (\d+) done, (\d+) failed", done.stdout)
    assert failed and int(failed[1]) + int(failed[2]) == 40
    assert int(failed[2]) > 0


def a_told_story() -> list[dict[str, Any]]:
    """A finished flagship thread as a reattach's MESSAGES_SNAPSHOT shows it."""
    search = {"id": "c1", "function": {"name": "find_screen", "arguments": "{}"}}
    navigate = {"id": "c2", "function": {"name": "navigateToScreen", "arguments": "{}"}}
    return [
        {"id": "m1", "role": "user", "content": stories.FLAGSHIP},
        {"id": "m2", "role": "assistant", "toolCalls": [search]},
        {"id": "m3", "role": "tool", "toolCallId": "c1", "content": "{}"},
        {"id": "m4", "role": "assistant", "toolCalls": [navigate]},
        {"id": "m5", "role": "tool", "toolCallId": "c2", "content": '{"status": "navigated"}'},
        {"id": "m6", "role": "assistant", "content": stories.REPLY},
    ]


def test_the_check_passes_a_told_story_and_names_what_is_wrong_with_others() -> None:
    done = {"type": "success"}
    assert stories.thread_problems(a_told_story(), done) == []
    twice = a_told_story()
    twice.insert(5, {"id": "m7", "role": "tool", "toolCallId": "c2", "content": "{}"})
    assert stories.thread_problems(twice, done) == ["navigateToScreen answered 2 times"]
    waiting = a_told_story()[:4]
    assert stories.thread_problems(waiting, {"type": "success", "pendingToolCallIds": ["c2"]}) == [
        "a call is still open",
        "navigateToScreen answered 0 times",
        "the last message is not the honest reply",
    ]
    lying = [*a_told_story()[:-1], {"id": "m6", "role": "assistant", "content": "이동 못 함"}]
    assert stories.thread_problems(lying, done) == ["the last message is not the honest reply"]
    assert "0 user messages" in stories.thread_problems([], done)


def test_a_storys_trail_says_what_it_last_sent_and_was_sent() -> None:
    """What a failed story is reported with: its last moments, runs of one kind folded."""
    trail = stories.Trail()
    trail.add(stories.sent({"type": "reattach", "threadId": "t1"}))
    trail.add(stories.sent(tool_answer("t1", [("c1", {})], tools=[])))
    for event in (
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "a"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "b"},
        {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
    ):
        trail.add(stories.received(event))
    moments = re.sub(r"\d+\.\d\d", "T", str(trail)).split("; ")
    assert moments[0] == "T sent reattach"
    assert re.fullmatch(r"T sent answer run-\w+", moments[1])
    assert moments[2:] == ["T RUN_STARTED r1", "T-T TEXT_MESSAGE_CONTENT x2", "T RUN_FINISHED r1"]
    for number in range(2 * stories.TRAIL_MOMENTS):
        trail.add(f"moment {number}")
    kept = str(trail).split("; ")
    assert len(kept) == stories.TRAIL_MOMENTS
    assert kept[-1].endswith(f"moment {2 * stories.TRAIL_MOMENTS - 1}")


def test_a_socket_that_fails_on_arrival_is_counted_not_hidden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stories, "client_tools", lambda gateway: [])
    nobody = LocalGateway(free_port(), None, Path("server.log"), 0.0)  # type: ignore[arg-type]
    args = argparse.Namespace(think=1.0, users=1, timeline=False)
    round_ = stories.Load(args, [nobody], kill=False, seed=1)
    link = asyncio.run(round_.arrive(stories.User(stories.user_name(1), 1.0)))
    assert link is None
    assert round_.arrivals_failed == {"connection refused": 1}
    assert round_.arrival_lines["connection refused"].startswith("load-0001 on arrival:")
    assert round_.connected == 0


def test_a_worker_started_mid_load_counts_its_growth_not_its_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `auto` starts its workers at the first run: a worker's ~100 MiB of imports is not
    # what a connected user costs, the ~growth of every process since it appeared is.
    tree = {0: [1], 1: [1, 2]}
    rss = {0: {1: 100.0}, 1: {1: 110.0, 2: 95.0}, 2: {1: 112.0, 2: 99.0}}
    now = 0  # the sample being taken
    monkeypatch.setattr(machine, "process_tree", lambda pid: tree[min(now, 1)])
    monkeypatch.setattr(machine, "rss_mib", lambda pid: rss[now][pid])
    monkeypatch.setattr(machine, "cpu_seconds", lambda pid=None: 0.0)
    monkeypatch.setattr(machine, "machine_cpu", lambda: 0.0)
    monitor = machine.Monitor([1], None)
    for now in range(3):  # noqa: B007 (the fakes above read it)
        monitor.take()
    assert [s.rss_mib for s in monitor.samples] == [100.0, 205.0, 211.0]
    assert [s.grown_mib for s in monitor.samples] == [0.0, 10.0, 16.0]
