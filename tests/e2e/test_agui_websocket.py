"""The npm package clients/agui-websocket (WebSocketAgent over /ws) against a real gateway:
its ``node --test`` suites, and its hand-written types checked by ``tsc`` on a consumer."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.agui import NAVIGATE_TOOL
from tests.support.servers import RunningGateway, running_gateway

PACKAGE = Path(__file__).parents[2] / "clients" / "agui-websocket"
SUITES = sorted(path.name for path in (PACKAGE / "test").glob("*.test.mjs"))

pytestmark = [
    pytest.mark.skipif(
        shutil.which("node") is None or not (PACKAGE / "node_modules").is_dir(),
        reason="needs node and `npm ci` in clients/agui-websocket (.ci/run does both)",
    ),
    pytest.mark.browser,
]


@pytest.fixture(scope="module")
async def paced_gateway() -> AsyncIterator[RunningGateway]:
    """The demo, its model streaming a chunk every 20 ms, so a test can act mid-reply."""
    async with running_gateway(scripted_pace_ms=20) as running:
        yield running


async def run_node(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *args,
        cwd=PACKAGE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    output, _ = await asyncio.wait_for(process.communicate(), 240)
    assert process.returncode is not None
    return process.returncode, output.decode()


@pytest.mark.parametrize("suite", SUITES)
async def test_the_package_suite_passes_against_the_gateway(
    paced_gateway: RunningGateway, suite: str
) -> None:
    code, output = await run_node(
        "node",
        "--experimental-websocket",
        "--test",
        "--test-timeout=120000",
        "--test-reporter=spec",
        f"test/{suite}",
        env={"AGUI_GATEWAY_WS": paced_gateway.ws_url(), "AGUI_TOOLS": json.dumps([NAVIGATE_TOOL])},
    )
    assert code == 0, output
    assert "ℹ fail 0" in output, output


async def test_the_hand_written_types_check_against_a_consumer() -> None:
    code, output = await run_node("node_modules/.bin/tsc", "-p", "test/tsconfig.json")
    assert code == 0, output
