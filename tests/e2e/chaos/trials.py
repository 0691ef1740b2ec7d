"""The exactly-once chaos trials: the flagship story in Chromium, each run cut by one fault.

A trial opens the reference client as ``demo`` on a fresh thread (a new browser context,
so a new sessionStorage), sometimes with a second tab watching the same thread, types the
flagship request, and cuts the run once:

- ``reload``: the asking tab reloads;
- ``drop``: the TCP proxy between the browser and the gateway cuts every connection
  (RST or FIN) and goes on accepting;
- ``kill``: the gateway gets SIGKILL and starts again on the same port and database file.

The cut comes after the k-th AG-UI frame the asking tab receives after Enter (playwright's
``framereceived``, so it lands a few milliseconds after the page saw frame k), or at a
timed point after Enter. Then the trial waits, up to its deadline, for the thread to settle
and reads what happened: navigations in each tab (sessionStorage ``agw.navigations``,
which survives a reload), the navigateToScreen results in the audit log, and whether the
bot's last reply says it moved exactly when the asking tab shows the list.

The plan is a pure function of the seed and the number of frames a clean run has, which a
calibration trial counts first; everything listens on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import enum
import json
import random
import statistics
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, BrowserContext, Page, WebSocket, async_playwright
from playwright.async_api import Error as PlaywrightError

from gateway.audit import AuditRecord, read_audit
from tests.e2e.chaos.proxy import CutMode, CuttableProxy
from tests.support.browser import WebApp, check_streams, launch_chromium, new_context
from tests.support.budgets import scaled
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.processes import GATEWAY, gateway_process

NAVIGATE = "navigateToScreen"
LIST_TITLE = "업무 요청 목록"
# Timed cuts, in ms after Enter: a run of the flagship at 20 ms a chunk lasts about 500 ms.
TIMED_MS = tuple(range(0, 501, 50))
OBSERVER_SHARE = 1 / 3
POLL_SECONDS = 0.1
# How long the page must stay idle before a trial counts as settled: after a reply that
# follows the call, and otherwise (no call made, or no reply after it).
QUIET_AFTER_REPLY = 0.3
QUIET_OTHERWISE = 1.5
# A frame cut whose frame never comes (a shorter run than calibrated) waits this long.
CUT_WAIT_SECONDS = scaled(10.0)


class Fault(enum.StrEnum):
    RELOAD = "reload"
    DROP = "drop"
    KILL = "kill"


@dataclasses.dataclass(frozen=True)
class Cut:
    """After the ``frame``-th frame the asking tab receives after Enter, or ``ms`` after it."""

    frame: int | None = None
    ms: int | None = None

    def __str__(self) -> str:
        return f"frame {self.frame}" if self.frame is not None else f"{self.ms} ms"


@dataclasses.dataclass(frozen=True)
class TrialPlan:
    number: int
    fault: Fault | None  # None: the calibration run, uncut
    cut: Cut
    observer: bool
    drop_mode: CutMode = "rst"

    def __str__(self) -> str:
        fault = "clean" if self.fault is None else str(self.fault)
        if self.fault is Fault.DROP:
            fault += f"/{self.drop_mode}"
        watcher = " +observer" if self.observer else ""
        return f"#{self.number} {fault} at {self.cut}{watcher}"


def plan_trials(count: int, seed: int, frames: int) -> list[TrialPlan]:
    """``count`` trials, the faults taking turns; each fault sweeps every cut point (frames
    1..``frames`` and TIMED_MS) in a seeded order before it repeats one."""
    rng = random.Random(seed)
    points = [Cut(frame=k) for k in range(1, frames + 1)] + [Cut(ms=ms) for ms in TIMED_MS]
    queues: dict[Fault, list[Cut]] = {fault: [] for fault in Fault}
    faults = list(Fault)
    plans: list[TrialPlan] = []
    for number in range(1, count + 1):
        fault = faults[(number - 1) % len(faults)]
        if not queues[fault]:
            queues[fault] = rng.sample(points, len(points))
        plans.append(
            TrialPlan(
                number,
                fault,
                queues[fault].pop(),
                observer=rng.random() < OBSERVER_SHARE,
                drop_mode=rng.choice(("rst", "fin")),
            )
        )
    return plans


@dataclasses.dataclass
class Outcome:
    """What one trial did, read after it settled (or at its deadline)."""

    plan: TrialPlan
    thread_id: str
    asked: set[str]  # navigateToScreen call ids the tabs saw (live or in a snapshot)
    navigations: int  # in the asking tab, across its reloads
    observer_navigations: int | None
    results: list[AuditRecord]  # the audit's navigateToScreen rows for the thread
    stored: dict[str, str]  # result status of each asked call as the thread stores it
    settled_ms: float | None  # from Enter; None: not settled by the deadline
    reply: str
    title: str
    frames: list[str]
    invalid: list[str]
    page_errors: list[str]
    waiting_rows: list[str] = dataclasses.field(default_factory=list)  # once settled

    @property
    def performed(self) -> int:
        return self.navigations + (self.observer_navigations or 0)

    @property
    def double(self) -> bool:
        return self.performed > 1

    @property
    def other_tab(self) -> bool:
        return bool(self.observer_navigations)

    @property
    def never(self) -> bool:
        """The model asked and no tab performed it, with the asking tab alive throughout."""
        return bool(self.asked) and self.performed == 0

    @property
    def lost(self) -> bool:
        """The screen opened, but neither the audit nor the thread has a "navigated" result."""
        outcomes = [r.outcome for r in self.results] + list(self.stored.values())
        return self.navigations > 0 and "navigated" not in outcomes

    @property
    def audit_miscount(self) -> bool:
        """A call with a result has not exactly one audit row: none (the SIGKILL took the
        queued row), or two (one written before the crash, one for the re-sent result)."""
        answered = set(self.stored) | {r.call_id for r in self.results}
        rows = collections.Counter(r.call_id for r in self.results)
        return any(rows[call] != 1 for call in answered)

    @property
    def waited_out(self) -> bool:
        """The run ended only by the client-tool timeout, or still waited at the deadline."""
        timed_out = any(r.outcome == "no_result" and r.detail == "timeout" for r in self.results)
        answered = {r.call_id for r in self.results} | set(self.stored)
        return timed_out or (self.settled_ms is None and bool(self.asked - answered))

    @property
    def cut_off(self) -> bool:
        """The screen opened and the model was told, but its reply saying so never came
        whole (the gateway died mid-reply)."""
        return self.title == LIST_TITLE and MOVED not in self.reply and not self.lost

    @property
    def row_left_waiting(self) -> bool:
        """The thread has its answer, and a tool row still says it waits for one (issue 29:
        "화면 이동 … 결과 대기 중" under a reply that says it moved)."""
        return self.settled_ms is not None and bool(self.waiting_rows)

    @property
    def mismatched(self) -> bool:
        """The reply says it moved and the page did not, or the other way round; a reply cut
        off before it said so counts as ``cut_off`` instead."""
        return not self.cut_off and (MOVED in self.reply) != (self.title == LIST_TITLE)

    def failures(self) -> list[str]:
        """The targets this trial missed, as words."""
        checks = {
            "double": self.double,
            "other tab": self.other_tab,
            "never": self.never,
            "lost": self.lost,
            "waited out": self.waited_out,
            "mismatched": self.mismatched,
            "reply cut off": self.cut_off,
            "row left waiting": self.row_left_waiting,
            "invalid stream": bool(self.invalid),
            "page error": bool(self.page_errors),
        }
        return [name for name, missed in checks.items() if missed]

    def line(self) -> str:
        settled = f"{self.settled_ms:.0f} ms" if self.settled_ms is not None else "unsettled"
        results = ",".join(r.outcome for r in self.results) or "-"
        if self.audit_miscount:
            results += f" (stored: {','.join(self.stored.values()) or '-'})"
        if self.waiting_rows:
            results += f" waiting rows: {', '.join(self.waiting_rows)}"
        watcher = f" observer={self.observer_navigations}" if self.plan.observer else ""
        verdict = ", ".join(self.failures()) or "ok"
        return (
            f"{self.plan!s:34} navigations={self.navigations}{watcher} audit={results}"
            f" settled={settled} title={self.title!r} reply={self.reply[:40]!r}: {verdict}"
        )


class Stage:
    """The gateway process (restartable), the proxy in front of it, and Chromium."""

    def __init__(
        self, workdir: Path, *, pace_ms: float, client_tool_timeout: float, user: str = "demo"
    ) -> None:
        self.db = workdir / "chaos.db"
        self.log = workdir / "gateway.log"
        self.pace_ms = pace_ms
        self.client_tool_timeout = client_tool_timeout
        self.user = user
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self._gateway = contextlib.AsyncExitStack()
        self.proxy: CuttableProxy | None = None
        self.browser: Browser | None = None

    @property
    def url(self) -> str:
        assert self.proxy is not None
        return f"http://127.0.0.1:{self.proxy.port}/?user={self.user}"

    async def start_gateway(self) -> None:
        flags = ["--client-tool-timeout", str(self.client_tool_timeout), "--log-level", "warning"]
        # A hundred trials by one user is no flood: the rate limit has tests of its own.
        flags += ["--user-rate", "0"]
        self.process, self.port = await self._gateway.enter_async_context(
            gateway_process(
                self.db,
                self.log,
                pace_ms=self.pace_ms,
                command=(*GATEWAY, "serve", *flags),
                port=self.port,
            )
        )

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()

    async def restart(self) -> None:
        """After ``kill``: the same port and database file, as a supervisor would."""
        if self.process is not None:
            await asyncio.to_thread(self.process.wait)
        await self._gateway.aclose()
        self._gateway = contextlib.AsyncExitStack()
        await self.start_gateway()
        self.restarts += 1

    async def ensure_alive(self) -> None:
        if self.process is None or self.process.poll() is not None:
            await self.restart()

    async def results(self, thread_id: str) -> list[AuditRecord]:
        rows = await read_audit(str(self.db), thread=thread_id)
        return [r for r in rows if r.tool == NAVIGATE and r.executor == "client"]

    @classmethod
    @contextlib.asynccontextmanager
    async def running(
        cls,
        workdir: Path,
        *,
        pace_ms: float = 20,
        client_tool_timeout: float = 60,
        browser: Browser | None = None,
    ) -> AsyncIterator[Stage]:
        """The gateway, the proxy and ``browser`` (a Chromium of its own unless given)."""
        stage = cls(workdir, pace_ms=pace_ms, client_tool_timeout=client_tool_timeout)
        async with contextlib.AsyncExitStack() as stack:
            await stage.start_gateway()
            stack.push_async_callback(lambda: stage._gateway.aclose())
            assert stage.port is not None
            stage.proxy = CuttableProxy(stage.port)
            await stage.proxy.start()
            stack.push_async_callback(stage.proxy.close)
            if browser is None:
                playwright = await stack.enter_async_context(async_playwright())
                browser = await launch_chromium(playwright)
                stack.push_async_callback(browser.close)
            stage.browser = browser
            yield stage


class Tape:
    """The frames the asking tab receives after Enter, and the cut at the k-th."""

    def __init__(self, cut_at_frame: int | None, cut: Callable[[str], None]) -> None:
        self.cut_at_frame = cut_at_frame
        self._cut = cut
        self.armed_at: float | None = None
        self.count = 0
        self.lines: list[str] = []
        self.asked: set[str] = set()
        self.sockets = 0
        # Results of calls as the thread stores them (snapshots, TOOL_CALL_RESULT): status.
        self.stored: dict[str, str] = {}

    def follow(self, socket: WebSocket, *, asking: bool) -> None:
        self.sockets += 1
        number = self.sockets

        def received(payload: str | bytes) -> None:
            with contextlib.suppress(ValueError):
                self._saw(json.loads(payload), number, asking)

        socket.on("framereceived", received)

    def mark(self, what: str) -> None:
        self.lines.append(f"{self._ms():6.0f} ms  ✂ {what} (after frame {self.count})")

    def _saw(self, event: dict[str, Any], socket: int, asking: bool) -> None:
        self.asked.update(_navigate_calls(event))
        self.stored.update(_results(event))
        if not asking or self.armed_at is None:
            return
        self.count += 1
        self.lines.append(f"{self._ms():6.0f} ms  ws{socket} #{self.count} {_summary(event)}")
        if self.count == self.cut_at_frame:
            self._cut(f"frame {self.count}")

    def _ms(self) -> float:
        return (time.monotonic() - (self.armed_at or time.monotonic())) * 1000


def _navigate_calls(event: dict[str, Any]) -> set[str]:
    if event.get("type") == "TOOL_CALL_START" and event.get("toolCallName") == NAVIGATE:
        return {str(event.get("toolCallId"))}
    if event.get("type") == "MESSAGES_SNAPSHOT":
        return {
            str(call.get("id"))
            for message in event.get("messages") or []
            for call in message.get("toolCalls") or []
            if (call.get("function") or {}).get("name") == NAVIGATE
        }
    return set()


def _results(event: dict[str, Any]) -> dict[str, str]:
    """Call id -> result status, of the tool results an event carries."""
    if event.get("type") == "TOOL_CALL_RESULT":
        return {str(event.get("toolCallId")): _status(event.get("content"))}
    if event.get("type") == "MESSAGES_SNAPSHOT":
        return {
            str(message.get("toolCallId")): _status(message.get("content"))
            for message in event.get("messages") or []
            if message.get("role") == "tool"
        }
    return {}


def _status(content: Any) -> str:
    with contextlib.suppress(TypeError, ValueError, AttributeError):
        return str(json.loads(content).get("status") or "ok")
    return "ok"


def _summary(event: dict[str, Any]) -> str:
    kind = str(event.get("type"))
    if kind == "TOOL_CALL_START":
        return f"{kind} {event.get('toolCallName')}"
    if kind == "RUN_FINISHED":
        outcome = event.get("outcome") or {}
        pending = outcome.get("pendingToolCallIds")
        return f"{kind} {outcome.get('type')}" + (f" pending={len(pending)}" if pending else "")
    if kind == "CUSTOM":
        return f"{kind} {event.get('name')} {json.dumps(event.get('value'), ensure_ascii=False)}"
    if kind == "RUN_ERROR":
        return f"{kind} {event.get('code')}"
    if kind == "MESSAGES_SNAPSHOT":
        return f"{kind} ({len(event.get('messages') or [])} messages)"
    return kind


# What the asking tab shows: connection, busy, the main area's title, the last reply and
# whether it comes after the last navigateToScreen row, the tab's navigation count, and the
# tool rows still waiting for a result (tool and state).
_PAGE_STATE = """() => {
  const items = [...document.querySelectorAll('#transcript-items > li')];
  let call = -1, reply = -1;
  items.forEach((item, i) => {
    if (item.matches('.activity[data-tool="navigateToScreen"]')) call = i;
    if (item.matches('.msg.assistant')) reply = i;
  });
  return {
    connection: document.querySelector('.app')?.dataset.connection ?? '',
    busy: document.querySelector('#chat')?.dataset.busy === 'true',
    title: document.querySelector('#main h1')?.textContent ?? '',
    reply: reply >= 0 ? items[reply].querySelector('.text')?.textContent ?? '' : '',
    replyAfterCall: call >= 0 && reply > call,
    navigations: Number(sessionStorage.getItem('agw.navigations') ?? 0),
    waiting: [...document.querySelectorAll('#transcript-items > li.activity:not([data-outcome])')]
      .map((row) => `${row.dataset.tool} ${row.dataset.state}`),
  };
}"""


async def _page_state(page: Page) -> dict[str, Any] | None:
    try:
        state: dict[str, Any] = await page.evaluate(_PAGE_STATE)
    except PlaywrightError:  # between documents during a reload
        return None
    return state


async def run_trial(stage: Stage, plan: TrialPlan, deadline_seconds: float) -> Outcome:
    """One trial on a fresh browser context; see the module docstring."""
    assert stage.browser is not None
    await stage.ensure_alive()
    context = await new_context(stage.browser)
    try:
        return await _trial(stage, context, plan, deadline_seconds)
    finally:
        await context.close()


async def _trial(
    stage: Stage, context: BrowserContext, plan: TrialPlan, deadline_seconds: float
) -> Outcome:
    assert stage.proxy is not None
    invalid: list[str] = []
    page_errors: list[str] = []
    cut_done = asyncio.Event()
    reloads: list[asyncio.Future[Any]] = []

    def cut(what: str) -> None:
        if cut_done.is_set() or plan.fault is None:
            return
        cut_done.set()
        tape.mark(f"{plan.fault} at {what}")
        if plan.fault is Fault.RELOAD:
            reloads.append(asyncio.ensure_future(asking.reload()))
        elif plan.fault is Fault.DROP:
            assert stage.proxy is not None
            stage.proxy.cut(plan.drop_mode)
        else:
            stage.kill()

    tape = Tape(plan.cut.frame, cut)
    asking = await _open(context, stage.url, tape, invalid, page_errors, asking=True)
    app = WebApp(asking)
    thread_id = await app.thread_id()
    watching = None
    if plan.observer:
        url = f"{stage.url}#thread={thread_id}"
        watching = await _open(context, url, tape, invalid, page_errors, asking=False)

    box = asking.get_by_role("textbox", name="메시지")
    await box.fill(FLAGSHIP)
    entered = tape.armed_at = time.monotonic()
    timer = None
    if plan.fault is not None and plan.cut.ms is not None:
        # Armed before the press, which takes a while to return: "0 ms" may beat the input.
        ms = plan.cut.ms
        timer = asyncio.get_running_loop().call_later(ms / 1000, cut, f"{ms} ms")
    await box.press("Enter")
    if plan.fault is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(cut_done.wait(), CUT_WAIT_SECONDS)
        if plan.fault is Fault.KILL and cut_done.is_set():
            await stage.restart()
    if timer is not None:
        timer.cancel()

    settled_ms, state = await _settle(stage, asking, thread_id, tape, entered, deadline_seconds)
    for reload in reloads:
        with contextlib.suppress(PlaywrightError):
            await reload
    observer_navigations = None
    if watching is not None:
        seen = await _page_state(watching)
        observer_navigations = int(seen["navigations"]) if seen else -1
    results = await stage.results(thread_id)
    return Outcome(
        plan=plan,
        thread_id=thread_id,
        asked=tape.asked | {r.call_id for r in results},
        navigations=int(state["navigations"]) if state else -1,
        observer_navigations=observer_navigations,
        results=results,
        stored={call: status for call, status in tape.stored.items() if call in tape.asked},
        settled_ms=settled_ms,
        reply=str(state["reply"]) if state else "",
        title=str(state["title"]) if state else "",
        frames=tape.lines,
        invalid=invalid,
        page_errors=page_errors,
        waiting_rows=list(state["waiting"]) if state else [],
    )


async def _open(
    context: BrowserContext,
    url: str,
    tape: Tape,
    invalid: list[str],
    page_errors: list[str],
    *,
    asking: bool,
) -> Page:
    page = await context.new_page()
    check_streams(page, invalid)
    page.on("websocket", lambda socket: tape.follow(socket, asking=asking))
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    await page.goto(url)
    await WebApp(page).wait_connected()
    return page


async def _settle(
    stage: Stage,
    page: Page,
    thread_id: str,
    tape: Tape,
    entered: float,
    deadline_seconds: float,
) -> tuple[float | None, dict[str, Any] | None]:
    """Waits until the asking tab is connected and idle and every call it saw has a result
    (in the audit or the stored thread), for long enough; returns when that began (ms after
    Enter) and the page's state."""
    deadline = entered + deadline_seconds
    quiet_since: float | None = None
    state: dict[str, Any] | None = None
    while True:
        now = time.monotonic()
        state = await _page_state(page) or state
        idle = state is not None and state["connection"] == "open" and not state["busy"]
        answered = {r.call_id for r in await stage.results(thread_id)} | set(tape.stored)
        done = idle and tape.asked <= answered
        if not done or state is None:
            quiet_since = None
        else:
            quiet_since = quiet_since or now
            quiet = QUIET_AFTER_REPLY if tape.asked and state["replyAfterCall"] else QUIET_OTHERWISE
            if now - quiet_since >= quiet:
                return (quiet_since - entered) * 1000, state
        if now >= deadline:
            return None, state
        await asyncio.sleep(POLL_SECONDS)


async def calibrate(stage: Stage, deadline_seconds: float | None = None) -> Outcome:
    """One clean run: how many frames the asking tab gets, and proof the story works."""
    deadline_seconds = deadline_seconds or scaled(20)
    outcome = await run_trial(stage, TrialPlan(0, None, Cut(), observer=False), deadline_seconds)
    if outcome.failures() or outcome.navigations != 1 or outcome.settled_ms is None:
        raise AssertionError("the clean flagship run failed:\n" + "\n".join(_report(outcome)))
    return outcome


def frame_count(calibration: Outcome) -> int:
    return sum(1 for line in calibration.frames if " ws" in line)


def _report(outcome: Outcome) -> list[str]:
    return [outcome.line(), *(f"    {line}" for line in outcome.frames)]


def report(outcomes: list[Outcome]) -> str:
    """The trials that missed a target, each with its frame sequence."""
    failed = [o for o in outcomes if o.failures()]
    return "\n".join(line for outcome in failed for line in _report(outcome))


COLUMNS = (
    "fault",
    "trials",
    "doubles",
    "never",
    "lost",
    "waited-out",
    "mismatched",
    "cut off",
    "other-tab",
    "no call",
    "audit ≠ 1",
    "rows waiting",
    "settle median",
    "settle p95",
)


def table(outcomes: list[Outcome]) -> str:
    """One row per fault and one for all: the counts of each missed target and the time to
    settle (ms after Enter; unsettled trials count as the deadline)."""
    rows = [COLUMNS]
    groups = [(str(fault), [o for o in outcomes if o.plan.fault is fault]) for fault in Fault]
    for name, group in [*groups, ("all", outcomes)]:
        if not group:
            continue
        times = sorted(o.settled_ms if o.settled_ms is not None else float("inf") for o in group)
        rows.append(
            (
                name,
                str(len(group)),
                str(sum(o.double for o in group)),
                str(sum(o.never for o in group)),
                str(sum(o.lost for o in group)),
                str(sum(o.waited_out for o in group)),
                str(sum(o.mismatched for o in group)),
                str(sum(o.cut_off for o in group)),
                str(sum(o.other_tab for o in group)),
                str(sum(not o.asked for o in group)),
                str(sum(o.audit_miscount for o in group)),
                str(sum(o.row_left_waiting for o in group)),
                _ms(statistics.median(times)),
                _ms(times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = [
        "| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _ms(value: float) -> str:
    return "unsettled" if value == float("inf") else f"{value:.0f} ms"
