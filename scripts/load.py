"""Many users running the flagship story at a real model's pace, against a real gateway.

Each user is a /ws connection of its own user id (``load-0001``, ...), started over
``--ramp`` seconds, that runs the flagship story again and again, each story on a new thread:
"업무 요청 목록 화면 열어줘" -> find_screen -> navigateToScreen MNU-3120, answered
``{"status": "navigated"}`` as the browser would -> "업무 요청 목록 화면으로 이동했습니다.".
The gateway is ``python -m gateway`` on 127.0.0.1 with the scripted model at 30 ms a chunk
and its store on a SQLite file; load users are added to the demo's screen catalog for it
(``scripts/_load_users.py`` says why and how).

Every event is checked as it arrives (AG-UI ordering, ``tests/support/agui.py``), and a story
counts as failed on any RUN_ERROR (rate limit and run cap included), a timeout, an invalid
stream, a closed connection or a reply other than the honest one. Each user sends at most
``--frames-per-second`` frames (under the gateway's 5 a second per user); a story waits
for both its frames before it starts, so the pause falls between stories, never inside one.

``--think`` makes the users a population rather than a queue: after each story its user
reads the reply and thinks for a while before the next, drawn from an exponential
distribution of that mean (``--seed`` draws it too), with its socket open all the while as a
browser tab's is. A user opens its socket at its moment of the ramp and thinks before its
first story too, so stories arrive spread out, not one a user at the ramp's pace; a socket
that fails to open then counts as an error of its own, outside any story. Without
``--think`` (0, the default) users tell their stories back to back, and users past the
server's capacity only lengthen the queue. With it, N users offer about N / (think + story)
stories a second: 1,000 users thinking 60 s on average offer ~16.

``--kill`` cuts a share of the stories at a random moment (after one of the story's sends
or received events): the socket is aborted, the user reconnects, reattaches with
``{"type": "reattach", "threadId"}``, answers the call the snapshot's outcome lists as
pending (once), and finishes the story. A message it sent whose RUN_STARTED it never saw
it sends again first, with the same runId, as the reference client does: the gateway runs
it if the message went down with the socket, and else tells it so (RUN_DEDUPED) and shows
the thread as a reattach would (the report counts both).
At the end every thread is read back by reattach and must be consistent: no open call,
one navigateToScreen call answered exactly once, the honest reply last. ``--seed`` draws
the cuts (each round's title prints it), and a failed story is reported with its last
moments (what it sent and was sent and when, the cut, the reconnect), so a timeout says
what the story waited on.

``--db`` picks the store: a SQLite ``file`` (the default), ``memory``, ``postgres`` (a
throwaway server on this machine, ``tests/support/postgres.py``, a fresh database a round)
or ``postgres-xN``, N gateway processes on one database with the users spread evenly over
them. ``--workers N`` runs each of them twice a round, as one process and with
``GATEWAY_WORKERS=N`` (its invocations in N worker processes, docs/multicore.md), side by
side; ``--workers auto``, with the default's workers on demand, and ``--workers 2 auto``
both. Several stores are run in turn each round, and the report ends with each one's median
stories/s and server CPU a story (all its processes' CPU, from /proc) against the first's:
CPU a story is the figure to read on a shared machine, where stories/s moves with the
neighbours. On PostgreSQL it also counts the statements a story costs the database (its
throwaway server loads ``pg_stat_statements``), the load's alone, not the check's after it.

Reported: stories a second and latency after the ramp, of the stories not cut (RUN_STARTED
after each frame, the first run's end, paused on the browser, the reply's first text and
end after the browser's answer, the whole story), errors by kind, the most runs clients
waited on at once (the gateway runs ``GATEWAY_MAX_RUNS``, 200, at once; a run past that
waits for a slot, inside its RUN_STARTED time), the server's RSS (VmRSS in
/proc/<pid>/status) at start, peak and end, and the most the processes grew since each was
first seen (a worker `auto` starts at the first run counts from then) over the most users
connected at once (what a connected user costs the server, its runs and threads included),
CPU (the server's, its main process's alone, this script's and the rest of the machine's,
which is shared, with the machine's cores and load average first) and what the server
logged at WARNING or above during the load. ``--timeline`` has the gateway mark each run's
steps (``GATEWAY_TIMELINE``, ``gateway/timeline.py``) and adds where the replies' first
texts waited, step by step, the slowest 1% apart (``scripts/_timeline.py``).
Bounded: ``--duration`` or ``--stories`` per user, a timeout per story and ``--timeout``
overall; the server stops with the script, which exits 1 on any error or inconsistent thread.

It needs the ``test`` extra (``tests/support/agui.py`` imports the official AG-UI models).

    .venv/bin/python -m scripts.load                         # 500 users for 60 s
    .venv/bin/python -m scripts.load --users 50 --rounds 3   # three fresh servers, medians
    .venv/bin/python -m scripts.load --kill                  # cut half the stories midway
    .venv/bin/python -m scripts.load --users 5 --stories 3   # a few stories, then stop
    .venv/bin/python -m scripts.load --db file postgres postgres-x2 --rounds 3  # side by side
    .venv/bin/python -m scripts.load --users 200 --workers 2 --rounds 3  # one process or three
    .venv/bin/python -m scripts.load --users 40 --workers 2 auto        # and workers on demand
    .venv/bin/python -m scripts.load --users 1000 --ramp 20 --think 60 --rounds 3  # paced users
    .venv/bin/python -m scripts.load --users 200 --workers auto --timeline  # first text's wait
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import functools
import json
import math
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import uvloop
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidHandshake, WebSocketException

from gateway.config import AUTO_WORKERS, Settings
from scripts import _timeline
from scripts._bench import (
    LocalGateway,
    client_tools,
    cpu_seconds,
    local_gateway,
    percentile,
    rss_mib,
)
from scripts._load_users import write_users
from tests.support.agui import StreamChecker, new_id, text_of, tool_answer, tool_calls, user_input
from tests.support.postgres import Postgres, running_postgres

FLAGSHIP = "업무 요청 목록 화면 열어줘"
SCREEN = "MNU-3120"
NAVIGATE = "navigateToScreen"
REPLY = "업무 요청 목록 화면으로 이동했습니다."
NAVIGATED = {"status": "navigated", "message": "The screen is open."}
# The gateway runs with its defaults: this many runs at once, this many frames a second a user.
GATEWAY = Settings()
# Frames a story sends when nothing goes wrong: the user's message and the browser's answer.
STORY_FRAMES = 2
# Reattaches a recovery may take before the thread must have settled.
RECOVERY_LOOKS = 5
SAMPLE_SECONDS = 0.25
# Open files this process needs besides one socket a user; the server needs as many.
SPARE_FILES = 200
# Server log records worth a line in the report, and how much of them it shows.
LOUD = ("WARNING", "ERROR", "CRITICAL")
LOG_LINES_SHOWN = 3
# The statements shown by text on PostgreSQL, the most run first, and their length shown.
STATEMENTS_SHOWN = 16
STATEMENT_CHARS = 110
LOG_LINE_CHARS = 200
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
    # The reply's run id and the moment its answer was sent (``--timeline``).
    reply: tuple[str, float] | None = None
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
            started = first_text = None
            while True:
                event = await self.next()
                now = time.perf_counter() - sent
                events.append(event)
                kind = event["type"]
                if kind == "RUN_STARTED" and started is None:
                    started = now
                elif kind == "TEXT_MESSAGE_CONTENT" and first_text is None:
                    first_text = now
                elif kind == "RUN_ERROR":
                    raise StoryError(f"RUN_ERROR {event.get('code')}", event.get("message", ""))
                elif kind == "RUN_FINISHED":
                    assert started is not None  # the checker saw RUN_STARTED first
                    return RunSeen(events, started, now, first_text, sent)
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
        story.reply = (reply["runId"], second.sent)
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
        await asyncio.sleep(SAMPLE_SECONDS)  # the start figures, before anyone connects
        self.began = time.perf_counter()
        self.deadline = self.began + self.args.duration
        try:
            async with asyncio.timeout(self.args.timeout):
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
        sampling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampling
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


# --- the server and the machine --------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Sample:
    at: float
    rss_mib: float
    # What the processes grew by since each was first seen: a worker that ``auto`` starts
    # at the first run counts its growth, not the imports every idle worker holds.
    grown_mib: float
    server_cpu: float
    # The gateways' own processes alone, without their workers: the one loop every event
    # crosses, whose share says how near it is to a core's worth.
    main_cpu: float
    own_cpu: float
    machine_cpu: float


def machine_cpu() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants that are alive now (Linux /proc)."""
    found = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                found += process_tree(int(child))
    return found


class Monitor:
    """The servers' RSS and CPU (all their processes', workers included, added up), this
    process's CPU and the machine's, over a round."""

    def __init__(
        self,
        pids: Sequence[int],
        statements: Callable[[], collections.Counter[str] | None] | None,
    ) -> None:
        self.servers = pids
        self.samples: list[Sample] = []
        self._first_rss: dict[int, float] = {}
        # When the users were done: the RSS peak is of the load, not of the check after it.
        self.load_ended: float | None = None
        # The statements the database ran, by text, counted by PostgreSQL
        # (``pg_stat_statements``), from now to the end of the load (not the check after
        # it); None where not counted.
        self._count = statements or (lambda: None)
        self._counted_before = self._count()
        self.statements: collections.Counter[str] | None = None

    @property
    def pids(self) -> list[int]:
        """The servers' processes, their workers (GATEWAY_WORKERS) included."""
        return [pid for server in self.servers for pid in process_tree(server)]

    def take(self) -> None:
        pids = self.pids
        rss = {pid: _alive(rss_mib, pid) for pid in pids}
        for pid, mib in rss.items():
            self._first_rss.setdefault(pid, mib)
        self.samples.append(
            Sample(
                time.perf_counter(),
                sum(rss.values()),
                sum(mib - self._first_rss[pid] for pid, mib in rss.items() if mib),
                sum(_alive(cpu_seconds, pid) for pid in pids),
                sum(_alive(cpu_seconds, pid) for pid in self.servers),
                cpu_seconds(),
                machine_cpu(),
            )
        )

    def mark(self) -> None:
        self.take()
        self.load_ended = self.samples[-1].at
        before, after = self._counted_before, self._count()
        if before is not None and after is not None:
            self.statements = after - before  # a Counter's difference keeps what grew

    async def sample_until_cancelled(self) -> None:
        while True:
            self.take()
            await asyncio.sleep(SAMPLE_SECONDS)

    def nearest(self, moment: float) -> Sample:
        return min(self.samples, key=lambda sample: abs(sample.at - moment))


def _alive(figure: Callable[[int], float], pid: int) -> float:
    """A process's figure, 0 for one that exited since it was listed."""
    try:
        return figure(pid)
    except OSError:
        return 0.0


# --- figures and the report --------------------------------------------------------------


def figures(load: Load, monitor: Monitor, load_average: float) -> dict[str, float]:
    """A round's numbers; several rounds report the median of each."""
    done = [s for s in load.stories if s.ended is not None and s.error is None]
    last_end = max((s.ended for s in done if s.ended), default=load.began)
    start, end = load.began + load.args.ramp, min(load.deadline, last_end)
    if end - start < 1.0:  # a short run: the whole of it
        start, end = load.began, last_end
    window = max(end - start, 1e-9)
    finished = [s for s in done if s.ended is not None and start <= s.ended <= end]
    timed = [s for s in done if not s.cut and start <= s.began] or [s for s in done if not s.cut]
    first, last = monitor.nearest(start), monitor.nearest(end)
    seconds = max(last.at - first.at, 1e-9)
    server = last.server_cpu - first.server_cpu
    main = last.main_cpu - first.main_cpu
    own = last.own_cpu - first.own_cpu
    loaded_samples = [s for s in monitor.samples if s.at <= (monitor.load_ended or s.at)]
    loaded = [s.rss_mib for s in loaded_samples]
    values: dict[str, float] = {
        "stories": len(done),
        "failed": len(load.stories) - len(done),
        "rate": len(finished) / window,
        "paced": sum(s.paced for s in done) / max(len(done), 1),
        "waiting_peak": load.waiting_peak,
        "rss_start": monitor.samples[0].rss_mib,
        "rss_peak": max(loaded),
        "rss_end": monitor.samples[-1].rss_mib,
        "connected_peak": load.connected_peak,
        "rss_user_kib": 1024
        * max(s.grown_mib for s in loaded_samples)
        / max(load.connected_peak, 1),
        "server_cores": server / seconds,
        "server_ms": 1000 * server / max(len(finished), 1),
        "main_cores": main / seconds,
        "main_ms": 1000 * main / max(len(finished), 1),
        "statements": (
            monitor.statements.total() / max(len(done), 1)
            if monitor.statements is not None
            else math.nan
        ),
        "own_cores": own / seconds,
        "other_cores": max(0.0, (last.machine_cpu - first.machine_cpu - server - own) / seconds),
        "load_average": load_average,
        "checked": load.checked,
        "judged": load.judged,
        "consistent": load.checked - load.bad_threads,
    }
    samples = {
        "started": [t for s in timed for t in s.run_started],
        "paused": [s.paused for s in timed if s.paused is not None],
        "text": [s.first_text for s in timed if s.first_text is not None],
        "replied": [s.replied for s in timed if s.replied is not None],
        "story": [s.ended - s.began for s in timed if s.ended is not None],
        "recovery": [s.recovery for s in done if s.recovery is not None],
    }
    for name, seconds_each in samples.items():
        for q in (50, 99):
            found = 1000 * percentile(seconds_each, q / 100) if seconds_each else math.nan
            values[f"{name}{q}"] = found
    values["moments"] = load.story_moments
    values["cut"] = sum(s.cut for s in load.stories)
    values["recovered"] = sum(s.cut for s in done)
    return values


@dataclasses.dataclass
class Result:
    """A round's figures and counts; several rounds add their counts up."""

    values: dict[str, float]
    errors: collections.Counter[str]
    problems: collections.Counter[str]
    recoveries: collections.Counter[str]
    # Records the server logged at WARNING or above, by level, and the first few lines.
    logged: collections.Counter[str]
    log_lines: list[str]
    # The first error of each kind (the first few kinds) with what it said.
    error_lines: list[str]
    # The database's statements by text (PostgreSQL) over the load, and the stories done
    # meanwhile, so rounds add up into a breakdown a story.
    statements: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    stories: float = 0.0
    # Where the round's first texts waited (``--timeline``), as lines of the report.
    timeline: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def of(cls, load: Load, monitor: Monitor, load_average: float) -> Result:
        logged: collections.Counter[str] = collections.Counter()
        lines: list[str] = []
        during: list[str] = []
        for gateway, offset in zip(load.gateways, load.log_offsets, strict=True):
            with gateway.log.open("rb") as file:
                file.seek(offset)
                during += file.read().decode(errors="replace").splitlines()
        for line in during:
            level = next((word for word in line.split()[:4] if word in LOUD), None)
            if level:
                logged[level] += 1
                if len(lines) < LOG_LINES_SHOWN:
                    lines.append(line[:LOG_LINE_CHARS])
        failed = [s for s in load.stories if s.error is not None]
        examples = {kind: line[:LOG_LINE_CHARS] for kind, line in load.arrival_lines.items()}
        for s in failed:
            assert s.error is not None
            examples.setdefault(
                s.error,
                f"{f'{s.user} {s.thread}: {s.error}: {s.detail}'[:LOG_LINE_CHARS]}\n"
                f"      its last moments, seconds since it began: {s.trail}",
            )
        return cls(
            figures(load, monitor, load_average),
            collections.Counter(s.error for s in failed if s.error is not None)
            + collections.Counter(
                {f"{kind} on arrival": n for kind, n in load.arrivals_failed.items()}
            ),
            load.problems,
            load.recoveries,
            logged,
            lines,
            list(examples.values())[:LOG_LINES_SHOWN],
            monitor.statements or collections.Counter(),
            len(load.stories) - len(failed),
        )

    @classmethod
    def median(cls, results: Sequence[Result]) -> Result:
        values = {
            key: statistics.median(r.values[key] for r in results) for key in results[0].values
        }
        counted = collections.Counter
        total = cls(values, counted(), counted(), counted(), counted(), [], [])
        for result in results:
            total.errors += result.errors
            total.problems += result.problems
            total.recoveries += result.recoveries
            total.logged += result.logged
            total.log_lines += result.log_lines[: LOG_LINES_SHOWN - len(total.log_lines)]
            total.error_lines += result.error_lines[: LOG_LINES_SHOWN - len(total.error_lines)]
            total.statements += result.statements
            total.stories += result.stories
        return total

    @property
    def failed(self) -> bool:
        return bool(self.errors or self.problems)


def ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1f}"


def counted(counts: collections.Counter[str], nothing: str = "none") -> str:
    return ", ".join(f"{kind} {count}" for kind, count in counts.most_common()) or nothing


def print_statements(statements: collections.Counter[str], stories: float) -> None:
    """The statements that cost a story most, by text (shortened), with their calls a story:
    where the round trips go, and which one a change took away."""
    for text, calls in statements.most_common(STATEMENTS_SHOWN):
        shown = " ".join(text.split())
        if len(shown) > STATEMENT_CHARS:
            shown = shown[: STATEMENT_CHARS - 3] + "..."
        print(f"    {calls / max(stories, 1):6.2f}  {shown}")


def print_result(title: str, result: Result, kill: bool) -> None:
    v = result.values
    print(f"\n{title}")
    print(
        f"  stories: {v['stories']:.0f} done, {v['failed']:.0f} failed;"
        f" {v['rate']:.1f} stories/s after the ramp"
        f" ({100 * v['paced']:.0f}% waited for their user's frame budget first)"
    )
    print(f"  {'latency ms':<40} {'p50':>8} {'p99':>8}")
    rows = [
        ("frame -> RUN_STARTED (both runs)", "started"),
        ("message -> run paused on the browser", "paused"),
        ("browser's answer -> first text", "text"),
        ("browser's answer -> reply finished", "replied"),
        ("story: message -> reply finished", "story"),
    ]
    if kill:
        rows.append(("cut -> story done (cut stories)", "recovery"))
    for label, key in rows:
        print(f"    {label:<38} {ms(v[key + '50']):>8} {ms(v[key + '99']):>8}")
    if kill:
        print(
            f"  cut after a random one of the story's {v['moments']:.0f} moments (frames sent,"
            f" events received): {v['cut']:.0f} stories, {v['recovered']:.0f} finished after"
            " reconnecting and reattaching"
        )
        print(f"    the reattaches: {counted(result.recoveries, 'none needed')}")
    print(f"  errors: {counted(result.errors)}")
    for line in result.error_lines:
        print(f"    {line}")
    waited = max(0, v["waiting_peak"] - GATEWAY.max_runs)
    print(
        f"  runs clients waited on at once: peak {v['waiting_peak']:.0f}; the gateway runs"
        f" {GATEWAY.max_runs} at once, so up to {waited:.0f} waited for a slot"
        " (inside their RUN_STARTED time)"
    )
    print(
        f"  server RSS MiB: start {v['rss_start']:.0f}, peak {v['rss_peak']:.0f},"
        f" end {v['rss_end']:.0f}; {v['rss_user_kib']:.1f} KiB a connected user"
        f" (growth, over the {v['connected_peak']:.0f} connected at most)"
    )
    print(
        f"  CPU cores: server {v['server_cores']:.2f} ({v['server_ms']:.1f} ms a story;"
        f" its main process {v['main_cores']:.2f}, {v['main_ms']:.1f} ms),"
        f" this script {v['own_cores']:.2f}, the rest of the machine {v['other_cores']:.2f}"
        f" (load average {v['load_average']:.2f} before)"
    )
    if not math.isnan(v["statements"]):
        print(f"  database statements: {v['statements']:.1f} a story (pg_stat_statements)")
        print_statements(result.statements, result.stories)
    print(
        f"  threads read back: {v['checked']:.0f} ({v['judged']:.0f} of stories done),"
        f" consistent {v['consistent']:.0f}; problems: {counted(result.problems)}"
    )
    print(f"  server log: {counted(result.logged, 'no warnings')}")
    for line in result.log_lines:
        print(f"    {line}")
    for line in result.timeline:
        print(line)


# --- main --------------------------------------------------------------------------------


def machine() -> str:
    """The machine a run measured: its cores, their model, and how busy it was already."""
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown CPU",
    )
    load_averages = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return f"machine: {os.cpu_count()} cores ({model}), load average {load_averages} (1, 5, 15 min)"


def ensure_open_files(users: int) -> None:
    """Raises the soft limit on open files if needed; the server inherits it."""
    needed = users + SPARE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise SystemExit(
            f"{users} users need {needed} open files here and as many in the server, but"
            f" ulimit -n allows {soft} (at most {hard}): raise the hard limit or use fewer users"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


@dataclasses.dataclass(frozen=True)
class Setup:
    """Where a round's gateways keep their threads (``file``, ``memory``, ``postgres``), and
    how many processes share a PostgreSQL database (``postgres-x2``)."""

    store: str
    processes: int = 1
    workers: int = 0  # GATEWAY_WORKERS of each process (docs/multicore.md; -1: auto)

    @classmethod
    def parse(cls, text: str) -> Setup:
        store, _, count = text.partition("-x")
        if store not in ("file", "memory", "postgres") or (count and store != "postgres"):
            raise argparse.ArgumentTypeError(f"{text!r}: file, memory, postgres or postgres-xN")
        if count and not (count.isdigit() and int(count) >= 1):
            raise argparse.ArgumentTypeError(f"{text!r}: postgres-xN takes a count of processes")
        return cls(store, int(count or 1))

    def __str__(self) -> str:
        name = self.store if self.store != "postgres" else f"postgres x{self.processes}"
        return f"{name} w{spelled_workers(self.workers)}" if self.workers else name


def workers_given(text: str) -> int:
    """A ``--workers`` value: N ≥ 2, or auto (``AUTO_WORKERS``)."""
    if text == "auto":
        return AUTO_WORKERS
    if not text.isdigit() or int(text) < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: a count of workers (2 or more) or auto")
    return int(text)


def spelled_workers(workers: int) -> str:
    return "auto" if workers == AUTO_WORKERS else str(workers)


@contextlib.contextmanager
def served(
    args: argparse.Namespace, setup: Setup, database: str | None, marks: Path | None = None
) -> Iterator[list[LocalGateway]]:
    """Fresh gateways whose demo lists the load users, on a SQLite file, in memory, or all
    on one fresh PostgreSQL database; with ``marks``, each marks its runs' steps there
    (``GATEWAY_TIMELINE``)."""
    with tempfile.TemporaryDirectory(prefix="load-") as tmp, contextlib.ExitStack() as stack:
        directory = Path(tmp)
        write_users(directory, [user_name(n) for n in range(1, args.users + 1)])
        flags = ["--scripted-pace-ms", str(args.pace_ms)]
        flags += ["--workers", spelled_workers(setup.workers)]
        flags += ["--user-rate", str(args.user_rate)]
        flags += ["--timeline", str(marks)] if marks is not None else []
        if setup.store == "file":
            flags += ["--db", str(directory / "gateway.db")]
        elif setup.store == "postgres":
            assert database is not None
            flags += ["--db", database]
        yield [
            stack.enter_context(local_gateway(*flags, entry=("-m", "scripts._load_users", tmp)))
            for _ in range(setup.processes)
        ]


def one_round(
    args: argparse.Namespace, setup: Setup, postgres: Postgres | None, seed: int
) -> Result:
    load_average = float(Path("/proc/loadavg").read_text().split()[0])
    database = statements = None
    if setup.store == "postgres":
        assert postgres is not None
        database = postgres.fresh_database()
        statements = functools.partial(postgres.statements, database)
    with contextlib.ExitStack() as stack:
        marks = None
        if args.timeline:
            marks = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="timeline-")))
        with served(args, setup, database, marks) as gateways:
            load = Load(args, gateways, args.kill, seed)
            monitor = Monitor([gateway.process.pid for gateway in gateways], statements)
            uvloop.run(load.run(monitor))
            result = Result.of(load, monitor, load_average)
        if marks is not None:  # read once the gateways stopped: each wrote its last marks
            result.timeline = _timeline.breakdown(marks, replies(load))
        return result


def replies(load: Load) -> list[_timeline.Reply]:
    """The replies whose first text the round timed (as ``figures`` picks them)."""
    start = load.began + load.args.ramp
    return [
        _timeline.Reply(story.reply[0], story.reply[1], story.reply[1] + story.first_text)
        for story in load.stories
        if story.error is None
        and not story.cut
        and story.began >= start
        and story.reply is not None
        and story.first_text is not None
    ]


def print_comparison(setups: Sequence[Setup], results: dict[Setup, list[Result]]) -> None:
    """Each setup's median stories/s and server CPU a story against the first setup's, and
    the figures issue 32's load at scale asks of each: RUN_STARTED's and the first text's
    p99, errors, and what a connected user costs the server."""
    base = setups[0]
    rate = statistics.median(r.values["rate"] for r in results[base])
    cpu = statistics.median(r.values["server_ms"] for r in results[base])
    print(f"\nagainst {base}, medians of {len(results[base])} rounds each, in this run:")
    for setup in setups:
        own_rate = statistics.median(r.values["rate"] for r in results[setup])
        own_cpu = statistics.median(r.values["server_ms"] for r in results[setup])
        statements = statistics.median(r.values["statements"] for r in results[setup])
        print(
            f"  {setup!s:12} {own_rate:6.1f} stories/s ({own_rate / rate:4.2f}x),"
            f" server CPU {own_cpu:5.1f} ms a story ({own_cpu / cpu:4.2f}x)"
            + (f", {statements:.1f} statements a story" if not math.isnan(statements) else "")
        )
        median = Result.median(results[setup])
        print(
            f"  {'':12} RUN_STARTED p99 {ms(median.values['started99'])} ms, first text p99"
            f" {ms(median.values['text99'])} ms, {sum(median.errors.values())} errors,"
            f" {median.values['rss_user_kib']:.1f} KiB a connected user"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=500, help="users, one socket each (500)")
    parser.add_argument("--ramp", type=float, default=10.0, help="seconds to start them (10)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of stories (60)")
    parser.add_argument(
        "--stories", type=int, default=sys.maxsize, help="stories per user at most (no cap)"
    )
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="mean seconds a user pauses between stories, exponentially drawn (0: none)",
    )
    parser.add_argument("--kill", action="store_true", help="cut stories midway, then recover")
    parser.add_argument(
        "--kill-share", type=float, default=0.5, help="share of stories cut with --kill (0.5)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="fresh servers, then medians (1)")
    parser.add_argument(
        "--seed",
        type=int,
        default=random.randrange(1_000_000),
        help="picks the stories --kill cuts and when; round N uses seed + N - 1 (a random one,"
        " printed)",
    )
    parser.add_argument("--pace-ms", type=float, default=30.0, help="model pace a chunk (30)")
    parser.add_argument(
        "--frames-per-second",
        type=float,
        default=0.8 * GATEWAY.user_rate,
        help=f"frames one user sends a second at most; the gateway allows {GATEWAY.user_rate:g}"
        f" ({0.8 * GATEWAY.user_rate:g})",
    )
    parser.add_argument(
        "--user-rate",
        type=float,
        default=GATEWAY.user_rate,
        help="the frames a second the gateway allows a user after a burst of"
        f" {GATEWAY.user_burst} (GATEWAY_USER_RATE: {GATEWAY.user_rate:g})",
    )
    parser.add_argument(
        "--db",
        type=Setup.parse,
        nargs="+",
        default=[Setup("file")],
        help="stores to compare, each round in turn: file, memory, postgres (a throwaway"
        " server on this machine), postgres-xN (N processes on one database) (file)",
    )
    parser.add_argument(
        "--workers",
        type=workers_given,
        nargs="*",
        default=[],
        help="also run each store with GATEWAY_WORKERS=N (or auto: on demand), each side by"
        " side with one process (none)",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="the gateway marks each run's steps (GATEWAY_TIMELINE) and the report shows where"
        " the first texts waited, the slowest 1%% apart",
    )
    parser.add_argument("--story-timeout", type=float, default=60.0, help="seconds (60)")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds for a round, check included (600)"
    )
    args = parser.parse_args()
    if args.workers:
        args.db = [
            twin
            for setup in args.db
            for twin in (setup, *(dataclasses.replace(setup, workers=n) for n in args.workers))
        ]
    ensure_open_files(args.users)
    mode = "kill mode (stories cut midway)" if args.kill else "normal mode"
    thinking = f"think {args.think:g} s on average" if args.think > 0 else "back to back"
    print(machine())
    results: dict[Setup, list[Result]] = {setup: [] for setup in args.db}
    with contextlib.ExitStack() as stack:
        postgres = None
        if any(setup.store == "postgres" for setup in args.db):
            postgres = stack.enter_context(running_postgres(count_statements=True))
        for number in range(1, args.rounds + 1):
            seed = args.seed + number - 1
            for setup in args.db:
                results[setup].append(one_round(args, setup, postgres, seed))
                title = (
                    f"round {number}: {args.users} users (ramp {args.ramp:g} s), the flagship"
                    f" story, model pace {args.pace_ms:g} ms, {thinking}, store {setup}, {mode},"
                    f" seed {seed}"
                )
                print_result(title, results[setup][-1], args.kill)
    for setup, rounds in results.items():
        if len(rounds) > 1:
            title = f"{setup}: median of {len(rounds)} rounds (counts: every round's added up)"
            print_result(title, Result.median(rounds), args.kill)
    if len(results) > 1:
        print_comparison(args.db, results)
    return 1 if any(result.failed for rounds in results.values() for result in rounds) else 0


if __name__ == "__main__":
    sys.exit(main())
