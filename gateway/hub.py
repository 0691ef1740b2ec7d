"""Threads and runs: one active run per thread, client-tool pauses, cancel, fan-out.

Theory of operation. A thread is an ADK session. Its life is one table:

    IDLE              --user message-->        RUNNING
    RUNNING           --run ends, no calls-->  IDLE
    RUNNING           --run ends, calls open-> AWAITING_CLIENT
    RUNNING           --cancel or failure-->   IDLE
    AWAITING_CLIENT   --every call answered--> RUNNING   (the paused invocation resumes)
    AWAITING_CLIENT   --some calls answered--> AWAITING_CLIENT
    AWAITING_CLIENT   --user message-->        RUNNING   (open calls closed as superseded)

Only RUNNING lives in memory (``Hub.active``); whether a thread awaits the client is read
from its stored events, so it survives a restart. A run's events go to its subscribers:
the connection that started it first. Subscribers must not block: ``deliver`` queues.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
import logging
import time
from collections.abc import Callable, Iterable
from contextlib import aclosing
from typing import Protocol

from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session
from google.genai import types

from gateway import protocol as p
from gateway.runner import Engine
from gateway.translate import AgentFailure, RunTranslator

log = logging.getLogger(__name__)

NOTICE = "gateway.notice"


class ThreadState(enum.Enum):
    IDLE = "idle"
    RUNNING = "running"
    AWAITING_CLIENT = "awaiting_client"


class Subscriber(Protocol):
    def deliver(self, event: p.Event) -> None: ...


@dataclasses.dataclass(frozen=True)
class PendingCall:
    call_id: str
    name: str
    invocation_id: str


@dataclasses.dataclass
class Run:
    thread_id: str
    run_id: str
    user_id: str
    subscribers: list[Subscriber]
    abort: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    done: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def emit(self, events: Iterable[p.Event]) -> None:
        for event in events:
            for subscriber in self.subscribers:
                subscriber.deliver(event)


# --- what an input asks for ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NewTurn:
    message_id: str
    text: str


@dataclasses.dataclass(frozen=True)
class Answers:
    answers: dict[str, p.ToolMessage]
    ignored: list[str]


def pending_calls(session: Session | None) -> dict[str, PendingCall]:
    """Client-tool calls in the thread that have no response yet, in call order."""
    pending: dict[str, PendingCall] = {}
    for event in session.events if session else ():
        for call in event.get_function_calls():
            if call.id and call.id in (event.long_running_tool_ids or ()):
                pending[call.id] = PendingCall(call.id, call.name or "", event.invocation_id)
        for response in event.get_function_responses():
            if response.id:
                pending.pop(response.id, None)
    return pending


def answered_calls(session: Session | None) -> set[str]:
    return {
        response.id
        for event in (session.events if session else ())
        for response in event.get_function_responses()
        if response.id
    }


def read_input(
    run_input: p.RunAgentInput, pending: dict[str, PendingCall], answered: set[str]
) -> NewTurn | Answers:
    """Finds what is new in an input: the user's message, or results for open calls.

    AG-UI clients resend the whole conversation; the thread's store is the truth, so only
    the trailing user message or the trailing run of tool messages is read.
    """
    if not run_input.messages:
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            "RunAgentInput.messages is empty: send the user's message or a tool result.",
        )
    last = run_input.messages[-1]
    if isinstance(last, p.UserMessage):
        return NewTurn(message_id=last.id, text=_text_of(last.content))
    if not isinstance(last, p.ToolMessage):
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"The last message (id {last.id!r}) must be a user message or a tool result.",
        )
    trailing: list[p.ToolMessage] = []
    for message in reversed(run_input.messages):
        if not isinstance(message, p.ToolMessage):
            break
        trailing.insert(0, message)
    answers: dict[str, p.ToolMessage] = {}
    ignored: list[str] = []
    for message in trailing:
        if message.tool_call_id in pending:
            answers[message.tool_call_id] = message
        elif message.tool_call_id in answered:
            ignored.append(message.tool_call_id)
        else:
            raise p.GatewayError(
                p.ErrorCode.VALIDATION_ERROR,
                f"Tool message {message.id!r}: toolCallId {message.tool_call_id!r} is not a "
                f"tool call waiting for a result on thread {run_input.thread_id!r}.",
            )
    return Answers(answers=answers, ignored=ignored)


def _text_of(content: p.Content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if isinstance(part, p.TextPart))


def tool_response(message: p.ToolMessage) -> dict[str, object]:
    """The browser's account, verbatim: its JSON object, or its text under ``result``."""
    text = _text_of(message.content)
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = text
    response = value if isinstance(value, dict) else {"result": value}
    if message.error:
        response = {**response, "error": message.error}
    return response


# --- the hub -------------------------------------------------------------------------------


class Hub:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.active: dict[str, Run] = {}
        # Answers that arrived before the rest of their batch: thread -> call id -> message.
        self.early_answers: dict[str, dict[str, p.ToolMessage]] = {}
        self.status_listeners: list[Callable[[bool], None]] = []

    @property
    def busy(self) -> bool:
        return bool(self.active)

    def state(self, thread_id: str) -> ThreadState:
        return ThreadState.RUNNING if thread_id in self.active else ThreadState.IDLE

    async def start(self, user_id: str, run_input: p.RunAgentInput, subscriber: Subscriber) -> Run:
        """Claims the thread and starts the run; raises GatewayError before any event."""
        thread_id = run_input.thread_id
        if thread_id in self.active:
            raise p.GatewayError(
                p.ErrorCode.SESSION_BUSY,
                f"Thread {thread_id!r} already has a run in progress; wait for it to finish "
                "or cancel it.",
            )
        run = Run(thread_id, run_input.run_id, user_id, [subscriber])
        self._claim(run)
        try:
            message, metadata, notices = await self._prepare(run, run_input)
        except BaseException:
            self._release(run)
            raise
        client_tools = frozenset(
            tool.name for tool in run_input.tools if tool.name in self.engine.catalog
        )
        run.task = asyncio.create_task(
            self._drive(run, message, metadata, client_tools, notices),
            name=f"run {thread_id}/{run.run_id}",
        )
        return run

    async def cancel(self, user_id: str, thread_id: str) -> bool:
        """Stops the thread's run; False when there was nothing to stop."""
        run = self.active.get(thread_id)
        if run is None or run.user_id != user_id:
            return False
        run.abort.set()
        return True

    # --- internals -----------------------------------------------------------------------

    async def _prepare(
        self, run: Run, run_input: p.RunAgentInput
    ) -> tuple[types.Content | None, dict[str, object], list[p.Event]]:
        session = await self.engine.session(run.user_id, run.thread_id)
        pending = pending_calls(session)
        request = read_input(run_input, pending, answered_calls(session))
        metadata: dict[str, object] = {"runId": run.run_id}
        notices: list[p.Event] = []
        if isinstance(request, NewTurn):
            if pending and session is not None:
                await self._supersede(session, pending)
            self.early_answers.pop(run.thread_id, None)
            metadata["messageId"] = request.message_id
            content = types.Content(role="user", parts=[types.Part(text=request.text)])
            return content, metadata, notices
        for call_id in request.ignored:
            notices.append(
                _notice(
                    "TOOL_RESULT_IGNORED",
                    f"Tool call {call_id!r} was already answered; this result was ignored.",
                )
            )
        answers = {**self.early_answers.get(run.thread_id, {}), **request.answers}
        if not answers:
            return None, metadata, notices
        if any(call_id not in answers for call_id in pending):
            self.early_answers[run.thread_id] = answers
            return None, metadata, notices
        self.early_answers.pop(run.thread_id, None)
        # Responses go in call order: the model pairs them with its calls by position.
        parts = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=call.call_id, name=call.name, response=tool_response(answers[call.call_id])
                )
            )
            for call in pending.values()
        ]
        metadata["toolMessageIds"] = {call_id: m.id for call_id, m in answers.items()}
        return types.Content(role="user", parts=parts), metadata, notices

    async def _supersede(self, session: Session, pending: dict[str, PendingCall]) -> None:
        """Closes open client calls so a new user message starts from a consistent thread."""
        by_invocation: dict[str, list[PendingCall]] = {}
        for call in pending.values():
            by_invocation.setdefault(call.invocation_id, []).append(call)
        for invocation_id, calls in by_invocation.items():
            parts = [
                types.Part(
                    function_response=types.FunctionResponse(
                        id=call.call_id,
                        name=call.name,
                        response={"status": "no_result", "reason": "superseded"},
                    )
                )
                for call in calls
            ]
            event = AdkEvent(
                author="user",
                invocation_id=invocation_id,
                content=types.Content(role="user", parts=parts),
            )
            await self.engine.append(session, event)

    async def _drive(
        self,
        run: Run,
        message: types.Content | None,
        metadata: dict[str, object],
        client_tools: frozenset[str],
        notices: list[p.Event],
    ) -> None:
        translator = RunTranslator(run.thread_id, run.run_id)
        run.emit(translator.start())
        run.emit(notices)
        started = time.perf_counter()
        try:
            if message is not None:
                events = self.engine.run(
                    user_id=run.user_id,
                    thread_id=run.thread_id,
                    message=message,
                    metadata=metadata,
                    client_tools=client_tools,
                    abort_signal=run.abort,
                )
                async with aclosing(events):
                    async for event in events:
                        run.emit(translator.translate(event))
                        if run.abort.is_set():
                            break
            else:
                # Nothing to resume yet: the run reports what the thread still waits for.
                translator.pending.update(
                    (call_id, "") for call_id in await self._still_pending(run)
                )
            if run.abort.is_set():
                run.emit(translator.cancelled())
            else:
                run.emit(translator.finish())
        except AgentFailure as exc:
            run.emit(translator.fail(p.ErrorCode.AGENT_ERROR, str(exc)))
        except Exception as exc:
            log.exception("run %s on thread %s failed", run.run_id, run.thread_id)
            run.emit(
                translator.fail(
                    p.ErrorCode.AGENT_ERROR, f"The agent failed: {type(exc).__name__}: {exc}"
                )
            )
        finally:
            log.info(
                "run %s on thread %s ended in %.0f ms",
                run.run_id,
                run.thread_id,
                (time.perf_counter() - started) * 1000,
            )
            self._release(run)

    async def _still_pending(self, run: Run) -> list[str]:
        session = await self.engine.session(run.user_id, run.thread_id)
        answered = self.early_answers.get(run.thread_id, {})
        return [call_id for call_id in pending_calls(session) if call_id not in answered]

    def _claim(self, run: Run) -> None:
        was_busy = self.busy
        self.active[run.thread_id] = run
        if not was_busy:
            self._status_changed()

    def _release(self, run: Run) -> None:
        if self.active.get(run.thread_id) is run:
            del self.active[run.thread_id]
        run.done.set()
        if not self.busy:
            self._status_changed()

    def _status_changed(self) -> None:
        for listener in self.status_listeners:
            listener(self.busy)


def _notice(code: str, message: str) -> p.Custom:
    return p.Custom(name=NOTICE, value={"code": code, "message": message})
