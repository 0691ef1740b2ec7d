"""GET /metrics: off by default, behind its own credential when on, and counting what a
user's runs did, by name and value, with no user or thread among the labels."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.metrics import sample
from tests.support.agui import new_id, outcome, resume, user_input
from tests.support.approvals import ask_approval
from tests.support.budgets import eventually
from tests.support.flagship import flagship_navigated_then_honest_reply
from tests.support.servers import RunningGateway, post_run, running_gateway

pytestmark = pytest.mark.server

TOKEN = "scrape-me-please-0123456789"


async def scrape(gateway: RunningGateway, token: str | None = TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient() as client:
        return await client.get(gateway.http + "/metrics", headers=headers)


async def samples(gateway: RunningGateway) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape, by name and labels."""
    response = await scrape(gateway)
    assert response.status_code == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(
    found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def total(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str) -> float:
    return sum(v for (n, _), v in found.items() if n == name)


async def test_metrics_are_off_by_default_and_the_door_is_not_there() -> None:
    async with running_gateway() as gateway:
        assert (await scrape(gateway, None)).status_code == 404
        assert (await scrape(gateway)).status_code == 404


async def test_a_scrape_needs_the_metrics_credential() -> None:
    async with running_gateway(metrics="on", metrics_token=TOKEN) as gateway:
        anonymous = await scrape(gateway, None)
        assert anonymous.status_code == 401
        assert anonymous.headers["www-authenticate"].startswith("Bearer")
        assert "GATEWAY_METRICS_TOKEN" in anonymous.json()["message"]
        assert (await scrape(gateway, "a-user-token-that-is-not-it")).status_code == 401
        answered = await scrape(gateway)
        assert answered.status_code == 200
        assert answered.headers["content-type"].startswith("text/plain; version=0.0.4")
        assert "gateway_runs_total" in answered.text


async def test_the_flagship_story_is_counted_by_name_and_value() -> None:
    async with running_gateway(metrics="on", metrics_token=TOKEN) as gateway:
        await flagship_navigated_then_honest_reply(gateway)

        await eventually(
            lambda: sample(gateway.app.metrics, "gateway_connections", door="ws") == 0,
            5,
            what="the socket's close counted",
        )
        found = await samples(gateway)
        # Two runs: one paused on the browser's navigateToScreen, one answered.
        assert value(found, "gateway_runs_total", outcome="client_tools", code="") == 1
        assert value(found, "gateway_runs_total", outcome="success", code="") == 1
        assert total(found, "gateway_runs_total") == 2
        assert value(found, "gateway_run_started_seconds_count") == 2
        assert value(found, "gateway_run_seconds_count") == 2
        assert value(found, "gateway_run_first_text_seconds_count") == 2
        assert value(found, "gateway_runs_in_progress") == 0
        assert value(found, "gateway_client_tool_waits_total") == 1
        assert value(found, "gateway_client_tool_expiries_total") == 0
        # The demo's scripted model: find_screen, navigateToScreen, then the reply.
        assert value(found, "gateway_model_calls_total", model="scripted", result="ok") == 3
        assert value(found, "gateway_model_calls_total", model="scripted", result="error") == 0
        assert value(found, "gateway_model_call_seconds_count", model="scripted") == 3
        assert value(found, "gateway_model_tokens_total", model="scripted", direction="input") > 0
        assert value(found, "gateway_model_tokens_total", model="scripted", direction="output") > 0
        assert value(found, "gateway_store_commit_seconds_count") >= 1
        assert value(found, "gateway_store_writes_total") >= 2
        assert value(found, "gateway_store_queue_depth") >= 0
        # Bounded labels: no user, thread or run id is a label value.
        values = {v for (_, labels), _ in found.items() for _, v in labels}
        assert not [v for v in values if v == "demo" or v.startswith(("t-", "run"))]


async def test_limit_refusals_are_counted_by_limit() -> None:
    async with running_gateway(
        metrics="on", metrics_token=TOKEN, user_rate=0.01, user_burst=1
    ) as gateway:
        first, *_ = await post_run(gateway, user_input(new_id("t"), "안녕"))
        second, *_ = await post_run(gateway, user_input(new_id("t"), "안녕"))
        assert (first, second) == (200, 429)
        found = await samples(gateway)
        assert value(found, "gateway_limit_refusals_total", limit="rate") == 1
        assert value(found, "gateway_runs_total", outcome="success", code="") == 1


async def test_each_gateway_counts_alone() -> None:
    async with (
        running_gateway(metrics="on", metrics_token=TOKEN) as counted,
        running_gateway(metrics="on", metrics_token=TOKEN) as idle,
    ):
        await post_run(counted, user_input(new_id("t"), "안녕"))
        await asyncio.sleep(0)
        assert total(await samples(counted), "gateway_runs_total") == 1
        assert total(await samples(idle), "gateway_runs_total") == 0


async def test_approvals_and_reattaches_are_counted() -> None:
    async with running_gateway(metrics="on", metrics_token=TOKEN) as gateway:
        thread = new_id("t")
        async with gateway.socket() as ws:
            interrupt = await ask_approval(ws, thread)
            events = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
            assert outcome(events) == {"type": "success"}
            await ws.send({"type": "reattach", "threadId": thread})
            metrics = gateway.app.metrics
            await eventually(
                lambda: (sample(metrics, "gateway_replay_bytes_total") or 0) > 0,
                5,
                what="the reattach's snapshot counted",
            )
        found = await samples(gateway)
        assert value(found, "gateway_runs_total", outcome="interrupt", code="") == 1
        assert value(found, "gateway_approvals_asked_total") == 1
        assert value(found, "gateway_approvals_answered_total", decision="approved") == 1
        assert value(found, "gateway_reattaches_total") == 1


async def test_the_warm_up_runs_are_not_counted() -> None:
    async with running_gateway(metrics="on", metrics_token=TOKEN, warm_up_runs=3) as gateway:
        found = await samples(gateway)
        assert total(found, "gateway_runs_total") == 0
        assert total(found, "gateway_model_calls_total") == 0
        assert total(found, "gateway_model_tokens_total") == 0
        assert value(found, "gateway_run_seconds_count") == 0


async def test_run_started_is_timed_from_the_admission_to_the_socket_not_to_the_log() -> None:
    # The client waits from its input to its RUN_STARTED, which goes out as the input is
    # admitted (docs/first-event.md): that is timed, with the thread's read held back here,
    # and the run's logged RUN_STARTED after the read is not timed again.
    async with running_gateway(metrics="on", metrics_token=TOKEN) as gateway:
        assert gateway.app.hub is not None
        engine = gateway.app.hub.engine
        read, let_go = engine.open_thread, asyncio.Event()

        async def held(user_id: str, thread_id: str, *, known: bool) -> object:
            await let_go.wait()
            return await read(user_id, thread_id, known=known)

        engine.open_thread = held  # type: ignore[assignment,method-assign]
        async with gateway.socket() as ws:
            await ws.send(user_input(new_id("t"), "안녕"))
            assert (await ws.next())["type"] == "RUN_STARTED"
            await eventually(
                lambda: sample(gateway.app.metrics, "gateway_run_started_seconds_count") == 1,
                5,
                what="the RUN_STARTED sent timed before the thread is read",
            )
            let_go.set()
            assert outcome(await ws.until_end()) == {"type": "success"}
        found = await samples(gateway)
        assert value(found, "gateway_run_started_seconds_count") == 1
        assert value(found, "gateway_run_first_text_seconds_count") == 1
