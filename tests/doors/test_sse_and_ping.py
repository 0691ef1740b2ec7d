"""POST /invocations as SSE, GET /ping and GET /tools, with a plain HTTP client."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from gateway import wire as p
from gateway.auth import Authenticator, Identity
from gateway.doors.warmup import WARM_UP_USER
from gateway.examples.navigator.agent import APP_NAME
from gateway.hub.hub import Hub
from tests.support.agui import new_id, outcome, text_of, user_input
from tests.support.servers import RunningGateway, post_run, running_gateway

pytestmark = pytest.mark.server


async def test_text_run_streams_as_sse(gateway: RunningGateway) -> None:
    status, kind, events, _ = await post_run(gateway, user_input(new_id("t"), "안녕"))
    assert status == 200 and kind.startswith("text/event-stream")
    assert events[0]["type"] == "RUN_STARTED"
    assert text_of(events).startswith("안녕하세요")
    assert outcome(events) == {"type": "success"}


async def test_malformed_body_is_400_with_run_error(gateway: RunningGateway) -> None:
    status, _, events, _ = await post_run(gateway, b'{"threadId": 1}')
    assert status == 400
    assert events == [
        {"type": "RUN_ERROR", "code": "VALIDATION_ERROR", "message": events[0]["message"]}
    ]
    assert "$.threadId" in events[0]["message"]


async def test_busy_thread_is_409_session_busy(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        await ws.send(user_input(thread, "자기소개를 길게 해 주세요"))
        await ws.next()
        rejecting = user_input(thread, "안녕") | {"forwardedProps": {"gateway": {"busy": "reject"}}}
        status, _, events, _ = await post_run(gateway, rejecting)
        assert status == 409
        assert events[0]["code"] == "SESSION_BUSY"
        await ws.until_end()


async def test_bad_user_id_is_401(gateway: RunningGateway) -> None:
    status, _, events, _ = await post_run(gateway, user_input(new_id("t"), "안녕"), user="no way")
    assert status == 401 and events[0]["code"] == "UNAUTHORIZED"


async def test_ping_reports_busy_only_while_a_run_is_in_progress(
    gateway: RunningGateway,
) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        idle = (await client.get(gateway.http + "/ping")).json()
        assert idle["status"] == "Healthy"
        assert isinstance(idle["time_of_last_update"], int)
        again = (await client.get(gateway.http + "/ping")).json()
        assert again == idle, "the timestamp moves only when the status changes"
        async with gateway.socket() as ws:
            await ws.send(user_input(new_id("t"), "자기소개를 길게 해 주세요"))
            await ws.next()
            busy = (await client.get(gateway.http + "/ping")).json()
            assert busy["status"] == "HealthyBusy"
            assert busy["time_of_last_update"] >= idle["time_of_last_update"]
            await ws.until_end()
        await asyncio.sleep(0.05)
        assert (await client.get(gateway.http + "/ping")).json()["status"] == "Healthy"


async def test_tools_lists_the_client_tools_of_the_catalog(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        body = (await client.get(gateway.http + "/tools")).json()
    names = [tool["name"] for tool in body["tools"]]
    assert "navigateToScreen" in names and "find_screen" not in names
    navigate = next(t for t in body["tools"] if t["name"] == "navigateToScreen")
    assert navigate["parameters"]["required"] == ["screenId"]


async def test_unknown_routes(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        assert (await client.get(gateway.http + "/nope")).status_code == 404
        assert (await client.put(gateway.http + "/invocations")).status_code == 405


async def test_an_sse_request_stops_watching_its_thread_when_it_ends(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    status, _, _, _ = await post_run(gateway, user_input(thread, "안녕"))
    assert status == 200
    hub = gateway.app.hub
    assert hub is not None
    # Nothing keeps the thread in memory: no watcher is left behind by the finished request.
    assert thread not in hub.threads


async def test_ping_says_starting_until_the_warm_up_through_the_socket_is_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    users: list[str] = []
    real_identify = Authenticator.identify

    async def identify(self: Authenticator, scope: Any) -> Identity:
        identity = await real_identify(self, scope)
        users.append(identity.user)
        return identity

    monkeypatch.setattr(Authenticator, "identify", identify)
    declared: list[list[str]] = []
    real_start = Hub.start

    async def start(
        self: Hub,
        user_id: str,
        run_input: p.RunAgentInput,
        executor: Any,
        *rest: Any,
        **options: Any,
    ) -> Any:
        declared.append([tool.name for tool in run_input.tools])
        return await real_start(self, user_id, run_input, executor, *rest, **options)

    monkeypatch.setattr(Hub, "start", start)
    async with (
        running_gateway(await_ready=False, warm_up_runs=3) as gateway,
        httpx.AsyncClient() as client,
    ):
        statuses = []
        while not gateway.app.ready.is_set():
            response = await client.get(gateway.http + "/ping")
            statuses.append((response.status_code, response.json()["status"]))
            await asyncio.sleep(0.005)
        ready = await client.get(gateway.http + "/ping")
        assert (503, "Starting") in statuses
        assert (ready.status_code, ready.json()["status"]) == (200, "Healthy")
        # The warm-up ran as a client of the server's own /ws, and left no thread behind.
        assert users and set(users) == {WARM_UP_USER}
        # Its runs offered the model the client tools, as a browser's runs do.
        client_tools = [entry.name for entry in gateway.app.hub.engine.catalog.client_entries()]
        assert declared and all(names == client_tools for names in declared)
        sessions = gateway.app.hub.engine.sessions
        listed = await sessions.list_sessions(app_name=APP_NAME, user_id=WARM_UP_USER)
        assert listed.sessions == []
