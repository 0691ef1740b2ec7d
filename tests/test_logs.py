"""Log lines a client cannot forge or blow up, and JSON lines that say whose run they are."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import time
from collections.abc import Iterator

import httpx
import pytest

from gateway import logs
from gateway.config import Settings
from tests.support.agui import new_id, outcome, user_input
from tests.support.servers import RunningGateway

pytestmark = pytest.mark.unit

FORGED = "t-1\n2026-01-01 00:00:00,000 ERROR gateway.hub: forged"


@contextlib.contextmanager
def captured(log_format: str = "text", worker: int | None = None) -> Iterator[io.StringIO]:
    """What ``logs.configure`` writes for the process (worker ``worker``) while the block runs."""
    stream = io.StringIO()
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    settings = Settings(log_format=log_format, log_level="info")
    handler = logs.configure(settings, stream, worker=worker)
    try:
        yield stream
    finally:
        # configure replaces the process's handlers: pytest's own come back.
        root.removeHandler(handler)
        for old in handlers:
            root.addHandler(old)
        root.setLevel(level)


def test_a_value_with_a_newline_stays_on_one_escaped_line() -> None:
    with captured() as out:
        logging.getLogger("gateway.test").info("run on thread %s ended", FORGED)
    [line] = out.getvalue().splitlines()
    assert line.endswith(
        "INFO gateway.test: run on thread t-1\\n2026-01-01 00:00:00,000 ERROR gateway.hub: "
        "forged ended"
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("a\rb", "a\\rb"),
        ("\x1b[31mred", "\\x1b[31mred"),  # terminal escapes
        ("a\u2028b\u2029c\x85d", "a\\u2028b\\u2029c\\x85d"),  # Unicode line breaks
        ("abc\u202edcba", "abc\\u202edcba"),  # a right-to-left override
        ("업무 요청 목록", "업무 요청 목록"),
        ("a\u00a0b\u3000c", "a\u00a0b\u3000c"),  # unprintable spaces, not unsafe: as they are
    ],
)
def test_control_and_line_breaking_characters_are_shown_escaped(value: str, shown: str) -> None:
    assert logs.shown(value) == shown


def test_a_megabyte_value_writes_a_short_line() -> None:
    with captured() as out:
        logging.getLogger("gateway.test").warning("thread %s: %r", "t" * 1_000_000, ["x" * 10**6])
    [line] = out.getvalue().splitlines()
    assert len(line) < 600
    assert line.count("…[") == 2 and "999800 more chars]" in line


def test_a_message_built_before_logging_is_escaped_and_cut_too() -> None:
    with captured() as out:
        logging.getLogger("gateway.test").error(f"bad key {FORGED * 1000}")
    [line] = out.getvalue().splitlines()
    assert len(line) < logs.MESSAGE_LIMIT + 100


def test_numbers_and_mappings_format_as_before() -> None:
    with captured() as out:
        log = logging.getLogger("gateway.test")
        log.info("%d runs in %.1f ms for %r", 3, 2.25, "u\n1")
        log.info("%(user)s", {"user": "a\nb"})
    assert [line.split(": ", 1)[1] for line in out.getvalue().splitlines()] == [
        "3 runs in 2.2 ms for 'u\\n1'",
        "a\\nb",
    ]


def test_short_printable_values_and_their_reprs_read_as_logging_makes_them() -> None:
    with captured() as out:
        logging.getLogger("gateway.test").info("%s %r %s", "r-1 업무", "t-1", "x" * 300)
    [line] = out.getvalue().splitlines()
    assert line.split(": ", 1)[1] == f"r-1 업무 't-1' {'x' * 200}…[100 more chars]"


def test_a_records_time_is_made_once_a_second_and_reads_as_loggings_own() -> None:
    """Under load many records share a second: its date and time are made once."""
    made: list[float] = []

    def localtime(seconds: float | None = None) -> time.struct_time:
        made.append(seconds or 0.0)
        return time.localtime(seconds)

    formatter, plain = logs.TextFormatter(), logging.Formatter()
    formatter.converter = localtime  # type: ignore[method-assign]
    records = [
        logging.makeLogRecord({"created": created, "msecs": round(created % 1 * 1000) + 0.0})
        for created in (1800000000.125, 1800000000.5, 1800000000.999, 1800000001.0, 1800000001.25)
    ]
    assert [formatter.formatTime(r) for r in records] == [plain.formatTime(r) for r in records]
    assert len(made) == 2  # one a second
    assert formatter.formatTime(records[0], "%H") == plain.formatTime(records[0], "%H")


def test_a_traceback_follows_its_record_indented_so_no_line_can_pass_for_a_record() -> None:
    with captured() as out:
        try:
            raise ValueError(FORGED)
        except ValueError:
            logging.getLogger("gateway.test").exception("failed")
    first, *rest = out.getvalue().splitlines()
    assert first.endswith("ERROR gateway.test: failed")
    assert rest and all(line.startswith("    ") for line in rest)
    assert rest[-1] == "    ValueError: t-1\\n2026-01-01 00:00:00,000 ERROR gateway.hub: forged"


def test_json_lines_parse_and_carry_the_bound_ids() -> None:
    with captured("json") as out:
        logs.bind(user="u-1", thread=FORGED, run="r-1")
        try:
            logging.getLogger("gateway.test").info("hello %s", "a\nb")
        finally:
            logs.bind(user=None, thread=None, run=None)
        logging.getLogger("gateway.test").info("unbound")
    bound, unbound = (json.loads(line) for line in out.getvalue().splitlines())
    assert bound["message"] == "hello a\\nb" and bound["level"] == "INFO"
    assert (bound["userId"], bound["runId"]) == ("u-1", "r-1")
    assert bound["threadId"] == logs.shown(FORGED)
    assert not {"userId", "threadId", "runId"} & unbound.keys()


def test_a_worker_process_lines_name_the_worker() -> None:
    for log_format in ("text", "json"):
        with captured(log_format, worker=2) as out:
            logging.getLogger("gateway.test").info("hello")
        line = out.getvalue().rstrip("\n")
        if log_format == "json":
            assert json.loads(line)["worker"] == 2
        else:
            assert line.endswith(" INFO [worker 2] gateway.test: hello")


# --- through a running gateway --------------------------------------------------------------


@pytest.mark.server
async def test_a_thread_id_that_breaks_lines_writes_one_escaped_line(
    gateway: RunningGateway,
) -> None:
    # The door refuses ASCII control characters in ids; Unicode line breaks pass it.
    thread = "t-1\u20282026-01-01 00:00:00,000 ERROR gateway.hub: forged\x85" + new_id("x")
    with captured() as out:
        async with gateway.socket() as ws:
            assert outcome(await ws.run(user_input(thread, "안녕"))) == {"type": "success"}
    lines = out.getvalue().splitlines()  # splits at U+2028 and U+0085 too
    assert not [line for line in lines if line.startswith("2026-01-01")], "a forged line"
    [ended] = [line for line in lines if "ended in" in line and logs.shown(thread) in line]
    assert "t-1\\u20282026-01-01" in ended


@pytest.mark.server
async def test_a_context_key_with_a_newline_writes_one_escaped_line(
    gateway: RunningGateway,
) -> None:
    context = [{"description": FORGED, "value": "1"}]
    with captured() as out:
        async with gateway.socket() as ws:
            await ws.run(user_input(new_id("t"), "안녕", context=context))
    lines = out.getvalue().splitlines()
    assert not [line for line in lines if line.startswith("2026-01-01")], "a forged line"
    [dropped] = [line for line in lines if "context entries dropped" in line]
    assert dropped.endswith("t-1\\n2026-01-01 00:00:00,000 ERROR gateway.hub: forged")


@pytest.mark.server
async def test_json_lines_of_a_run_carry_its_user_thread_and_run(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    # An unknown context entry makes the door log a line before the run task starts.
    run_input = user_input(thread, "안녕", context=[{"description": "x\ny", "value": "1"}])
    with captured("json") as out:
        async with httpx.AsyncClient(timeout=20) as client:
            response = await client.post(
                gateway.http + "/invocations",
                json=run_input,
                headers={"X-Gateway-User": "kim"},
            )
        assert response.status_code == 200
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    mine = [r for r in records if r.get("threadId") == thread]
    assert {r["logger"] for r in mine} >= {"gateway.context", "gateway.hub.driving"}
    for record in mine:
        assert (record["userId"], record["runId"]) == ("kim", run_input["runId"])
