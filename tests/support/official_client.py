"""The official @ag-ui/client, run by node through the harnesses in tests/e2e/node: a run
sent by its HttpAgent (``run_http_agent``), an approval answered through its resume helper
(``approval_flow``), and a stream put through its own checks (``official_check``).

``client_environment`` picks the client: @ag-ui/client 1.0, or the 0.0.59 that CopilotKit
1.74 bundles (``old_client``). ``NEEDS_NODE`` skips a test where node or the harnesses'
``npm ci`` is missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT, tiers
from tests.support.agui import NAVIGATE_TOOL, PROTOCOL_VERSION, StreamChecker, new_id
from tests.support.budgets import scaled
from tests.support.servers import RunningGateway

NODE_DIR = ROOT / "tests" / "e2e" / "node"

NEEDS_NODE = pytest.mark.skipif(
    shutil.which("node") is None or not (NODE_DIR / "node_modules").is_dir(),
    reason="needs node and `npm ci` in tests/e2e/node (.ci/run does both)",
)


def client_environment(old_client: bool) -> dict[str, str]:
    """The harnesses drive @ag-ui/client 1.0, or 0.0.59 (CopilotKit 1.74's) if ``old_client``."""
    return {**os.environ, "AGUI_CLIENT": "0" if old_client else "1"}


async def official_check(
    events: list[dict[str, Any]], *, old_client: bool = False
) -> dict[str, Any]:
    """What a client's own checks make of ``events`` (1.0's enforcement and verifier, or
    0.0.59's schemas and verifier); the harness report."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(events, handle, ensure_ascii=False)
    tiers.require("browser", "node and @ag-ui/client")
    process = await asyncio.create_subprocess_exec(
        "node",
        str(NODE_DIR / "check_stream.mjs"),
        handle.name,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=client_environment(old_client),
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), scaled(60))
    Path(handle.name).unlink()
    assert process.returncode == 0, stderr.decode()
    report: dict[str, Any] = json.loads(stdout)
    return report


async def run_http_agent(
    target: RunningGateway | str,
    run_input: dict[str, Any],
    headers: dict[str, str] | None = None,
    *,
    old_client: bool = False,
) -> dict[str, Any]:
    """Runs the official client once against the gateway's POST /invocations, or another
    AG-UI endpoint's URL (``tests.support.agui_adk``), sending ``headers``; returns the
    harness report."""
    url = target if isinstance(target, str) else target.http + "/invocations"
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(run_input, handle, ensure_ascii=False)
    environment = {**client_environment(old_client), "AGUI_HEADERS": json.dumps(headers or {})}
    tiers.require("browser", "node and @ag-ui/client")
    process = await asyncio.create_subprocess_exec(
        "node",
        str(NODE_DIR / "run_agent.mjs"),
        url,
        handle.name,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), scaled(60))
    Path(handle.name).unlink()
    assert process.returncode == 0, stderr.decode()
    report: dict[str, Any] = json.loads(stdout)
    checker = StreamChecker(declared=None if old_client else PROTOCOL_VERSION)
    for event in report["http"].get("events", []):
        checker.feed(event)
    return report


def accepted(report: dict[str, Any]) -> None:
    assert report["failed"] is None, report["failed"]
    assert report["warnings"] == [], report["warnings"]
    assert report["errors"] == [], report["errors"]


def base_input(thread: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": new_id("run"),
        # The node harness's client declares its own; a frame sent over /ws declares 1.0.
        "protocolVersion": PROTOCOL_VERSION,
        "messages": messages,
        "tools": [NAVIGATE_TOOL],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


async def approval_flow(
    gateway: RunningGateway, decision: str, *, old_client: bool = False
) -> dict[str, Any]:
    tiers.require("browser", "node and @ag-ui/client")
    process = await asyncio.create_subprocess_exec(
        "node",
        str(NODE_DIR / "approval_flow.mjs"),
        gateway.http + "/invocations",
        new_id("t"),
        decision,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=client_environment(old_client),
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), scaled(60))
    assert process.returncode == 0, stderr.decode()
    report: dict[str, Any] = json.loads(stdout)
    for run in ("first", "second"):
        checker = StreamChecker(declared=None if old_client else PROTOCOL_VERSION)
        for event in report[run]:
            checker.feed(event)
    return report


def reply_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


async def replay(run_input: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """What a page on @ag-ui/client 1.0 holds after ``events`` answered ``run_input``
    (a stream it did not fetch itself: one from /ws, an SSE body read by httpx): the client's
    own enforcement, verifier and apply, by ``replay_stream.mjs``. The harness report:
    ``messages``, ``state``, ``warnings``, ``errors``, ``failed``."""
    paths = []
    for document in (run_input, events):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(document, handle, ensure_ascii=False)
        paths.append(handle.name)
    tiers.require("browser", "node and @ag-ui/client")
    process = await asyncio.create_subprocess_exec(
        "node",
        str(NODE_DIR / "replay_stream.mjs"),
        *paths,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=client_environment(False),
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), scaled(60))
    for path in paths:
        Path(path).unlink()
    assert process.returncode == 0, stderr.decode()
    report: dict[str, Any] = json.loads(stdout)
    return report
