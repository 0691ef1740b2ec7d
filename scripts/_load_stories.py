"""The users of ``scripts/load.py`` and their stories: each user's /ws connection (``Link``),
the flagship story it tells again and again, checked event by event, its cuts and recoveries
(``--kill``), and the check of every thread at the end of a round (``Load``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import json
import random
import time
from collections.abc import Sequence
from typing import Any

import msgspec
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidHandshake, WebSocketException

from scripts._bench import LocalGateway, client_tools
from scripts._load_client import Process, Stamped, collector_paused
from scripts._load_machine import SAMPLE_SECONDS, Monitor
from tests.support.agui import StreamChecker, new_id, text_of, tool_answer, tool_calls, user_input

FLAGSHIP = "업무 요청 목록 화면 열어줘"
SCREEN = "MNU-3120"
NAVIGATE = "navigateToScreen"
REPLY = "업무 요청 목록 화면으로 이동했습니다."
NAVIGATED = {"status": "navigated", "message": "The screen is open."}
# Frames a story sends when nothing goes wrong: the user's message and the browser's answer.
STORY_FRAMES = 2
# Reattaches a recovery may take before the thread must have settled.
RECOVERY_LOOKS = 5
# Moments of a story its trail keeps for the report of one that failed (runs of one kind
# of event fold into one).
TRAIL_MOMENTS = 10


def user_name(number: int) -> str:
    return f"load-{number:04d}"


class StoryError(Exception):
    """A story that went wrong; ``kind`` is the line it counts under in the report."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


class Cut(Exception):
    """The script aborted the connection on purpose (``--kill``)."""


class Trail:
    """What a story last sent and was sent, for the report of one that fails: its last
    ``TRAIL_MOMENTS`` moments, each at its seconds since the story began, a run of one
    kind of event folded into one (``TEXT_MESSAGE_CONTENT x12``). A story that timed out
    says where it stood: what it waited on, and since when."""

    def __init__(self) -> None:
        self.began = time.perf_counter()
        # [what, how many times in a row, seconds of the first, seconds of the last]
        self.moments: collections.deque[list[Any]] = collections.deque(maxlen=TRAIL_MOMENTS)

    def add(self, what: str) -> None:
        at = time.perf_counter() - self.began
        if self.moments and self.moments[-1][0] == what:
            self.moments[-1][1] += 1
            self.moments[-1][3] = at
        else:
            self.moments.append([what, 1, at, at])

    def __str__(self) -> str:
        shown = []
        for what, times, first, last in self.moments:
            when = f"{first:.2f}" if times == 1 else f"{first:.2f}-{last:.2f}"
            shown.append(f"{when} {what}" + (f" x{times}" if times > 1 else ""))
        return "; ".join(shown) or "nothing"


def sent(frame: dict[str, Any]) -> str:
    """A frame as a trail shows it: a reattach, the user's message or the browser's answer."""
    if frame.get("type"):
        return f"sent {frame['type']}"
    roles = {message["role"] for message in frame.get("messages", ())}
    return f"sent {'answer' if roles == {'tool'} else 'message'} {frame.get('runId', '')}"


def received(event: dict[str, Any]) -> str:
    """An event as a trail shows it: its type, and a run's id and outcome at its bounds."""
    kind = str(event.get("type"))
    if kind == "RUN_STARTED":
        return f"{kind} {event.get('runId')}"
    if kind == "RUN_FINISHED":
        return f"{kind} {event.get('runId')} {event.get('outcome') or ''}".rstrip()
    if kind == "RUN_ERROR":
        return f"{kind} {event.get('code')}"
    return kind


@dataclasses.dataclass
class Story:
    user: str
    thread: str
    # perf_counter() when its first frame went, and when its last run finished.
    began: float = 0.0
    ended: float | None = None
    # Seconds from each frame to its RUN_STARTED.
    run_started: list[float] = dataclasses.field(default_factory=list)
    # Seconds from the user's message to the run paused on the browser, and from the
    # browser's answer to the reply's first TEXT_MESSAGE_CONTENT and to its RUN_FINISHED.
    paused: float | None = None
    first_text: float | None = None
    replied: float | None = None
    # The reply's run id, the moment its answer was sent, and the moment its first text's
    # frame reached the client's connection, if stamped (``--timeline``).
    reply: tuple[str, float, float | None] | None = None
    run_ids: set[str] = dataclasses.field(default_factory=set)
    # The user's message as sent, until its RUN_STARTED (or its dedupe) was seen.
    unacknowledged: dict[str, Any] | None = None
    # Whether the script cut its connection, and the seconds from the cut to its end.
    cut: bool = False
    recovery: float | None = None
    # It waited for the user's frame budget before its first frame.
    paced: bool = False
    error: str | None = None
    detail: str = ""
    trail: Trail = dataclasses.field(default_factory=Trail)


@dataclasses.dataclass(frozen=True)
class RunSeen:
    """One run as a client saw it, times in seconds from the frame that asked for it."""

    events: list[dict[str, Any]]
    started: float
    finished: float
    first_text: float | None
    sent: float = 0.0  # the frame's moment (perf_counter), which the times count from
    # When the first text's frame reached the connection (perf_counter), if stamped.
    first_arrived: float | None = None

    @property
    def run_id(self) -> str:
        return str(self.events[0].get("runId", ""))

    @property
    def outcome(self) -> dict[str, Any]:
        outcome: dict[str, Any] = self.events[-1].get("outcome") or {"type": "success"}
        return outcome

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The MESSAGES_SNAPSHOT of a reattach."""
        for event in self.events:
            if event["type"] == "MESSAGES_SNAPSHOT":
                messages: list[dict[str, Any]] = event["messages"]
                return messages
        raise StoryError("invalid stream", "a reattach answered without a MESSAGES_SNAPSHOT")


class User:
    """A load user: its id, and a token bucket that keeps its frames under the rate limit."""

    def __init__(self, name: str, rate: float) -> None:
        self.name, self.rate = name, rate
        self.burst = float(2 * STORY_FRAMES)
        self.tokens, self.at = self.burst, time.perf_counter()

    async def pace(self, frames: int) -> bool:
        """Waits until ``frames`` may be sent and takes them; True if it had to wait."""
        now = time.perf_counter()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        wait = (frames - self.tokens) / self.rate
        if wait > 0:
            await asyncio.sleep(wait)
            self.tokens, self.at = float(frames), time.perf_counter()
        self.tokens -= frames
        return wait > 0


class Link:
    """One /ws connection of a user: every event decoded and checked, runs timed.

    ``cut_after`` counts down the moments (a frame sent, an event received) until the
    script aborts the socket; None leaves it be. Each moment goes on ``trail``, the story's.
    """

    def __init__(self, ws: ClientConnection, load: Load, trail: Trail) -> None:
        self.ws, self.load, self.trail = ws, load, trail
        self.checker = StreamChecker(official=False)
        self.cut_after: int | None = None
        self.moments = 0
        self.open = True
        # The runs whose RUN_STARTED this link received.
        self.started: set[str] = set()
        # When the last event read reached the connection (``Stamped``), else None.
        self.arrived: float | None = None
        load.connected_on(+1)

    async def send(self, frame: dict[str, Any]) -> float:
        try:
            await self.ws.send(json.dumps(frame, ensure_ascii=False))
        except WebSocketException as error:
            raise StoryError("connection closed", repr(error)) from None
        at = time.perf_counter()
        self.trail.add(sent(frame))
        self._moment()
        return at

    async def next(self) -> dict[str, Any]:
        try:
            raw = await self.ws.recv()
        except WebSocketException as error:
            raise StoryError("connection closed", repr(error)) from None
        if isinstance(self.ws, Stamped):
            self.arrived = self.ws.arrived.popleft()
        try:
            event: dict[str, Any] = msgspec.json.decode(raw)
            self.checker.feed(event)
        except (msgspec.DecodeError, AssertionError, KeyError, TypeError) as error:
            raise StoryError("invalid stream", f"{error!r}: {raw[:200]!r}") from None
        self.trail.add(received(event))
        if event.get("type") == "RUN_STARTED":
            self.started.add(str(event.get("runId")))
        self._moment()
        return event

    def _moment(self) -> None:
        self.moments += 1
        if self.cut_after is not None:
            self.cut_after -= 1
            if self.cut_after <= 0:
                self.cut_after = None
                self.ws.transport.abort()
                self.gone()
                self.trail.add("cut")
                raise Cut

    async def run(self, frame: dict[str, Any], *, asks_a_run: bool = True) -> RunSeen:
        """Sends a frame and reads the run that answers it, to its end."""
        return await self.read(await self.send(frame), asks_a_run=asks_a_run)

    async def read(self, sent: float, *, asks_a_run: bool = True) -> RunSeen:
        """Reads the next run to its end (times from ``sent``)."""
        if asks_a_run:
            self.load.waiting_on(+1)
        try:
            events: list[dict[str, Any]] = []
            started = first_text = first_arrived = None
            while True:
                event = await self.next()
                now = time.perf_counter() - sent
                events.append(event)
                kind = event["type"]
                if kind == "RUN_STARTED" and started is None:
                    started = now
                elif kind == "TEXT_MESSAGE_CONTENT" and first_text is None:
                    first_text, first_arrived = now, self.arrived
                elif kind == "RUN_ERROR":
                    raise StoryError(f"RUN_ERROR {event.get('code')}", event.get("message", ""))
                elif kind == "RUN_FINISHED":
                    assert started is not None  # the checker saw RUN_STARTED first
                    return RunSeen(events, started, now, first_text, sent, first_arrived)
        finally:
            if asks_a_run:
                self.load.waiting_on(-1)

    async def reattach(self, thread: str) -> RunSeen:
        return await self.run({"type": "reattach", "threadId": thread}, asks_a_run=False)

    async def close(self) -> None:
        self.gone()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(), 5)

    def gone(self) -> None:
        """Counts the link out of the users connected, once."""
        if self.open:
            self.open = False
            self.load.connected_on(-1)


class Load:
    """One round: the users, their stories, and the check of every thread at the end."""

    def __init__(
        self, args: argparse.Namespace, gateways: Sequence[LocalGateway], kill: bool, seed: int
    ) -> None:
        self.args, self.gateways, self.kill = args, gateways, kill
        # Draws the cuts: the same seed draws the same ones, though which story gets which
        # follows the order the users reach their stories in.
        self.random = random.Random(seed)
        # Draws the users' think times, apart from the cuts so that --think leaves them be.
        self.thinking = random.Random(seed)
        self.tools: list[Any] = client_tools(gateways[0])
        self.stories: list[Story] = []
        self.waiting = self.waiting_peak = 0
        # Links open now and at most at once, the check's after the load not counted.
        self.connected = self.connected_peak = 0
        self.loading = True
        # Sockets that failed to open on a user's arrival (``--think``), by kind, and the
        # first of each with what it said.
        self.arrivals_failed: collections.Counter[str] = collections.Counter()
        self.arrival_lines: dict[str, str] = {}
        # Moments of a whole story (frames sent, events received), from the probe.
        self.story_moments = 0
        # What the check found: each problem's count, and the threads with any.
        self.problems: collections.Counter[str] = collections.Counter()
        # Threads read back, those of stories done (judged whole), and those with a problem.
        self.checked = self.judged = self.bad_threads = 0
        # What recoveries found after a cut, by what they did about it.
        self.recoveries: collections.Counter[str] = collections.Counter()
        self.began = self.deadline = 0.0
        # Where each server's log stood when the users began: start-up lines are not theirs.
        self.log_offsets = [0 for _ in gateways]
        # What this client's own thread did, ticked (``--timeline``).
        self.client = Process() if args.timeline else None

    def waiting_on(self, change: int) -> None:
        self.waiting += change
        self.waiting_peak = max(self.waiting_peak, self.waiting)

    def connected_on(self, change: int) -> None:
        self.connected += change
        if self.loading:
            self.connected_peak = max(self.connected_peak, self.connected)

    async def think(self) -> None:
        """A user's pause between stories (``--think``), cut short by the round's end."""
        if self.args.think > 0:
            pause = self.thinking.expovariate(1 / self.args.think)
            await asyncio.sleep(max(0.0, min(pause, self.deadline - time.perf_counter())))

    async def connect(self, user: User, trail: Trail) -> Link:
        try:
            ws = await connect(
                self.gateway_of(user.name).ws_url(user.name),
                max_size=None,
                compression=None,
                open_timeout=30,
                # --timeline: each frame stamped as it reaches the connection
                create_connection=Stamped if self.args.timeline else None,
            )
        except (OSError, InvalidHandshake, TimeoutError) as error:
            raise StoryError("connection refused", repr(error)) from None
        trail.add("connected")
        return Link(ws, self, trail)

    def gateway_of(self, name: str) -> LocalGateway:
        """The process a user talks to: users spread evenly over them, each always to one."""
        return self.gateways[int(name.rsplit("-", 1)[1]) % len(self.gateways)]

    # --- one story ---------------------------------------------------------------------

    async def tell(self, link: Link, story: Story) -> None:
        """The flagship story from the user's message to the honest reply."""
        ask = user_input(story.thread, FLAGSHIP, tools=self.tools)
        story.run_ids.add(ask["runId"])
        story.unacknowledged = ask
        first = await link.run(ask)
        await self.went_on(link, story, first)

    async def went_on(self, link: Link, story: Story, first: RunSeen) -> None:
        """The story after its first run (``first``), which paused on the browser."""
        story.unacknowledged = None
        story.run_started.append(first.started)
        story.paused = first.finished
        navigations = tool_calls(first.events, NAVIGATE)
        if [call["args"].get("screenId") for call in navigations] != [SCREEN]:
            raise StoryError("wrong story", f"navigateToScreen calls: {navigations}")
        pending = first.outcome.get("pendingToolCallIds")
        if pending != [navigations[0]["id"]]:
            raise StoryError("wrong story", f"the first run ended {first.outcome}")
        await self.answer(link, story, pending)

    async def answer(self, link: Link, story: Story, pending: list[str]) -> None:
        """Answers the pending navigateToScreen call as the browser would; checks the reply."""
        reply = tool_answer(
            story.thread,
            [(call_id, NAVIGATED) for call_id in pending],
            tools=self.tools,
        )
        story.run_ids.add(reply["runId"])
        second = await link.run(reply)
        story.run_started.append(second.started)
        story.first_text, story.replied = second.first_text, second.finished
        story.reply = (reply["runId"], second.sent, second.first_arrived)
        if text_of(second.events) != REPLY or second.outcome != {"type": "success"}:
            raise StoryError("wrong reply", f"{text_of(second.events)!r}, {second.outcome}")

    async def recover(self, user: User, story: Story) -> Link:
        """Reconnects as the same user and finishes the story from what the thread holds."""
        link = await self.connect(user, story.trail)
        try:
            return await self.finish(link, user, story)
        except BaseException:
            await link.close()
            raise

    async def finish(self, link: Link, user: User, story: Story) -> Link:
        """The rest of a cut story, decided by what a reattach shows of its thread."""
        for _ in range(RECOVERY_LOOKS):
            await user.pace(1)
            if (ask := story.unacknowledged) is not None:
                # Sent, never seen begin: sent again with its runId, as the reference
                # client does. It runs if the gateway never had it; else it runs once.
                again = await link.run(ask)
                if not deduped(again.events):
                    self.recoveries["sent the message again: it ran"] += 1
                    await self.went_on(link, story, again)
                    return link
                self.recoveries["sent the message again: deduped"] += 1
                story.unacknowledged = None
                seen = await link.read(time.perf_counter(), asks_a_run=False)
            else:
                seen = await link.reattach(story.thread)
            pending = seen.outcome.get("pendingToolCallIds") or []
            if pending:
                self.recoveries["answered the pending call"] += 1
                await user.pace(1)
                await self.answer(link, story, pending)
                return link
            if seen.run_id in story.run_ids:
                # It followed the story's run to its end: look at the thread again.
                self.recoveries["followed a run live"] += 1
                continue
            messages = seen.messages
            if not any(message["role"] == "user" for message in messages):
                # Seen begin, then refused or cut before its message was stored.
                self.recoveries["sent a new message"] += 1
                await user.pace(STORY_FRAMES)
                await self.tell(link, story)
                return link
            if messages[-1].get("content") == REPLY:
                self.recoveries["found the reply there"] += 1
                return link  # the story had ended before the cut
            raise StoryError("inconsistent thread", f"after a cut: {messages[-1]}")
        raise StoryError("timeout", f"the thread never settled in {RECOVERY_LOOKS} reattaches")

    async def story(self, user: User, link: Link | None, story: Story) -> Link:
        """Tells one story on the user's link (a new one if None); closes it if it fails."""
        story.paced = await user.pace(STORY_FRAMES)
        link = link or await self.connect(user, story.trail)
        link.trail = story.trail
        try:
            return await self.tell_on(link, user, story)
        except BaseException:
            await link.close()
            raise

    async def tell_on(self, link: Link, user: User, story: Story) -> Link:
        """The story, cut at a random moment in kill mode; returns the link it ended on."""
        if self.kill and self.story_moments > 1 and self.random.random() < self.args.kill_share:
            # After any moment but the last: the final RUN_FINISHED ends the story anyway.
            # A busy server merges text chunks, so a story may end before its moment comes.
            link.cut_after = self.random.randint(1, self.story_moments - 1)
        link.moments = 0
        story.began = time.perf_counter()
        try:
            await self.tell(link, story)
        except Cut:
            story.cut = True
            if story.unacknowledged and story.unacknowledged["runId"] in link.started:
                story.unacknowledged = None  # the gateway had it: a client does not resend
            cut_at = time.perf_counter()
            link = await self.recover(user, story)
            story.recovery = time.perf_counter() - cut_at
        link.cut_after = None
        story.ended = time.perf_counter()
        return link

    async def user(self, number: int) -> None:
        user = User(user_name(number), self.args.frames_per_second)
        await asyncio.sleep(self.args.ramp * (number - 1) / self.args.users)
        link: Link | None = None
        told = 0
        try:
            if self.args.think > 0:
                link = await self.arrive(user)
                await self.think()
            while time.perf_counter() < self.deadline and told < self.args.stories:
                story = Story(user.name, new_id("load"))
                self.stories.append(story)
                told += 1
                try:
                    async with asyncio.timeout(self.args.story_timeout):
                        link = await self.story(user, link, story)
                except Exception as error:  # every failure counts; none ends the round
                    story.error, story.detail = failure(error, self.args.story_timeout)
                    link = None  # story() closed it
                await self.think()
        finally:
            if link is not None:
                await link.close()

    async def arrive(self, user: User) -> Link | None:
        """The user opens the page (its socket) before it thinks of its first story; None if
        the socket failed, counted, and the first story opens one again."""
        try:
            return await self.connect(user, Trail())
        except StoryError as error:
            self.arrivals_failed[error.kind] += 1
            self.arrival_lines.setdefault(
                error.kind, f"{user.name} on arrival: {error.kind}: {error.detail}"
            )
            return None

    # --- the round ---------------------------------------------------------------------

    async def probe(self) -> None:
        """One story before the load: the flagship works for a load user, and its length."""
        user = User(user_name(1), self.args.frames_per_second)
        story = Story(user.name, new_id("probe"))
        link = await self.connect(user, story.trail)
        try:
            await self.tell(link, story)
        except StoryError as error:
            raise SystemExit(f"the flagship story fails for a load user: {error}") from None
        finally:
            await link.close()
        self.story_moments = link.moments

    async def check(self) -> None:
        """Reads every thread back by reattach, one connection a user, and judges it.

        Every thread must be readable; the thread of a story that failed (already an
        error) need not hold the whole story.
        """
        stories: dict[str, list[Story]] = collections.defaultdict(list)
        for story in self.stories:
            stories[story.user].append(story)
        await asyncio.gather(*(self.check_user(user, told) for user, told in stories.items()))

    async def check_user(self, name: str, stories: list[Story]) -> None:
        user = User(name, self.args.frames_per_second)
        link: Link | None = None
        for story in stories:
            await user.pace(1)
            try:
                link = link or await self.connect(user, Trail())
                reattach = link.reattach(story.thread)
                seen = await asyncio.wait_for(reattach, self.args.story_timeout)
                problems = thread_problems(seen.messages, seen.outcome) if not story.error else []
            except Exception as error:
                problems = [f"unreadable ({failure(error, self.args.story_timeout)[0]})"]
                if link is not None:
                    await link.close()
                link = None
            self.checked += 1
            self.judged += not story.error
            self.bad_threads += bool(problems)
            self.problems.update(problems)
        if link is not None:
            await link.close()

    async def run(self, monitor: Monitor) -> None:
        await self.probe()
        self.log_offsets = [gateway.log.stat().st_size for gateway in self.gateways]
        sampling = asyncio.create_task(monitor.sample_until_cancelled())
        ticking = asyncio.create_task(self.client.run()) if self.client is not None else None
        await asyncio.sleep(SAMPLE_SECONDS)  # the start figures, before anyone connects
        self.began = time.perf_counter()
        self.deadline = self.began + self.args.duration
        try:
            async with asyncio.timeout(self.args.timeout):
                # The client's collector would stop every user's reads at once (its
                # whole heap, 100-190 ms): it waits for the users' end (_load_client).
                with collector_paused():
                    await asyncio.gather(*(self.user(n) for n in range(1, self.args.users + 1)))
                monitor.mark()
                self.loading = False
                await self.check()
        except TimeoutError:
            for story in self.stories:
                if story.ended is None and story.error is None:
                    story.error = "overall timeout"
            self.problems["not checked: the overall timeout came first"] += 1
        await asyncio.sleep(1.0)  # the end figure: the server has let go of the connections
        for task in (sampling, ticking):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        monitor.take()


def deduped(events: list[dict[str, Any]]) -> bool:
    """Whether the gateway said a run was received already and not run again."""
    return any(
        event["type"] == "CUSTOM" and (event.get("value") or {}).get("code") == "RUN_DEDUPED"
        for event in events
    )


def failure(error: Exception, story_timeout: float) -> tuple[str, str]:
    """The report line a failed story counts under, and what it said."""
    if isinstance(error, StoryError):
        return error.kind, error.detail
    if isinstance(error, TimeoutError):
        return "timeout", f"no end in {story_timeout:g} s"
    return f"script failure {type(error).__name__}", repr(error)


def thread_problems(messages: list[dict[str, Any]], outcome: dict[str, Any]) -> list[str]:
    """What is wrong with a finished story's thread as a reattach shows it; [] when nothing."""
    problems = []
    if outcome.get("type") != "success" or outcome.get("pendingToolCallIds"):
        problems.append("a call is still open")
    users = sum(message["role"] == "user" for message in messages)
    if users != 1:
        problems.append(f"{users} user messages")
    calls = [
        call
        for message in messages
        if message["role"] == "assistant"
        for call in message.get("toolCalls") or ()
    ]
    answers = collections.Counter(m["toolCallId"] for m in messages if m["role"] == "tool")
    navigations = [call for call in calls if call["function"]["name"] == NAVIGATE]
    if len(navigations) != 1:
        problems.append(f"navigateToScreen called {len(navigations)} times")
    for call in navigations:
        if answers[call["id"]] != 1:
            problems.append(f"navigateToScreen answered {answers[call['id']]} times")
    if any(answers[call["id"]] == 0 for call in calls if call["function"]["name"] != NAVIGATE):
        problems.append("a server tool call without its result")
    last = messages[-1] if messages else {}
    if last.get("role") != "assistant" or last.get("content") != REPLY:
        problems.append("the last message is not the honest reply")
    return problems
