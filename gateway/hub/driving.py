"""Driving a run: ADK's stream through the run's translator to its watchers, to its end.

Theory of operation. A planned run (``gateway.hub.planning``) is driven by one task: it
emits RUN_STARTED and what the input brings for the thread's other connections (the
user's message, the browser's results), then feeds each event of ADK's stream through
the run's translator (``RunTranslator``) into the run's outbox, and ends the run by how
its stream ended: RUN_FINISHED (success, waiting on the browser, or interrupted by an
approval asked), cancelled, or RUN_ERROR with a code and a sentence (the hub's, when
something outside the run stopped it: its lease lost, its thread taken over; the store's,
when the database was lost under it); a run that made client calls first shows them to the
thread's other tabs in a snapshot, since only its executor was sent them live. The same
ending moves the thread out of RUNNING on its table (``gateway.hub.states``), and the run
keeps the state it leaves the thread in. A run with nothing to resume yet runs no agent: it
only reports what the thread still waits for, and moves nothing.

The later chunks of a reply that keep coming are held while they do and emitted as one
event (``gateway.hub.text_bursts``): a chunk was most of a run's events, each numbered,
logged, committed and delivered.

What it keeps on the way, so that a crash cuts nothing but the last of a streamed reply
(docs/durability.md): the text so far of a streamed message (ADK stores a message only once
it is complete; its chunks go out ahead of that write), and, when the run is
cancelled, fails or a model stalls, that text as the reply, marked with how it ended.
A cancel gives ADK ``CANCEL_GRACE_SECONDS`` to seal the invocation, then stops the
stream outright if it has not stopped, and answers the calls the run left open, so the
next turn starts from a whole history. A model call that sends nothing for
``model_timeout`` seconds stops the run as a cancel does, and is told as a failure.

The driver reaches into nothing of the hub's: it is given the engine, the followers of
the thread's log and the model timeout, and tells the hub once, through ``ended``, that
the run's last events are out.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from functools import partial
from typing import Any

import msgspec
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.events import Event as AdkEvent

from gateway import logs, timeline, tracing
from gateway import wire as p
from gateway.a2ui import ACTION_ACTIVITY
from gateway.a2ui.actions import action_content
from gateway.adk.engine import Engine
from gateway.adk.resumability import refusal_in
from gateway.adk.workers import WorkerLost
from gateway.context import asked_by, event_metadata
from gateway.hub.following import Followers
from gateway.hub.inputs import NewTurn
from gateway.hub.open_calls import OpenCall, answered_calls, open_calls
from gateway.hub.outbox import Commit
from gateway.hub.planning import Plan, function_responses
from gateway.hub.refusals import cut_by_restart, quarantined, store_lost, taken_over
from gateway.hub.snapshots import thread_snapshot
from gateway.hub.states import ThreadState, run_ended, transition
from gateway.hub.text_bursts import TextBurst
from gateway.hub.threads import Run
from gateway.models.calls import MODEL_FAILED, FailedCall, Stall
from gateway.store import QuarantinedThreadError, StoreError
from gateway.store.cut_off import Ending, cut_off_reply
from gateway.store.errors import FencedError
from gateway.store.recovery import Afterwards, Finishing
from gateway.translate.translator import AgentFailure

log = logging.getLogger(__name__)

# How long ADK gets to seal a cancelled invocation before its task is cancelled outright.
CANCEL_GRACE_SECONDS = 0.5


class Driver:
    """Drives planned runs to their end; see the module's docstring."""

    def __init__(
        self,
        engine: Engine,
        followers: Followers,
        *,
        model_timeout: float,
        ended: Callable[[Run], None],
        snapshot_bytes: int | None = None,
    ) -> None:
        self.engine = engine
        # How much of a thread a snapshot holds, as a reattach's does.
        self.snapshot_bytes = snapshot_bytes
        # Watchers that followed the thread's log are caught up before a run emits.
        self.followers = followers
        # Seconds a model call may send nothing before its run is stopped.
        self.model_timeout = model_timeout
        # Told once a run's last events are out: the hub lets go of the run.
        self.ended = ended

    async def drive(self, run: Run, plan: Plan) -> None:
        with tracing.run_span(run.run_id, run.thread.thread_id, run.thread.user_id):
            await self._drive(run, plan)

    async def _drive(self, run: Run, plan: Plan) -> None:
        translator = run.translator
        thread = run.thread
        logs.bind(user=thread.user_id, thread=thread.thread_id, run=run.run_id)
        timeline.mark("driven")
        asked_by(run.caller)  # the run's own task: its tools and callbacks read it
        started = time.perf_counter()
        run.thread_state = plan.thread_state
        completed = False  # the run ended by its outcome, not by a failure
        if thread.head is None:
            try:
                thread.head = await self.engine.log_head(thread.user_id, thread.thread_id)
            except StoreError as error:  # the run goes on; a reattach gets the snapshot
                log.warning("%s is not logged: its thread's log cannot be read: %s", run, error)
        await self.followers.catch_up(thread)
        opening = translator.start()
        for event in opening:
            if isinstance(event, p.RunStarted):
                event.parent_run_id = plan.parent_run_id
        run.emit(opening)
        run.emit(plan.observers_first, observers_only=True)
        run.emit(plan.shown_first)
        run.emit([plan.state] if plan.state is not None else [])
        run.emit(plan.notices)
        run.emit(plan.closed)
        # Observers see the user's message and the browser's results; the executor sent them.
        # A press on a surface no client sends as a message: every watcher is shown it.
        if plan.said is not None and plan.said.action is not None:
            run.emit([_pressed(plan.said)])
        elif plan.said is not None and plan.said.text:
            run.emit(_said(plan.said), observers_only=True)
        run.emit(plan.results, observers_only=True)
        tracing.client_tool_waits(_waited(plan) if tracing.current_span() else ())
        try:
            if plan.runs_agent:
                await self._stream(run, plan)
            else:
                # Nothing to resume yet: the run reports what the thread still waits for.
                translator.pending.update(plan.waiting)
            if run.stopped_by is not None:
                raise run.stopped_by
            if translator.client_calls and not run.abort.is_set():
                await self._show_held_calls(run)
            if run.abort.is_set():
                run.emit(translator.cancelled())
            elif translator.interrupts:
                run.emit(translator.interrupted())
            else:
                run.emit(translator.finish())
            completed = True
        except ModelStalled as stalled:
            run.fail(self._stalled(run, stalled.stall))
        except AgentFailure as exc:
            failed = self.engine.take_model_failure(run.run_id)
            if exc.error_code == MODEL_FAILED and failed is not None:
                run.fail(_model_failed(run, failed))
            else:
                run.fail(p.unexpected(f"{run} ({exc})", p.ErrorCode.AGENT_ERROR, traceback=False))
        except p.GatewayError as stopped:  # from outside: the lease lost, the thread taken
            run.fail(stopped)
        except QuarantinedThreadError:  # found by a read of the run (ADK's, or a cancel's)
            run.fail(quarantined(thread.thread_id))
        except FencedError:
            run.fail(run.stopped_by or taken_over(thread.thread_id))
        except StoreError as error:
            log.warning("%s stopped: its store failed: %s", run, error)
            run.fail(run.stopped_by or store_lost())
        except StaleSessionError:
            run.fail(p.unexpected(str(run)))
        except Exception as error:  # the model or a tool raised, or a plugin refused
            refused = refusal_in(error)
            run.fail(refused or p.unexpected(str(run), p.ErrorCode.AGENT_ERROR))
        except asyncio.CancelledError:  # the hub's stop cut it off: its stream ends, said so
            run.fail(cut_by_restart())
            raise
        finally:
            state = plan.thread_state
            if state is ThreadState.RUNNING:  # it ran the agent: how it ended moves the thread
                ending = run_ended(
                    cancelled=run.abort.is_set(),
                    failed=not completed,
                    approvals=bool(translator.interrupts),
                    browser_calls=bool(translator.pending),
                )
                run.thread_state = state = transition(state, ending)
            self.engine.forget_model_calls(run.run_id)
            # The thread takes its next run only once this one's events are all out.
            await run.outbox.drained()
            log.info(
                "run %s on thread %s ended in %.0f ms, the thread %s",
                run.run_id,
                thread.thread_id,
                (time.perf_counter() - started) * 1000,
                state.value,
            )
            self.ended(run)

    async def _show_held_calls(self, run: Run) -> None:
        """The run's client calls went live to its executor alone, so that no other tab
        executes them: the other tabs are shown them now, in the thread's snapshot, as a
        reload would show them, before the run's end names them as pending. The snapshot
        shows the session's state alone: its events are not read (decoding them was a
        twentieth of the main process's CPU at 200 users, on every run that asks the browser)."""
        thread = run.thread
        try:
            page, session = await self.engine.thread_view(
                thread.user_id, thread.thread_id, self.snapshot_bytes, open_calls=False
            )
        except (StoreError, QuarantinedThreadError) as error:
            log.warning("%s: other tabs see its client calls on a reload: %s", run, error)
            return
        log.debug("%s: other tabs are shown its client calls in a snapshot", run)
        run.emit(thread_snapshot(thread.thread_id, page, session), observers_only=True)

    async def _stream(self, run: Run, plan: Plan) -> None:
        """Feeds ADK's events through the translator until the run ends or is cancelled."""
        # The input's commit: ADK's append of it goes ahead (``SessionService.input_ahead``),
        # so the model is called while it commits; nothing of the run's goes out before it.
        input_commits: list[Commit] = []

        def input_queued(commit: Commit) -> None:
            input_commits.append(commit)
            if timeline.on():
                commit.add_done_callback(lambda _: timeline.mark("input_committed", run.run_id))

        events = self.engine.run(
            user_id=run.thread.user_id,
            thread_id=run.thread.thread_id,
            session=plan.session,
            message=plan.message,
            invocation_id=plan.resumes,
            state_delta=plan.state_delta,
            metadata=plan.metadata,
            client_tools=plan.client_tools,
            catalogs=plan.catalogs,
            surfaces=plan.surfaces,
            abort_signal=run.abort,
            input_queued=input_queued,
        )
        # One task per run consumes ADK's stream, so a cancel can stop a slow tool without
        # a task and a wait per event.
        consumer = asyncio.create_task(self._consume(run, events, input_commits))
        aborted = asyncio.ensure_future(run.abort.wait())
        stalled = asyncio.ensure_future(self.engine.model_stalled(run.run_id, self.model_timeout))
        stall: Stall | None = None
        try:
            await asyncio.wait({consumer, aborted, stalled}, return_when=asyncio.FIRST_COMPLETED)
            if not consumer.done():
                if stalled.done():  # stopped as a cancel is, then told as a failure
                    stall = stalled.result()
                    run.abort.set()
                # Cancelled: ADK seals the invocation if it stops in time; a slow tool that
                # does not is cancelled outright.
                await asyncio.wait({consumer}, timeout=CANCEL_GRACE_SECONDS)
                consumer.cancel()
        except asyncio.CancelledError:  # the hub's stop: ADK's stream stops here too
            consumer.cancel()
            raise
        finally:
            aborted.cancel()
            stalled.cancel()
        if run.abort.is_set():
            await _settle(consumer)
            await self._keep_cut_off_reply(run, Ending.STOPPED if stall is None else Ending.FAILED)
            await self._seal(run)
            if stall is not None:
                raise ModelStalled(stall)
            return
        try:
            await consumer  # a failure of the model or a tool surfaces here
        except WorkerLost:
            await self._close_cut_off(run)
            raise
        except Exception:
            await self._keep_cut_off_reply(run, Ending.FAILED)
            raise

    async def _consume(
        self, run: Run, events: AsyncGenerator[AdkEvent, None], input_commits: list[Commit]
    ) -> None:
        burst = run.burst = TextBurst(partial(self._emit_burst, run))
        taken = texted = False  # the run's first event, its first text (``timeline``)
        try:
            async with aclosing(events):
                async for event in events:
                    if not taken:
                        taken = True
                        timeline.mark("taken")
                    if input_commits:
                        await _stored(input_commits)
                    if not event.partial:
                        run.last_event_id = event.id
                    # After a cancel ADK's sealing events are stored, not streamed.
                    out = [] if run.abort.is_set() else run.translator.translate(event)
                    if burst.hold(out):
                        run.streaming = event  # its text is stored with the burst's
                        continue
                    if out:
                        burst.flush()  # nothing overtakes the text held
                    streamed = _streamed_text(event, out)
                    # Sent ahead of its commit, nobody waits for its text so far either.
                    rides = streamed and run.outbox.goes_ahead(len(out))
                    kept = self._keep_streamed_text(run, event, out, rides)
                    if not texted and timeline.on():  # before: the emit may write it at once
                        texted = _first_text(run.run_id, out)
                    run.emit(out, after=kept, streamed=streamed)
                    if out:
                        burst.emitted(out)
            await _stored(input_commits)  # a stream that said nothing: before the run's end
        finally:
            burst.flush()
            run.burst = None

    def _emit_burst(self, run: Run, chunk: p.TextMessageContent) -> None:
        """Emits a burst of streamed text (``gateway.hub.text_bursts``) with its text so far
        stored, as a chunk is; nothing, once the run has ended (the hub's stop cut it off)."""
        if run.ended:
            return
        rides = run.outbox.goes_ahead(1)  # as a chunk's (``_consume``)
        kept = self._save_streamed_text(run, run.streaming, rides) if run.streaming else None
        run.emit([chunk], after=kept, streamed=True)

    def _stalled(self, run: Run, stall: Stall) -> p.GatewayError:
        log.warning(
            "%s: %s sent nothing for %.1f s (GATEWAY_MODEL_TIMEOUT); the run was stopped",
            run,
            stall.model,
            stall.seconds,
        )
        return p.GatewayError(
            p.ErrorCode.AGENT_ERROR,
            f"The model sent nothing for {self.model_timeout:g} s, so the run was stopped; "
            "try again.",
        )

    def _keep_streamed_text(
        self, run: Run, event: AdkEvent, out: list[p.Event], rides: bool
    ) -> Commit | None:
        """Stores the text so far of a streamed message; returns the commit its chunk awaits
        (``rides``: the chunk goes out ahead of it)."""
        if not event.partial:
            if run.streaming is not None and event.id == run.streaming.id:
                run.streaming = None  # ADK stored the whole message in its place
            return None
        if not any(isinstance(e, p.TextMessageContent) for e in out):
            return None
        run.streaming = event
        return self._save_streamed_text(run, event, rides)

    def _save_streamed_text(self, run: Run, event: AdkEvent, rides: bool) -> Commit | None:
        return self.engine.save_streamed_text(
            user_id=run.thread.user_id,
            thread_id=run.thread.thread_id,
            invocation_id=event.invocation_id,
            message_id=event.id,
            author=event.author,
            text=run.translator.text_so_far(event.id),
            rides=rides,
        )

    async def _keep_cut_off_reply(self, run: Run, ending: Ending) -> None:
        """Stores the text so far of the message the run was streaming as its reply, marked
        with how the run ended; the write that stores it drops the streamed text.

        Awaited before the run's last event goes out, so a client that reloads on it finds
        the reply. Should the write fail, the streamed text stays for the restart to close.
        """
        chunk, run.streaming = run.streaming, None
        if chunk is None:
            return
        reply = cut_off_reply(
            message_id=chunk.id,
            invocation_id=chunk.invocation_id,
            author=chunk.author,
            text=run.translator.text_so_far(chunk.id),
            ending=ending,
            # What the final event would have carried: the run's id, the sub-agent's mark.
            metadata=dict(event_metadata(chunk)),
        )
        try:
            session = await self.engine.session(run.thread.user_id, run.thread.thread_id)
            if session is not None:
                # run.last_event_id stays: a reattach that reads the reply waits for the
                # run's end instead of being sent it twice (in the snapshot and re-opened).
                await self.engine.append(session, reply)
        except (StoreError, StaleSessionError) as error:
            log.warning("%s: its %s reply was not stored: %s", run, ending.value, error)

    async def _close_cut_off(self, run: Run) -> None:
        """The worker process running the run died (docs/multicore.md): its invocation is
        closed as a restart closes a run a crash cut off, streamed text included, and
        what the close leaves to do (the model to ask again for the reply it owed, a
        person's answer to resume) is the thread's next run, as after a restart."""
        run.streaming = None  # the close keeps the streamed text as the cut-off reply
        # The gateway's own run, cut off in turn: the thread goes on with the same again.
        finishing = Finishing(run.run_id, run.finishing) if run.finishing is not None else None
        try:
            unfinished = await self.engine.close_cut_off(run.thread.thread_id, finishing)
        except (StoreError, QuarantinedThreadError) as error:
            log.warning("%s: the run its worker cut off stays open: %s", run, error)
            return
        if unfinished is None or unfinished.afterwards is Afterwards.NOTHING:
            return
        log.warning(
            "%s: cut off with its worker; the thread goes on (%s) once it has ended",
            run,
            unfinished.afterwards.value,
        )
        run.left = unfinished
        # The thread's lease passes to the run that goes on (``Hub.ended``), not let go of
        # when the RUN_ERROR is logged: no input elsewhere slips in between.
        run.release = None

    async def _seal(self, run: Run) -> None:
        """Answers calls a cancel left open, so the next turn starts from a whole history."""
        session = await self.engine.session(run.thread.user_id, run.thread.thread_id)
        if session is None:
            return
        answered = answered_calls(session)
        dangling: dict[str, OpenCall] = {}
        for event in session.events:
            if event.invocation_id and event_metadata(event).get("runId") == run.run_id:
                for call in event.get_function_calls():
                    if call.id and call.id not in answered:
                        dangling[call.id] = OpenCall(
                            call.id, call.name or "", event.invocation_id, event.timestamp, {}
                        )
        if dangling:
            stopped = {"status": "cancelled", "reason": "the user stopped the run"}
            responses = {call_id: stopped for call_id in dangling}
            invocation_id = next(iter(dangling.values())).invocation_id
            await self.engine.append(
                session,
                AdkEvent(
                    author="user",
                    invocation_id=invocation_id,
                    content=function_responses(dangling, responses),
                ),
            )


class ModelStalled(Exception):
    """A model call of the run sent nothing for ``GATEWAY_MODEL_TIMEOUT``; the run stopped."""

    def __init__(self, stall: Stall) -> None:
        super().__init__(f"{stall.model} sent nothing for {stall.seconds:.0f} s")
        self.stall = stall


def _model_failed(run: Run, failed: FailedCall) -> p.GatewayError:
    """A provider's failure a user will meet: one log line, and the sentence for the client."""
    log.warning("%s: %s failed: %s", run, failed.model, failed.failure.detail)
    return p.GatewayError(failed.failure.code, failed.failure.sentence)


def _streamed_text(event: AdkEvent, events: list[p.Event]) -> bool:
    """Whether ``events`` are only the text of a streamed chunk, which may go out ahead of
    its commit (``gateway.hub.outbox``); anything else with it waits, as it always did.

    Whether its text so far was saved does not count: an in-memory store saves none
    (``Engine.save_streamed_text``), and its chunks then waited for their frames' commit,
    the group commit's linger included, where a file's went ahead (0.15-0.2 ms a chunk)."""
    return (
        bool(event.partial)
        and any(isinstance(e, p.TextMessageContent) for e in events)
        and all(isinstance(e, p.TextMessageStart | p.TextMessageContent) for e in events)
    )


def _first_text(run_id: str, events: list[p.Event]) -> bool:
    """Marks the run's first text, if ``events`` hold it (``timeline``); whether they did."""
    for event in events:
        if isinstance(event, p.TextMessageContent):
            timeline.text(run_id, event.message_id)
            return True
    return False


def _waited(plan: Plan) -> list[tuple[str, str, float]]:
    """The browser's calls this run's results answer, as their waits are traced."""
    asked = open_calls(plan.session)
    answered = (asked.get(result.tool_call_id) for result in plan.results)
    return [(call.name, call.call_id, call.asked_at) for call in answered if call is not None]


def _said(turn: NewTurn) -> list[p.Event]:
    return [
        p.TextMessageStart(message_id=turn.message_id, role="user"),
        p.TextMessageContent(message_id=turn.message_id, delta=turn.text),
        p.TextMessageEnd(message_id=turn.message_id),
    ]


def _pressed(turn: NewTurn) -> p.ActivitySnapshot:
    assert turn.action is not None
    return p.ActivitySnapshot(
        message_id=turn.message_id,
        activity_type=ACTION_ACTIVITY,
        content=action_content(msgspec.to_builtins(turn.action)),
        replace=True,
    )


async def _stored(commits: list[Commit]) -> None:
    """Waits for the commit of the run's input, if it is not known to be done; raises the
    store's error if it failed, which ends the run as a failure of the store does."""
    while commits:
        # Shielded: a cancelled run stops waiting, the commit goes on.
        await asyncio.shield(commits[-1])
        commits.pop()


async def _settle(task: asyncio.Future[Any]) -> None:
    try:
        await task
    except (asyncio.CancelledError, StopAsyncIteration):
        pass
    except Exception:
        log.exception("a cancelled run failed while stopping")
