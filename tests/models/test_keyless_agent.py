"""The new user's first try, as the issue found it: an agent on its own Gemini model, served
with no GOOGLE_API_KEY. The start-up log says the version and every setting by where it came
from (secrets redacted, a mistyped variable named), the model's failure is one line at start
and one per run, with no traceback anywhere, /livez is 200 while /readyz is 503, and the
client's RUN_ERROR says what the operator has to set."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from gateway.config import setting_names, version
from gateway.models.failures import NO_CREDENTIALS
from tests.support import tiers
from tests.support.agui import new_id, user_input
from tests.support.budgets import scaled
from tests.support.ports import free_port
from tests.support.processes import run_over_ws

pytestmark = pytest.mark.process

AGENT = """
from google.adk.agents import LlmAgent

root_agent = LlmAgent(name="keyless", model="gemini-2.5-flash", instruction="Answer briefly.")
"""
TOKEN = "a-service-token-of-more-than-thirty-two-bytes"


async def unready(base: str) -> None:
    """Waits for /readyz to give its verdict (anything but Starting); /livez is 200 by then."""
    deadline = time.monotonic() + scaled(60)
    async with httpx.AsyncClient(timeout=scaled(5)) as client:
        while True:
            try:
                ready = await client.get(base + "/readyz")
                if ready.json()["status"] != "Starting":
                    assert (ready.status_code, ready.json()["status"]) == (503, "Unhealthy")
                    assert (await client.get(base + "/livez")).status_code == 200
                    return
            except httpx.TransportError:
                pass  # not listening yet
            assert time.monotonic() < deadline, "the gateway never said it was unready"
            await asyncio.sleep(0.1)


async def test_an_agent_without_its_key_is_one_line_at_start_and_one_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiers.require("process", "an agent-gateway process")
    (tmp_path / "keyless_agent.py").write_text(AGENT)
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GATEWAY_PROT", "18119")
    monkeypatch.setenv("GATEWAY_SERVICE_TOKEN", TOKEN)
    monkeypatch.setenv("GATEWAY_WARM_UP_RUNS", "3")
    port = free_port()
    log = tmp_path / "gateway.log"
    command = [sys.executable, "-m", "gateway", "serve", "keyless_agent:root_agent"]
    command += ["--port", str(port), "--db", ":memory:", "--drain-seconds", "1"]
    with log.open("wb") as output:
        process = subprocess.Popen(command, cwd=tmp_path, stdout=output, stderr=output)
    try:
        await unready(f"http://127.0.0.1:{port}")
        for _ in range(2):
            *_, error = await run_over_ws(port, user_input(new_id("t"), "안녕"))
            assert (error["type"], error["code"]) == ("RUN_ERROR", "AGENT_ERROR")
            assert error["message"] == NO_CREDENTIALS
    finally:
        process.terminate()
        process.wait(timeout=scaled(15))
    text = log.read_text()
    lines = text.splitlines()
    assert "Traceback" not in text
    assert f"INFO gateway.config: agent-gateway {version()}" in text
    said = [line.split(": ", 1)[1] for line in lines if " gateway.config: settings from " in line]
    assert said[0].startswith("settings from flags: port=")
    assert said[-1].startswith("settings from defaults: ")
    assert not [line for line in said if "more chars]" in line], "a line was cut"
    for name in setting_names():
        assert sum(f" {name}=" in line for line in said) == 1, name
    assert "agent=keyless_agent:root_agent" in said[0]
    # GATEWAY_WORKERS from the shell (the suite's multi-core pass) is said there too.
    shell = os.environ.get("GATEWAY_WORKERS")
    workers = f" workers={shell}" if shell else ""
    assert [s for s in said if s.startswith("settings from GATEWAY_* variables:")] == [
        f"settings from GATEWAY_* variables: service_token=[redacted]{workers} warm_up_runs=3"
    ]
    assert TOKEN not in text
    assert "GATEWAY_PROT is not a setting and is ignored; did you mean GATEWAY_PORT?" in text
    # One line at start (the probe), one per run, each with its cause.
    [probe] = [line for line in lines if "gateway.models.health" in line]
    assert "no credentials" in probe and "No API key" in probe
    failed = [line for line in lines if "gemini-2.5-flash failed: no credentials" in line]
    assert len(failed) == 2
    assert not [line for line in lines if " ERROR " in line]
