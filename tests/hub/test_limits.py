"""Per-user rate limits and the cap on runs in progress: refused with a code, never a hang."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from gateway import wire as p
from gateway.hub.limits import RateLimiter, RunSlots, SendBudget
from tests.support.agui import new_id, outcome, tool_calls, user_input
from tests.support.flagship import FLAGSHIP
from tests.support.servers import running_gateway

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_allows_a_burst_then_the_rate_and_keeps_users_apart() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=2.0, burst=3, clock=clock)
    assert [limiter.allow("ann") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.allow("ann") == pytest.approx(0.5)
    assert limiter.allow("bob") == 0.0  # another user has a bucket of their own
    clock.now += 0.5
    assert limiter.allow("ann") == 0.0
    with pytest.raises(p.GatewayError) as refused:
        limiter.check("ann")
    assert refused.value.code is p.ErrorCode.RATE_LIMIT_EXCEEDED
    assert "Retry in 1 s" in refused.value.message


def test_buckets_of_quiet_users_are_dropped() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=1.0, burst=1, clock=clock)
    for index in range(10_000):
        limiter.allow(f"user{index}")
    clock.now += 5  # every bucket has refilled
    limiter.allow("one more")
    assert len(limiter._buckets) == 1


def test_a_send_budget_is_charged_after_the_fact_and_refuses_while_in_debt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("INFO", logger="gateway.hub.limits")
    clock = Clock()
    budget = SendBudget(rate=1000, burst=5000, clock=clock)
    budget.check("ann")
    budget.spend("ann", 7000)  # one large snapshot may take it past the burst, into debt
    assert "ann's reattaches and history pages passed their budget" in caplog.text
    with pytest.raises(p.GatewayError) as refused:
        budget.check("ann")
    assert refused.value.code is p.ErrorCode.RATE_LIMIT_EXCEEDED
    assert "Retry in 2 s" in refused.value.message
    assert "GATEWAY_USER_REATTACH_BYTES" in refused.value.message
    budget.check("bob")  # another user's budget is their own
    clock.now += 2
    budget.check("ann")  # paid back
    SendBudget(rate=0, burst=0).spend("ann", 1 << 40)  # 0: no limit


async def test_a_run_waits_for_a_slot_in_turn_and_is_refused_when_none_frees() -> None:
    slots = RunSlots(limit=1, wait_seconds=0.2)
    await slots.take()
    second = asyncio.create_task(slots.take())
    third = asyncio.create_task(slots.take())
    await asyncio.sleep(0.01)
    slots.give_back()  # the slot passes to the longest waiting run
    await asyncio.wait_for(second, 1)
    with pytest.raises(p.GatewayError) as refused:
        await third
    assert refused.value.code is p.ErrorCode.SERVICE_QUOTA_EXCEEDED
    slots.give_back()
    assert slots.taken == 0


async def test_a_cancelled_wait_gives_its_slot_on() -> None:
    slots = RunSlots(limit=1, wait_seconds=5)
    await slots.take()
    waiting = asyncio.create_task(slots.take())
    await asyncio.sleep(0.01)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    slots.give_back()
    assert slots.taken == 0


@pytest.mark.server
async def test_a_user_past_the_rate_is_refused_once_and_others_are_served() -> None:
    async with (
        running_gateway(user_rate=1.0, user_burst=5) as gateway,
        gateway.socket("flood") as ws,
        gateway.socket("calm") as other,
    ):
        for _ in range(30):
            await ws.send({"type": "cancel", "threadId": new_id("t")})
        # Five frames pass; the refusals of the other 25 come in a few errors, not 25.
        notices, refused = 0, 0
        while notices + refused < 30:
            events = await ws.until_end()
            if events[-1]["type"] == "RUN_ERROR":
                assert events[-1]["code"] == "RATE_LIMIT_EXCEEDED"
                assert "per user. Retry in 1 s." in events[-1]["message"]
                refused += int(events[-1]["message"].split(" frame(s)")[0].rsplit(" ", 1)[1])
            else:
                notices += 1
        assert (notices, refused) == (5, 25)
        assert outcome(await other.run(user_input(new_id("t"), "안녕"))) == {"type": "success"}
        async with httpx.AsyncClient(base_url=gateway.http) as client:
            response = await client.post(
                "/invocations",
                json=user_input(new_id("t"), "안녕"),
                headers={"X-Gateway-User": "flood"},
            )
        assert response.status_code == 429
        error = json.loads(response.text.removeprefix("data: "))
        assert error["code"] == "RATE_LIMIT_EXCEEDED"


@pytest.mark.server
async def test_what_one_users_reattaches_make_the_gateway_send_is_bounded() -> None:
    """Issue 27: a 52-byte reattach made the gateway send a whole snapshot, as often as the
    frame rate allowed. What reattaches (and /history pages, and the resumable SSE stream)
    send one user is charged to a budget; past it they are refused, others are not."""
    burst = 40_000
    async with (
        running_gateway(user_reattach_bytes=1000, user_reattach_burst=burst) as gateway,
        gateway.socket("flood") as ws,
        gateway.socket("calm") as other,
    ):
        thread = new_id("t")
        for _ in range(3):
            await ws.run(user_input(thread, "자기소개를 길게 해 주세요"))
        sent, reattaches = 0, 0
        while True:
            events = await ws.run({"type": "reattach", "threadId": thread})
            if events[-1]["type"] == "RUN_ERROR":
                break
            reattaches += 1
            sent += sum(len(json.dumps(e, ensure_ascii=False).encode()) for e in events)
        refused = events[-1]
        assert refused["code"] == "RATE_LIMIT_EXCEEDED" and "Retry in" in refused["message"]
        snapshot = sent / reattaches
        assert reattaches >= 2 and burst <= sent <= burst + 2 * snapshot, (sent, snapshot)
        # Another user is served; the flooding one is refused at every door that reads a thread.
        calm = new_id("t")
        await other.run(user_input(calm, "안녕"))
        assert outcome(await other.run({"type": "reattach", "threadId": calm}))
        async with httpx.AsyncClient(base_url=gateway.http) as client:
            flood = {"X-Gateway-User": "flood"}
            history = await client.get(f"/history?threadId={thread}", headers=flood)
            resumed = await client.get(f"/invocations?threadId={thread}", headers=flood)
        assert (history.status_code, resumed.status_code) == (429, 429)
        assert gateway.app.hub.audit is not None
        rows = await gateway.app.hub.audit.query_access(user="flood")
        assert any(r.action == "reattach" and r.outcome == "RATE_LIMIT_EXCEEDED" for r in rows)


@pytest.mark.server
async def test_runs_past_the_cap_wait_their_turn_and_paused_runs_hold_no_slot() -> None:
    async with (
        running_gateway(max_runs=1, run_wait=10.0, scripted_pace_ms=20.0) as gateway,
        gateway.socket("demo") as ann,
        gateway.socket("guest") as bob,
    ):
        paused = new_id("t")
        # Paused on the browser: the run ended, and holds no slot while it waits.
        assert tool_calls(await ann.run(user_input(paused, FLAGSHIP)), "navigateToScreen")
        await ann.send(user_input(new_id("t"), "안녕"))
        await bob.send(user_input(new_id("t"), "안녕"))
        first, second = await asyncio.gather(ann.until_end(), bob.until_end())
        assert outcome(first) == outcome(second) == {"type": "success"}
        assert gateway.app.hub is not None and gateway.app.hub.slots.taken == 0


@pytest.mark.server
async def test_a_run_refused_for_want_of_a_slot_says_so() -> None:
    async with (
        running_gateway(max_runs=1, run_wait=0.02, scripted_pace_ms=50.0) as gateway,
        gateway.socket("ann") as ann,
        gateway.socket("bob") as bob,
    ):
        await ann.send(user_input(new_id("t"), "안녕"))
        await ann.next()  # RUN_STARTED: the one slot is taken
        # Admitted at once, and told it waits (docs/first-event.md); then refused.
        started, told, error = await bob.run(user_input(new_id("t"), "안녕"))
        assert started["type"] == "RUN_STARTED" and told["value"]["code"] == "RUNS_FULL"
        assert error["type"] == "RUN_ERROR" and error["code"] == "SERVICE_QUOTA_EXCEEDED"
        assert "limit of 1 runs" in error["message"]
        assert outcome(await ann.until_end(timeout=30)) == {"type": "success"}
