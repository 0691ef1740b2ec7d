"""Voice on /ws: one connection's live turn, its audio frames and its bounds.

Theory of operation (the contract is ``docs/voice.md``). A ``liveStart`` waits its turn in
the connection's queue like a run, then opens the live turn (``gateway.hub.live``); from
then on the connection's binary frames are the person's audio, checked (``wire.live``),
bounded and handed to the turn at once, and ``liveStop`` ends it, also at once, as a
cancel acts. The agent's speech comes back through ``deliver_audio`` on the connection.

What one client can make the gateway do is bounded: a frame holds at most a second of
audio, audio may not come faster than real time beyond a ``BURST_SECONDS`` burst
(RATE_LIMIT_EXCEEDED, the frame dropped), a turn hears at most ``live_max_seconds`` (then it
ends with SERVICE_QUOTA_EXCEEDED), and a user has at most ``live_turns_per_user`` turns
open (``LiveUsers``).

A connection that closes leaves its turn open for ``live_reattach_seconds`` when it named
its client instance (``?clientId=``): a reattach of that instance on a new connection
(``rejoin``, after the hub made it the run's executor) speaks and hears in the turn from
there; the turn still counts against its user's live turns meanwhile, and ends when
nobody comes back. A connection with no instance, or a draining gateway, ends it at once.
From the moment another connection took the turn over, this one's audio and live frames
find no turn.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from gateway import wire as p
from gateway.config import Settings
from gateway.context import Caller
from gateway.hub.hub import Hub
from gateway.hub.live import LiveRun, Speaker, start_live
from gateway.hub.threads import Run
from gateway.wire import live

log = logging.getLogger(__name__)

# Audio may run ahead of real time by this much (a client's buffer flushed after a stall).
BURST_SECONDS = 2.0

BYTES_PER_SECOND = 2 * live.INPUT_RATE


@dataclasses.dataclass
class LiveUsers:
    """The live turns open per user, and on each thread, across the gateway's connections."""

    open: dict[str, int] = dataclasses.field(default_factory=dict)
    # The live turn open on each thread, for a reattach that resumes it.
    turns: dict[str, LiveRun] = dataclasses.field(default_factory=dict)

    def take(self, user: str, limit: int) -> None:
        if self.open.get(user, 0) >= limit:
            raise p.GatewayError(
                p.ErrorCode.SERVICE_QUOTA_EXCEEDED,
                f"You have {limit} live turn(s) open already (GATEWAY_LIVE_TURNS_PER_USER);"
                " stop one with liveStop before starting another.",
            )
        self.open[user] = self.open.get(user, 0) + 1

    def give_back(self, user: str) -> None:
        left = self.open.get(user, 0) - 1
        if left > 0:
            self.open[user] = left
        else:
            self.open.pop(user, None)


class Voice:
    """A connection's live turn, if it has one."""

    def __init__(self, hub: Hub, settings: Settings, users: LiveUsers) -> None:
        self.hub = hub
        self.settings = settings
        self.users = users
        self.turn: LiveRun | None = None
        # The connection that speaks in ``turn``, and since when its audio is paced.
        self.speaker: Speaker | None = None
        self.started_at = 0.0

    async def start(self, frame: live.LiveStart, speaker: Speaker, caller: Caller) -> LiveRun:
        """Opens the live turn; raises GatewayError before any event."""
        if self.turn is not None and not self.turn.run.done.is_set():
            raise p.GatewayError(
                p.ErrorCode.SESSION_BUSY,
                f"This connection has a live turn open on thread {self.turn.run.thread.thread_id};"
                " send liveStop before starting another.",
            )
        self.users.take(caller.user_id, self.settings.live_turns_per_user)
        try:
            turn = await start_live(self.hub, frame, speaker, caller)
        except BaseException:
            self.users.give_back(caller.user_id)
            raise
        self.turn, self.speaker, self.started_at = turn, speaker, time.monotonic()
        user, thread_id = caller.user_id, frame.thread_id
        self.users.turns[thread_id] = turn
        assert turn.run.task is not None
        turn.run.task.add_done_callback(lambda _: self._ended(user, thread_id, turn))
        return turn

    def _ended(self, user: str, thread_id: str, turn: LiveRun) -> None:
        self.users.give_back(user)
        if self.users.turns.get(thread_id) is turn:
            del self.users.turns[thread_id]

    def rejoin(self, run: Run | None, speaker: Speaker) -> None:
        """A reattach that follows ``run``: if it is a live turn and ``speaker`` speaks for
        the client instance that opened it, the turn goes on here."""
        turn = self.users.turns.get(run.thread.thread_id) if run is not None else None
        if turn is None or turn.run is not run or speaker.client is None:
            return
        if speaker.client != run.owner or not turn.resume(speaker):
            return
        self.turn, self.speaker = turn, speaker
        # Paced from here as if what the turn heard had come in real time until now.
        self.started_at = time.monotonic() - turn.heard_bytes / BYTES_PER_SECOND

    def _spoken(self) -> LiveRun | None:
        """The live turn this connection speaks in: open, and not taken over since."""
        turn = self.turn
        if turn is None or turn.run.done.is_set() or turn.speaker is not self.speaker:
            return None
        return turn

    def stop(self, frame: live.LiveStop) -> p.GatewayError | None:
        """Ends the live turn of ``frame``'s thread; an error if there is none."""
        turn = self._open_on(frame.thread_id)
        if turn is None:
            return _no_turn(frame.thread_id, "")
        log.info("liveStop: %s", turn.run)
        turn.stop()
        return None

    async def answer(self, frame: live.LiveToolResult) -> p.GatewayError | None:
        """Hands a client tool's result to the live turn of ``frame``'s thread."""
        turn = self._open_on(frame.thread_id)
        if turn is None:
            return _no_turn(frame.thread_id, "; a result for a typed run goes in a RunAgentInput")
        return await turn.answer(frame.message)

    async def decide(self, frame: live.LiveResume) -> p.GatewayError | None:
        """Hands a person's approval answers to the live turn of ``frame``'s thread."""
        turn = self._open_on(frame.thread_id)
        if turn is None:
            return _no_turn(frame.thread_id, "; a typed run's approval is answered by resume")
        return await turn.decide(frame.resume)

    def takes(self, request: p.RunAgentInput) -> bool:
        """Whether ``request`` is a message typed into this connection's live turn: on its
        thread, a new user message (answers and presses wait for the turn, as before)."""
        return (
            self._open_on(request.thread_id) is not None
            and not request.resume
            and p.user_action(request) is None
            and bool(request.messages)
            and isinstance(request.messages[-1], p.UserMessage)
        )

    def say(self, request: p.RunAgentInput) -> p.GatewayError | None:
        """Hands the message typed into the live turn (``takes``) to it."""
        assert self.turn is not None
        message = request.messages[-1]
        assert isinstance(message, p.UserMessage)
        return self.turn.say(message)

    def _open_on(self, thread_id: str) -> LiveRun | None:
        """The connection's live turn, if it is open on ``thread_id``."""
        turn = self._spoken()
        if turn is None or turn.run.thread.thread_id != thread_id:
            return None
        return turn

    def audio(self, data: bytes) -> p.GatewayError | None:
        """Hands one audio-in frame to the live turn; an error if it is refused."""
        turn = self._spoken()
        if turn is None or turn.stopping.is_set():
            return live.no_live_turn()
        try:
            pcm = live.audio_in(data)
        except p.GatewayError as error:
            return error
        heard = turn.heard_bytes + len(pcm)
        allowed = (time.monotonic() - self.started_at + BURST_SECONDS) * BYTES_PER_SECOND
        if heard > allowed:
            return p.GatewayError(
                p.ErrorCode.RATE_LIMIT_EXCEEDED,
                "Audio is arriving faster than real time; send it as it is recorded"
                " (16 kHz, 2 bytes a sample). This chunk was dropped.",
            )
        if heard > self.settings.live_max_seconds * BYTES_PER_SECOND:
            turn.run.stopped_by = p.GatewayError(
                p.ErrorCode.SERVICE_QUOTA_EXCEEDED,
                f"This live turn heard its {self.settings.live_max_seconds:g} s of audio"
                " (GATEWAY_LIVE_MAX_SECONDS); start a new one to go on talking.",
            )
            turn.stop()
            return None
        turn.hear(pcm)
        return None

    def leave(self) -> None:
        """The connection closed: its live turn waits for its client instance to reattach,
        for ``live_reattach_seconds``; one with no instance ends now."""
        turn = self._spoken()
        if turn is None:
            return
        grace = self.settings.live_reattach_seconds
        if turn.run.owner is None or grace <= 0 or self.hub.draining:
            turn.stop()
        else:
            turn.detach(grace)

    def end(self) -> None:
        """The gateway drains: the live turn ends now, its words stored."""
        if (turn := self._spoken()) is not None:
            turn.stop()


def _no_turn(thread_id: str, instead: str) -> p.GatewayError:
    return p.GatewayError(
        p.ErrorCode.VALIDATION_ERROR,
        f"There is no live turn open on thread {thread_id} on this connection{instead}.",
    )
