"""/ping tells the truth about the model: Unhealthy while it cannot be reached, Healthy once
it answers again, with one log line each way; probing it and warming up spend no tokens."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from gateway.models.endpoints import PROBE_TIMEOUT_SECONDS
from tests.support.agui import new_id, outcome, text_of, user_input
from tests.support.budgets import scaled
from tests.support.processes import ROOT, run_over_ws
from tests.support.providers import GeminiApi, Provider
from tests.support.providers.agents import navigator_on
from tests.support.servers import free_port, running_gateway

pytestmark = pytest.mark.server

PROBE_SECONDS = 0.2
# How long a change of the model's state may take to show: a probe's timeout, and more.
PROBE_WAIT = PROBE_TIMEOUT_SECONDS + 3


async def ping(base: str) -> tuple[int, str]:
    async with httpx.AsyncClient() as client:
        response = await client.get(base + "/ping")
    return response.status_code, response.json()["status"]


async def ping_until(base: str, status: int, within: float = 5.0) -> str:
    """What /ping says once it answers ``status`` with anything but Starting."""
    deadline = time.monotonic() + scaled(within)
    while True:
        try:
            code, said = await ping(base)
        except httpx.ConnectError:  # not listening yet
            code, said = 0, "not listening"
        if code == status and said != "Starting":
            return said
        assert time.monotonic() < deadline, f"/ping still answers {code} {said}"
        await asyncio.sleep(0.05)


def model_lines(caplog: pytest.LogCaptureFixture, words: str) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "gateway.models.health" and words in record.getMessage()
    ]


async def test_ping_is_unhealthy_while_the_model_is_down_and_healthy_once_it_answers(
    provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.models.health")
    async with running_gateway(
        agent=navigator_on(provider), model_probe_interval=PROBE_SECONDS
    ) as gateway:
        assert await ping(gateway.http) == (200, "Healthy")
        await provider.stop()
        # The provider is a server in this process: a probe sent on a kept-alive connection
        # as it stops may be left hanging there, and fails only at the probe's timeout.
        assert await ping_until(gateway.http, 503, within=PROBE_WAIT) == "Unhealthy"
        await asyncio.sleep(4 * PROBE_SECONDS)  # more probes fail: still one line
        [down] = model_lines(caplog, "cannot be reached")
        # Refused, or (a probe that reused a kept-alive connection as the server stopped) cut
        # or left hanging: httpx's ConnectError, ReadError or RemoteProtocolError (closed
        # before the response began), aiohttp's (google-genai's when installed)
        # ClientConnectorError or ServerDisconnectedError, or the probe's timeout.
        assert provider.model_name in down
        said = "Connect(or)?Error|ReadError|RemoteProtocol|ServerDisconnected|no answer in"
        assert re.search(said, down), down
        assert "GET " in down and "/ping says Unhealthy" in down
        await provider.start()
        assert await ping_until(gateway.http, 200, within=PROBE_WAIT) == "Healthy"
        [back] = model_lines(caplog, "answers again")
        assert provider.model_name in back


async def test_a_gateway_started_while_its_model_is_down_is_never_healthy(
    provider: Provider,
) -> None:
    await provider.stop()
    async with running_gateway(
        agent=navigator_on(provider), model_probe_interval=PROBE_SECONDS
    ) as gateway:
        # Ready: the warm-up is over and the first probe has answered.
        assert await ping(gateway.http) == (503, "Unhealthy")
        await provider.start()
        assert await ping_until(gateway.http, 200) == "Healthy"


async def test_probes_and_the_warm_up_spend_no_tokens(provider: Provider) -> None:
    async with running_gateway(
        agent=navigator_on(provider), warm_up_runs=3, model_probe_interval=0.05
    ) as gateway:
        await asyncio.sleep(0.3)
        assert provider.probes >= 3
        assert provider.generations == [], "nothing but a user's run may call the model"
        async with gateway.socket() as ws:
            await ws.run(user_input(new_id("t"), "안녕"))
        assert len(provider.generations) == 1


@contextlib.asynccontextmanager
async def gateway_on(provider: Provider, log: Path) -> AsyncIterator[str]:
    """``agent-gateway`` with GATEWAY_MODEL naming the provider's model, as a user runs it."""
    port = free_port()
    env = {
        **os.environ,
        **provider.env(),
        "GATEWAY_MODEL": provider.model_name,
        "GATEWAY_MODEL_PROBE_INTERVAL": str(PROBE_SECONDS),
    }
    command = [sys.executable, "-m", "gateway", "serve", "--port", str(port), "--db", ":memory:"]
    with log.open("wb") as output:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=output)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=15)


@pytest.mark.process
async def test_the_served_gateway_on_a_model_that_is_down_says_so_in_one_line_each(
    tmp_path: Path,
) -> None:
    """The new user's first try: a Gemini model name, and no model to reach."""
    provider = GeminiApi()
    log = tmp_path / "gateway.log"
    async with gateway_on(provider, log) as base:
        assert await ping_until(base, 503, within=60) == "Unhealthy"
        port = int(base.rsplit(":", 1)[1])
        [_, error] = await run_over_ws(port, user_input(new_id("t"), "안녕"))
        assert error["message"] == "The model cannot be reached right now; try again in a moment."
        await asyncio.sleep(3 * PROBE_SECONDS)
        async with provider.running():
            assert await ping_until(base, 200) == "Healthy"
            events = await run_over_ws(port, user_input(new_id("t"), "안녕"))
            assert outcome(events) == {"type": "success"}
            assert text_of(events).startswith("안녕하세요")
            text = log.read_text()
    assert "Traceback" not in text
    assert text.count("cannot be reached (GET") == 1
    assert text.count("The model cannot be reached") == 0, "the client's sentence, not the log's"
    [failed] = [line for line in text.splitlines() if " failed: " in line]
    assert "gemini-2.5-flash" in failed and re.search("Connect(or)?Error", failed), failed
    assert text.count("answers again") == 1
    assert provider.generations and len(provider.generations) == 1


@pytest.mark.process
def test_a_gateway_on_no_openai_model_never_loads_the_openai_sdk() -> None:
    """Finding the models to probe asks each whether it is OpenAI's: answering no must not
    import the SDK, ~800 modules and ~18 MiB of RSS held for nothing."""
    probe = (
        "import sys; from google.adk.agents import LlmAgent; "
        "from gateway.models.endpoints import endpoints; "
        "from gateway.models.names import build; "
        "[gemini] = endpoints(LlmAgent(name='gemini', model='gemini-2.5-flash')); "
        "assert gemini.request.endswith('/v1beta/models/gemini-2.5-flash'), gemini; "
        "assert 'openai' not in sys.modules; "
        "[openai] = endpoints(LlmAgent(name='openai', model=build('openai/gpt-4o-mini'))); "
        "assert openai.model.startswith('openai/gpt-4o-mini at '), openai"
    )
    env = {**os.environ, "OPENAI_API_KEY": "unused", "GOOGLE_API_KEY": "unused"}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
