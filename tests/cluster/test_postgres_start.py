"""A gateway on PostgreSQL, started as an operator starts it: from the command line.

A database it cannot use stops the start with one sentence and an exit code: no traceback,
and never the password of the URL. One it can use serves, and the operator commands read
it beside the running gateway, as they read a SQLite file.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import psycopg
import pytest

from tests.support.agui import new_id, user_input
from tests.support.postgres import Postgres
from tests.support.processes import (
    GATEWAY,
    ROOT,
    free_port,
    gateway_process,
    operator_command,
    run_over_ws,
)

pytestmark = pytest.mark.process

PASSWORD = "s3cret-Pa55"


def start(db: str) -> subprocess.CompletedProcess[str]:
    """``agent-gateway serve`` on ``db``, which must fail to start."""
    return subprocess.run(
        [*GATEWAY, "--db", db, "--host", "127.0.0.1", "--port", str(free_port())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The one line that says why the start failed; checks nothing more leaked."""
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Traceback" not in output and PASSWORD not in output, output
    said = [line for line in done.stderr.splitlines() if "ERROR uvicorn.error" in line]
    assert said[-1].endswith("Application startup failed. Exiting."), output
    return said[-2]


def other_database(postgres: Postgres, statements: list[str]) -> str:
    url = postgres.fresh_database(empty=True)
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement.encode())
    return url


@pytest.mark.parametrize(
    ("url", "said"),
    [
        (f"postgresql://gateway:{PASSWORD}@127.0.0.1:1/threads", "Connection refused"),
        (f"postgresql://gateway:{PASSWORD}@127.0.0.1:port/threads", "invalid integer value"),
        (f"postgres://gateway:{PASSWORD}@127.0.0.1:1/threads?sslmode=sometimes", "sslmode"),
    ],
    ids=["refused", "bad port", "bad option"],
)
async def test_an_unusable_url_stops_the_start_with_a_sentence(url: str, said: str) -> None:
    line = refusal(await asyncio.to_thread(start, url))
    assert "cannot connect to the session store" in line and said in line
    assert "Check the URL of --db" in line


async def test_a_database_that_is_not_a_store_or_is_newer_is_refused(postgres: Postgres) -> None:
    foreign = other_database(postgres, ["CREATE TABLE invoices (id int)"])
    line = refusal(await asyncio.to_thread(start, foreign))
    assert "not an agent-gateway store" in line and "invoices" in line
    newer = other_database(
        postgres,
        ["CREATE TABLE schema_version (version int)", "INSERT INTO schema_version VALUES (99)"],
    )
    line = refusal(await asyncio.to_thread(start, newer))
    assert "schema version 99" in line and "Upgrade agent-gateway" in line


async def test_operator_commands_read_a_running_gateways_database(
    postgres: Postgres, tmp_path: Path
) -> None:
    url = postgres.fresh_database()
    thread = new_id("t")
    async with gateway_process(url, tmp_path / "gateway.log") as (_, port):
        events = await run_over_ws(port, user_input(thread, "업무 요청 목록 화면 열어줘"))
        assert events[-1]["type"] == "RUN_FINISHED"
        threads = await asyncio.to_thread(operator_command, url, "threads", "--user", "demo")
        assert threads.returncode == 0, threads.stderr
        assert [t["threadId"] for t in json.loads(threads.stdout)] == [thread]
        exported = await asyncio.to_thread(operator_command, url, "export", thread)
        assert exported.returncode == 0, exported.stderr
        assert json.loads(exported.stdout)[0]["content"] == "업무 요청 목록 화면 열어줘"
        audit = await asyncio.to_thread(operator_command, url, "audit", "--thread", thread)
        assert audit.returncode == 0, audit.stderr
        assert "find_screen" in audit.stdout
    missing = await asyncio.to_thread(operator_command, url, "export", "no-such-thread")
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    assert "no thread 'no-such-thread'" in missing.stderr
