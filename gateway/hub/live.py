"""Live turns: a thread's run that is a voice conversation, bridged to ``Runner.run_live``.

Theory of operation. ``liveStart`` on /ws asks for a live turn on a thread; ``start_live``
claims the thread as any run claims it (the cluster's lease, the run slots, the thread's
one run, its quota), refusing with SESSION_BUSY when a run is going rather than waiting
behind it: a person who starts talking expects to be heard now. The turn is then an
ordinary ``Run`` of the hub, its JSON events numbered, logged and fanned out to the
thread's watchers as any run's are, and one task (``LiveRun.drive``) feeds ADK's live
stream through a ``LiveTranslator``. The agent's speech goes only to the connection that
opened the turn (its ``Speaker``), through the run's outbox, so no audio chunk overtakes
the events before it; audio is never logged or stored.

The turn ends when the speaker says ``liveStop`` (``stop``: the audio input is closed, ADK
lets the model finish and its stream ends), when the run is cancelled (the same, ending
``cancelled``), or when the model's connection fails (RUN_ERROR AGENT_ERROR). A speaker
whose connection drops may come back: the turn goes on without it for a grace
(``detach``), its events stored and its speech sent to nobody, and when the client
instance that opened it reattaches (the hub makes that connection the run's executor) it
speaks and hears again from there (``resume``); a turn nobody comes back to ends as a
``liveStop`` ends it. Its transcripts are stored by ADK as they finish, so the thread's next
snapshot, and ``/history``, show the conversation.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import aclosing
from functools import partial
from typing import TYPE_CHECKING, Protocol

from gateway import logs
from gateway import wire as p
from gateway.adk.live import LiveTurn, live_failure, stored
from gateway.context import Caller, asked_by
from gateway.hub.busy import Busy, in_progress
from gateway.hub.inputs import read_resume, tool_response
from gateway.hub.open_calls import answered_calls, open_calls
from gateway.hub.refusals import check_owner, cut_by_restart, store_unavailable
from gateway.hub.states import ThreadState, Trigger, run_ended, transition
from gateway.hub.threads import Run, Subscriber
from gateway.store import StoreError
from gateway.tools.client import ClientTool
from gateway.tools.declarations import declared_client_tools
from gateway.translate.live import LiveTranslator
from gateway.wire import bounds, live

if TYPE_CHECKING:
    from gateway.hub.hub import Hub

log = logging.getLogger(__name__)

# How long ADK gets to end its stream once the audio input is closed.
STOP_GRACE_SECONDS = 5.0


class Speaker(Subscriber, Protocol):
    """The connection that opened a live turn: it is sent the agent's speech."""

    def deliver_audio(self, chunk: live.AudioOut) -> None: ...


class LiveRun:
    """One live turn: the hub's run, ADK's live invocation, and the task between them."""

    def __init__(
        self, hub: Hub, run: Run, speaker: Speaker, client_tools: dict[str, ClientTool]
    ) -> None:
        self.hub = hub
        self.run = run
        self.speaker = speaker
        thread = run.thread
        self.turn = LiveTurn(hub.engine, thread.user_id, thread.thread_id, run.run_id, client_tools)
        # Client calls answered in this turn: each is answered once.
        self.answered: set[str] = set()
        self.translator = LiveTranslator(run.translator)
        # Bytes of audio the person sent, for the bounds and the log line.
        self.heard_bytes = 0
        self.streaming: asyncio.Task[None] | None = None
        self.stopping = asyncio.Event()
        # While its speaker is gone: ends the turn unless the speaker comes back first.
        self.held: asyncio.TimerHandle | None = None

    def hear(self, pcm: memoryview) -> None:
        self.heard_bytes += len(pcm)
        self.hub.metrics.live_audio("in", len(pcm) / (2 * live.INPUT_RATE))
        self.turn.hear(pcm)

    async def answer(self, message: p.ToolMessage) -> p.GatewayError | None:
        """Gives the model the browser's result of a client call of this turn, once."""
        call_id = message.tool_call_id
        translator = self.run.translator
        if call_id in self.answered:
            return p.GatewayError(
                p.ErrorCode.VALIDATION_ERROR,
                f"Tool call {call_id} was answered already; a call is answered once.",
            )
        name = translator.pending.get(call_id)
        if name is None or call_id not in translator.client_calls:
            return p.GatewayError(
                p.ErrorCode.VALIDATION_ERROR,
                f"Tool call {call_id} is not a client call this live turn waits for.",
            )
        try:
            bounds.parse_json(p.text_of(message.content))
        except bounds.OutOfBounds as bad:
            return p.GatewayError(
                p.ErrorCode.VALIDATION_ERROR,
                f"Invalid liveToolResult: {bad.at('$.message.content')}",
            )
        except ValueError:
            pass  # not JSON: the model reads it as text
        self.answered.add(call_id)  # before the write: a resend meanwhile is refused
        response = tool_response(message)
        asked = open_calls(self.turn.session).get(call_id)
        try:
            await self.turn.answer(call_id, name, response)
        except StoreError:
            self.answered.discard(call_id)  # not stored: the browser may send it again
            return store_unavailable()
        del translator.pending[call_id]
        if asked is not None:  # audited as a typed run's browser result
            run = self.run
            self.hub.planner.audit_answers(
                run.thread, run.run_id, {call_id: asked}, {call_id: response}
            )
        log.info("live %s: the browser answered %s (%s)", self.run, name, call_id)
        # The executor sent it; the thread's other tabs are shown it.
        result = p.ToolCallResult(
            message_id=message.id,
            tool_call_id=call_id,
            content=message.content,
            role="tool",
        )
        self.run.emit([result], observers_only=True)
        return None

    async def decide(self, entries: list[p.ResumeEntry]) -> p.GatewayError | None:
        """Gives the turn's calls waiting for approval the person's answers, under a typed
        run's rules (``read_resume``): an expired approval is rejected, a repeated answer
        is a notice, and each answer is audited."""
        session, run = self.turn.session, self.run
        open_items = open_calls(session)
        timeout = self.hub.planner.approval_timeout
        try:
            answers = read_resume(
                entries, open_items, answered_calls(session), timeout, time.time()
            )
        except p.GatewayError as refused:
            return refused
        run.overruled.update(answers.overruled)
        for call_id, response in answers.responses.items():
            if not self.turn.decide(call_id, response):  # answered a moment ago: refused
                return p.GatewayError(
                    p.ErrorCode.VALIDATION_ERROR,
                    f"resume: interrupt {call_id!r} was answered already, or its turn ended.",
                )
            self.hub.planner.audit_answers(
                run.thread, run.run_id, {call_id: open_items[call_id]}, {call_id: response}
            )
            log.info("live %s: %s answered (%s)", run, call_id, response.get("confirmed"))
        run.emit(answers.notices)
        return None

    def say(self, message: p.UserMessage) -> p.GatewayError | None:
        """Gives the model what the person typed into the live turn, as a user turn; stored
        under the client's message id, shown to the thread's other tabs."""
        text = p.text_of(message.content).strip()
        if not text:
            return p.GatewayError(
                p.ErrorCode.VALIDATION_ERROR,
                "A message typed into a live turn needs text; send audio as audio frames.",
            )
        if self.stopping.is_set() or self.turn.closed:
            return p.GatewayError(
                p.ErrorCode.VALIDATION_ERROR,
                f"The live turn on thread {self.run.thread.thread_id} is ending; send the"
                " message again once it has (as a RunAgentInput).",
            )
        self.turn.say(message.id, text)
        log.info("live %s: the person typed %d characters", self.run, len(text))
        # One message open at a time on the wire: the agent's, if open, ends first.
        self.run.emit(self.translator.close())
        typed = [
            p.TextMessageStart(message_id=message.id, role="user"),
            p.TextMessageContent(message_id=message.id, delta=text),
            p.TextMessageEnd(message_id=message.id),
        ]
        self.run.emit(typed, observers_only=True)  # the sender has it
        return None

    def stop(self) -> None:
        """Ends the turn once what was said is answered and stored: no more audio."""
        self.stopping.set()

    async def drive(self) -> None:
        run, thread = self.run, self.run.thread
        logs.bind(user=thread.user_id, thread=thread.thread_id, run=run.run_id)
        asked_by(run.caller)
        started = time.perf_counter()
        completed = False
        watch = asyncio.create_task(self._watch_stop())
        try:
            run.emit(run.translator.start())
            run.emit([live.started()])
            streaming = self.streaming = asyncio.create_task(self._stream())
            try:
                await asyncio.wait({streaming})
            except asyncio.CancelledError:
                streaming.cancel()
                raise
            if not streaming.cancelled():
                streaming.result()  # a failure of the model's connection surfaces here
            if run.stopped_by is not None:
                raise run.stopped_by
            run.emit(self.translator.close())
            # Calls left unanswered ended with the model's connection: nothing waits on them
            # (the thread's next message supersedes them, as for any open call).
            run.translator.pending.clear()
            run.emit(run.translator.cancelled() if run.abort.is_set() else run.translator.finish())
            completed = True
        except p.GatewayError as stopped:
            run.emit(self.translator.close())
            run.fail(stopped)
        except asyncio.CancelledError:  # the hub's stop cut it off
            run.emit(self.translator.close())
            run.fail(cut_by_restart())
            raise
        except Exception as error:  # the model's connection, or a tool
            run.emit(self.translator.close())
            run.fail(live_failure(error) or p.unexpected(f"live {run}", p.ErrorCode.AGENT_ERROR))
        finally:
            watch.cancel()
            if self.held is not None:
                self.held.cancel()
            self.turn.close()
            ending = run_ended(
                cancelled=run.abort.is_set(),
                failed=not completed,
                approvals=False,
                browser_calls=False,
            )
            run.thread_state = transition(ThreadState.RUNNING, ending)
            await run.outbox.drained()
            log.info(
                "live %s ended in %.0f ms, %.1f s of audio heard, the thread %s",
                run,
                (time.perf_counter() - started) * 1000,
                self.heard_bytes / (2 * live.INPUT_RATE),
                run.thread_state.value,
            )
            self.hub.ended(run)

    async def _stream(self) -> None:
        async with aclosing(self.turn.events()) as events:
            async for event in events:
                if stored(event):  # what a reattach's read of the thread waits for
                    self.run.last_event_id = event.id
                self._emit(self.translator.translate(event))

    def _emit(self, out: list[live.AudioOut | p.Event]) -> None:
        """Events as the run emits them; audio after them, to the speaker alone."""
        batch: list[p.Event] = []
        for item in out:
            if isinstance(item, live.AudioOut):
                spoken = len(item.frame) - live.HEADER_BYTES
                self.hub.metrics.live_audio("out", spoken / (2 * live.OUTPUT_RATE))
                self.run.emit(batch)
                batch = []
                self.run.outbox.send(partial(self._speak, item))
            else:
                batch.append(item)
        self.run.emit(batch)

    def _speak(self, chunk: live.AudioOut) -> None:
        """Sends a chunk to whoever executes the run now: the speaker, or the connection
        its client instance reattached on; nobody while it is away."""
        deliver = getattr(self.run.executor, "deliver_audio", None)
        if deliver is not None:
            deliver(chunk)

    def detach(self, grace: float) -> None:
        """The speaker's connection closed: the turn goes on for ``grace`` seconds for its
        client instance to reattach (``resume``), then ends as ``stop`` ends it."""
        if self.stopping.is_set() or self.run.ended or self.held is not None:
            return
        log.info("live %s: its connection closed; held %.0f s for a reattach", self.run, grace)
        self.hub.metrics.live_dropped("held")
        self.held = asyncio.get_running_loop().call_later(grace, self._unclaimed, grace)

    def _unclaimed(self, grace: float) -> None:
        self.held = None
        log.info("live %s: nobody reattached within %.0f s; the turn ends", self.run, grace)
        self.hub.metrics.live_dropped("ended")
        self.stop()

    def resume(self, speaker: Speaker) -> bool:
        """The client instance that opened the turn reattached on ``speaker``: it speaks
        and is sent the agent's speech from here on, after what the reattach sends it, and
        is told so (``gateway.live.resumed``). False if the turn is ending already."""
        if self.stopping.is_set() or self.run.ended:
            return False
        if self.held is not None:
            self.held.cancel()
            self.held = None
        self.speaker = speaker
        told = live.resumed(self.translator.turn)
        # The outbox holds the reattach's catch-up: the notice goes after it.
        self.run.outbox.send(partial(speaker.deliver, told))
        log.info("live %s: resumed on a new connection of its client", self.run)
        self.hub.metrics.live_dropped("resumed")
        return True

    async def _watch_stop(self) -> None:
        """Closes the audio input on ``stop`` or a cancel of the run, then gives ADK
        ``STOP_GRACE_SECONDS`` to end its stream before cutting it."""
        stop = asyncio.ensure_future(self.stopping.wait())
        abort = asyncio.ensure_future(self.run.abort.wait())
        try:
            await asyncio.wait({stop, abort}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            abort.cancel()
        self.turn.close()
        # ADK may not let go of a model that never answers: the stream is cut after a grace.
        await asyncio.sleep(STOP_GRACE_SECONDS)
        if self.streaming is not None and not self.streaming.done():
            log.warning(
                "live %s: ADK's stream did not end %.0f s after its stop",
                self.run,
                STOP_GRACE_SECONDS,
            )
            self.streaming.cancel()


async def start_live(hub: Hub, frame: live.LiveStart, speaker: Speaker, caller: Caller) -> LiveRun:
    """Claims the thread for a live turn and starts it; raises GatewayError before any
    event: SESSION_BUSY when a run is going on the thread, here or elsewhere."""
    thread_id = frame.thread_id
    engine = hub.engine
    client_tools = declared_client_tools(frame.tools, engine.catalog, engine.server_tools)
    known = hub.threads.get(thread_id)
    if known is not None:
        check_owner(known.user_id, caller.user_id, thread_id)
        if known.run is not None or known.waiting:
            raise in_progress(thread_id)
    run, opened = await hub.claim(caller, thread_id, frame.run_id, speaker, Busy.REJECT)
    try:
        hub.quota.check(opened.usage, new_thread=opened.created, new_turn=True)
    except BaseException:
        hub.ended(run)
        raise
    run.thread_state = transition(ThreadState.IDLE, Trigger.USER_MESSAGE)
    run.thread.watch(speaker)
    turn = LiveRun(hub, run, speaker, client_tools)
    run.task = asyncio.create_task(turn.drive(), name=f"live run {run.run_id}")
    log.info("live turn %s started on thread %s", run.run_id, thread_id)
    return turn
