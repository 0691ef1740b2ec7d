"""Exactly once, under chaos: the flagship story in Chromium cut by reloads, TCP drops and
gateway SIGKILLs at any moment, and every browser action still performed once, by the tab
that asked, with its real outcome reaching the model (issue 14's proof, reduced; the full
run is ``scripts/chaos.py``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser

from gateway.audit import AuditRecord
from tests.e2e.chaos.proxy import CutMode, CuttableProxy
from tests.e2e.chaos.trials import (
    TIMED_MS,
    Cut,
    Fault,
    Outcome,
    Stage,
    TrialPlan,
    calibrate,
    frame_count,
    plan_trials,
    report,
    run_trial,
    table,
)
from tests.support.browser import NEEDS_CHROMIUM, WebApp, new_context
from tests.support.budgets import scaled
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.processes import script_report

pytestmark = pytest.mark.browser

REDUCED_TRIALS = 20
CUT_OFF = "reply cut off"
SEED = 14
# A trial not settled by then counts as waiting out the client-tool timeout (60 s); a kill
# trial takes 8-16 s on a quiet machine: the restart, then the page's backoff.
TRIAL_DEADLINE = scaled(30.0)
# The whole reduced run stops starting trials after this, so a broken build fails in time.
RUN_BUDGET = scaled(150.0)

AUDITED = AuditRecord(
    at=0.0,
    user_id="demo",
    thread_id="t",
    run_id="r",
    tool="navigateToScreen",
    call_id="call-1",
    arguments={"screenId": "MNU-3120"},
    outcome="navigated",
    detail=None,
    duration_ms=1.0,
    executor="client",
)


# --- the proxy ------------------------------------------------------------------------------


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(1024):
        writer.write(data)
        await writer.drain()
    writer.close()


@pytest.mark.server
@pytest.mark.parametrize(("mode", "ends_with"), [("rst", "reset"), ("fin", "eof")])
async def test_the_proxy_cuts_every_connection_at_once_and_keeps_accepting(
    mode: CutMode, ends_with: str
) -> None:
    upstream = await asyncio.start_server(_echo, "127.0.0.1", 0)
    proxy = CuttableProxy(upstream.sockets[0].getsockname()[1])
    await proxy.start()
    try:
        clients = [await asyncio.open_connection("127.0.0.1", proxy.port) for _ in range(2)]
        for reader, writer in clients:
            writer.write(b"ping")
            assert await asyncio.wait_for(reader.readexactly(4), 5) == b"ping"

        assert proxy.cut(mode) == 2

        for reader, _ in clients:
            try:
                data = await asyncio.wait_for(reader.read(1024), 5)
                ended = "eof" if data == b"" else f"data {data!r}"
            except ConnectionResetError:
                ended = "reset"
            assert ended == ends_with
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(b"again")
        assert await asyncio.wait_for(reader.readexactly(5), 5) == b"again"
        assert proxy.open_connections == 1
        writer.close()
    finally:
        await proxy.close()
        upstream.close()
        await upstream.wait_closed()


@pytest.mark.server
async def test_the_proxy_refuses_at_once_while_the_gateway_is_down() -> None:
    upstream = await asyncio.start_server(_echo, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]
    upstream.close()
    await upstream.wait_closed()
    proxy = CuttableProxy(port)
    await proxy.start()
    try:
        reader, _ = await asyncio.open_connection("127.0.0.1", proxy.port)
        with pytest.raises((ConnectionResetError, asyncio.IncompleteReadError)):
            await asyncio.wait_for(reader.readexactly(1), 5)
    finally:
        await proxy.close()


# --- the plan -------------------------------------------------------------------------------


@pytest.mark.unit
def test_the_plan_sweeps_every_cut_point_of_every_fault_and_depends_on_the_seed_only() -> None:
    frames = 18
    points = frames + len(TIMED_MS)
    plan = plan_trials(3 * points, seed=SEED, frames=frames)

    assert plan == plan_trials(3 * points, seed=SEED, frames=frames)
    assert plan != plan_trials(3 * points, seed=SEED + 1, frames=frames)
    for fault in Fault:
        cuts = [trial.cut for trial in plan if trial.fault is fault]
        assert sorted(cuts, key=str) == sorted(
            [Cut(frame=k) for k in range(1, frames + 1)] + [Cut(ms=ms) for ms in TIMED_MS], key=str
        )
    # The faults take turns, so any prefix (the reduced run) mixes all three.
    assert {trial.fault for trial in plan[:3]} == set(Fault)
    assert any(trial.observer for trial in plan) and not all(trial.observer for trial in plan)


# --- in Chromium ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def stage(browser: Browser, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stage]:
    """A gateway process behind the proxy, on a file, for this module's browser tests."""
    workdir = tmp_path_factory.mktemp("chaos")
    async with Stage.running(workdir, pace_ms=20, browser=browser) as running:
        yield running


@NEEDS_CHROMIUM
async def test_a_tabs_navigation_count_survives_its_reload(stage: Stage) -> None:
    assert stage.browser is not None
    context = await new_context(stage.browser)
    try:
        page = await context.new_page()
        await page.goto(stage.url)
        app = WebApp(page)
        await app.wait_connected()
        await app.say(FLAGSHIP)
        await app.last_reply_contains(MOVED)

        await app.reload()

        assert await app.navigations() == 0  # window.__navigations starts again
        assert await page.evaluate("sessionStorage.getItem('agw.navigations')") == "1"
    finally:
        await context.close()


@NEEDS_CHROMIUM
async def test_the_flagship_is_performed_exactly_once_whatever_cuts_it(stage: Stage) -> None:
    calibration = await calibrate(stage)
    plans = plan_trials(REDUCED_TRIALS, SEED, frame_count(calibration))
    outcomes: list[Outcome] = []
    started = time.monotonic()
    for plan in plans:
        if time.monotonic() - started > RUN_BUDGET:
            break
        outcomes.append(await run_trial(stage, plan, TRIAL_DEADLINE))

    summary = f"{table(outcomes)}\n{report(outcomes)}"
    assert len(outcomes) == len(plans), f"out of time after {len(outcomes)} trials:\n{summary}"
    assert {o.plan.fault for o in outcomes} == set(Fault)
    assert not [o for o in outcomes if o.failures()], summary


@NEEDS_CHROMIUM
async def test_a_reply_a_sigkill_cuts_off_is_finished_after_the_restart(stage: Stage) -> None:
    mid_reply = Cut(frame=12)  # the first TEXT_MESSAGE_CONTENT of the answer
    outcome = await run_trial(stage, TrialPlan(1, Fault.KILL, mid_reply, False), TRIAL_DEADLINE)

    assert outcome.navigations == 1 and not outcome.lost, "\n".join(outcome.frames)
    assert not outcome.failures(), outcome.line()


@NEEDS_CHROMIUM
def test_the_chaos_script_prints_a_row_per_fault_and_the_trials_that_missed() -> None:
    output = script_report("scripts.chaos", "--trials 1 --client-tool-timeout 10", timeout=120)
    assert "clean run: " in output, output
    assert "| reload | 1 " in output and "| all " in output, output
    assert "#1 reload at " in output, output


@pytest.mark.unit
def test_the_table_counts_each_missed_target_per_fault() -> None:
    def outcome(fault: Fault, navigations: int, reply: str, title: str) -> Outcome:
        return Outcome(
            plan=plan_trials(3, SEED, 1)[list(Fault).index(fault)],
            thread_id="t",
            asked={"call-1"},
            navigations=navigations,
            observer_navigations=None,
            results=[],
            stored={},
            settled_ms=100.0,
            reply=reply,
            title=title,
            frames=[],
            invalid=[],
            page_errors=[],
        )

    twice = outcome(Fault.RELOAD, 2, MOVED, "업무 요청 목록")
    never = outcome(Fault.KILL, 0, "이동하지 못했습니다", "홈")
    cut_off = outcome(Fault.DROP, 1, "업무 요청 \n\n(응답이 중단되었습니다)", "업무 요청 목록")
    cut_off.results = [AUDITED]

    outcomes = [twice, never, cut_off]
    rows = {line.split("|")[1].strip(): line for line in table(outcomes).splitlines()}
    cells = [cell.strip() for cell in rows["reload"].split("|")[2:-1]]
    # trials, doubles, never, lost, waited out, mismatched, cut off, other tab
    assert cells[:8] == ["1", "1", "0", "1", "0", "0", "0", "0"]
    cells = [cell.strip() for cell in rows["kill"].split("|")[2:-1]]
    assert cells[:8] == ["1", "0", "1", "0", "0", "0", "0", "0"]
    cells = [cell.strip() for cell in rows["drop"].split("|")[2:-1]]
    assert cells[:8] == ["1", "0", "0", "0", "0", "0", "1", "0"]
    assert [o.failures() for o in outcomes] == [["double", "lost"], ["never"], ["reply cut off"]]

    # Recorded twice (before a crash and again when re-sent): the audit's miss, not the user's.
    audited_twice = outcome(Fault.DROP, 1, MOVED, "업무 요청 목록")
    audited_twice.results = [AUDITED, AUDITED]
    assert audited_twice.audit_miscount and not audited_twice.failures()

    # The reply says it moved, and the navigation's row still waits for its result.
    waiting = outcome(Fault.RELOAD, 1, MOVED, "업무 요청 목록")
    waiting.results = [AUDITED]
    waiting.waiting_rows = ["navigateToScreen pending"]
    assert waiting.failures() == ["row left waiting"]
    assert table([waiting]).splitlines()[2].split("|")[12].strip() == "1"  # rows waiting
