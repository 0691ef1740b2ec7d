"""The three probes answer three questions: /livez whether the process serves (200, with its
version, starting, unhealthy or draining alike), /readyz (and its older name /ready) whether
it should be sent work, and /ping the same as AgentCore asks it."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from gateway.config import version
from tests.support.agui import new_id, user_input
from tests.support.budgets import eventually, scaled
from tests.support.providers import Provider
from tests.support.providers.agents import navigator_on
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server

READINESS = ("/readyz", "/ready", "/ping")

# The demo's scripted model streams this reply in 94 chunks.
LONG = "자기소개를 길게 해 주세요"


async def answers(base: str, *paths: str) -> dict[str, tuple[int, str]]:
    async with httpx.AsyncClient(timeout=scaled(10)) as client:
        found = {}
        for path in paths:
            response = await client.get(base + path)
            found[path] = (response.status_code, response.json()["status"])
        return found


async def test_livez_says_alive_with_the_version_while_readiness_says_starting() -> None:
    async with running_gateway(await_ready=False, warm_up_runs=3) as gateway:
        async with httpx.AsyncClient(timeout=scaled(10)) as client:
            live = (await client.get(gateway.http + "/livez")).json()
        assert live == {"status": "Alive", "version": version()}
        assert version() != "unknown", "the test runs the installed package"
        seen = await answers(gateway.http, "/livez", *READINESS)
        if not gateway.app.ready.is_set():  # the warm-up may just have ended
            assert seen == {"/livez": (200, "Alive")} | dict.fromkeys(READINESS, (503, "Starting"))
        await asyncio.wait_for(gateway.app.ready.wait(), scaled(30))
        assert await answers(gateway.http, *READINESS) == dict.fromkeys(READINESS, (200, "Healthy"))


async def test_a_model_that_does_not_answer_makes_it_unready_but_never_dead(
    provider: Provider,
) -> None:
    await provider.stop()
    async with running_gateway(agent=navigator_on(provider), model_probe_interval=0.2) as gateway:
        assert await answers(gateway.http, "/livez", *READINESS) == {
            "/livez": (200, "Alive")
        } | dict.fromkeys(READINESS, (503, "Unhealthy"))


async def test_a_drain_makes_it_unready_but_never_dead() -> None:
    async with (
        running_gateway(scripted_pace_ms=20, drain_seconds=scaled(30)) as gateway,
        gateway.socket() as ws,
    ):
        # A run in progress keeps the server listening while it drains.
        await ws.send(user_input(new_id("t"), LONG))
        while not [e for e in ws.received if e["type"] == "TEXT_MESSAGE_CONTENT"]:
            await ws.next()
        gateway.server.should_exit = True  # what uvicorn's SIGTERM handler sets
        ping = gateway.app.ping
        assert ping is not None
        await eventually(lambda: ping.draining, 10, what="the drain never began")
        assert await answers(gateway.http, "/livez", *READINESS) == {
            "/livez": (200, "Alive")
        } | dict.fromkeys(READINESS, (503, "Draining"))
