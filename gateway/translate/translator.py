"""ADK events in, AG-UI events out: one stateful translator per run, with no I/O.

Rules of the stream this produces (AG-UI 1.0):

- ``RUN_STARTED`` first; nothing follows ``RUN_FINISHED`` or ``RUN_ERROR``. At most one
  text or reasoning message is open at a time, and none while a tool call streams
  (``gateway.translate.streaming``: parallel agents' chunks reopen their own message).
- Streamed model text and thoughts (ADK partial events) become TEXT_MESSAGE_* and
  REASONING_*; the final aggregated event only ends them: its text is not sent again.
- Tool calls are taken from ADK's final (saved) model event, never from streamed previews,
  so the id a client sees is the id stored in the session. A browser tool's call goes to
  the client that executes it and, if still open, to everyone as the run ends; an agent's
  own long-running tool streams as any server tool does, with its interim result, and like
  a browser call is listed in the outcome's ``pendingToolCallIds`` until its final result.
- Which agent speaks: every assistant message names its ADK agent (``name``), and what a
  sub-agent says carries its ``subagentRunId``, announced by SUBAGENT_STARTED
  (``gateway.translate.subagents``, from the marks of ``gateway.translate.attribution``).
- State changes become STATE_DELTA (RFC 6902 ``add``), ``temp:`` keys left out; the
  run's token usage (``gateway.adk.usage``) rides on its last event.
- A tool with predictive state (``gateway.translate.predictions``) has its first call of
  the run preceded by CUSTOM ``PredictState``, so the client reads the call's arguments
  into its state as they come.

Ids, shared with ``translate.history`` so snapshots repeat what was streamed live:
an assistant message's id is its ADK event id, its thoughts' ``"rs-" + event id``; a tool
call's id is ADK's function call id; a server tool's result message is ``"tr-" + call id``,
and what it showed of an A2UI surface follows it as ACTIVITY_SNAPSHOT
``a2ui-surface-{surfaceId}-{call id}``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from google.adk.events import Event as AdkEvent
from google.adk.sessions.state import State

from gateway import wire as p
from gateway.a2ui import SURFACE_ACTIVITY
from gateway.a2ui.plugin import shown_surfaces
from gateway.store.cut_off import Ending
from gateway.tools.long_running import interim_results, server_calls
from gateway.translate.attribution import mark_of
from gateway.translate.predictions import Prediction, by_tool, predict_state_event
from gateway.translate.streaming import Kind, StreamedMessages, reasoning_message_id
from gateway.translate.subagents import Subagents
from gateway.translate.tool_results import dump_json, result_content

__all__ = [
    "ABORTED",
    "CONFIRMATION_CALL",
    "AgentFailure",
    "Phase",
    "RunTranslator",
    "dump_json",
    "result_message_id",
    "shown_state",
    "state_patch",
]

# ADK's own long-running call that asks a person to approve another call.
CONFIRMATION_CALL = "adk_request_confirmation"
# ADK marks the events that seal a cancelled invocation with this error code.
ABORTED = "INVOCATION_ABORTED"

InterruptFor = Callable[[str, dict[str, Any], float], p.Interrupt]
# The run's token usage so far, taken once, as the run ends.
UsageOf = Callable[[], list[p.TokenUsage] | None]


def result_message_id(tool_call_id: str) -> str:
    return "tr-" + tool_call_id


def shown_state(key: str) -> bool:
    """Whether a state key reaches clients: every scope but ``temp:``, which never leaves."""
    return not key.startswith(State.TEMP_PREFIX)


def state_patch(delta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An ADK state delta as RFC 6902 operations on the state object, ``temp:`` left out."""
    return [
        {"op": "add", "path": "/" + key.replace("~", "~0").replace("/", "~1"), "value": value}
        for key, value in delta.items()
        if shown_state(key)
    ]


class Phase(enum.IntEnum):
    NEW = 0
    STARTED = 1
    ENDED = 2


class RunTranslator:
    """Turns the ADK events of one run into a valid AG-UI event stream."""

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        interrupt_for: InterruptFor | None = None,
        *,
        subagents: Subagents | None = None,
        usage: UsageOf | None = None,
        predictions: Sequence[Prediction] = (),
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.phase = Phase.NEW
        self.messages = StreamedMessages()
        self.subagents = subagents or Subagents()
        # Long-running calls made in this run that have no (final) response yet: browser
        # calls, and the agent's own long-running tools (``gateway.tools.long_running``).
        self.pending: dict[str, str] = {}
        # Every client call streamed in this run: their live events go to the executor only.
        self.client_calls: set[str] = set()
        # The live events of client calls, sent when the run ends and they are still open.
        self.held: dict[str, list[p.Event]] = {}
        # Approvals asked in this run, turned into AG-UI Interrupts by ``interrupt_for``.
        self.interrupts: list[p.Interrupt] = []
        self._interrupt_for = interrupt_for
        self._usage = usage
        # Tools with predictive state whose PredictState this run has yet to send.
        self._unpredicted = by_tool(predictions)
        # What streams messages beside this translator (a live turn's transcripts,
        # ``gateway.translate.live``): its unfinished ones, for a late subscriber.
        self.beside: Callable[[], list[p.Event]] | None = None

    def start(self) -> list[p.Event]:
        self._expect(Phase.NEW)
        self.phase = Phase.STARTED
        return [
            p.RunStarted(
                thread_id=self.thread_id, run_id=self.run_id, protocol_version=p.PROTOCOL_VERSION
            )
        ]

    def translate(self, event: AdkEvent) -> list[p.Event]:
        self._expect(Phase.STARTED)
        if event.error_code == ABORTED:
            return []
        if event.error_code or event.error_message:
            raise AgentFailure(
                f"{event.error_code or 'model error'}: {event.error_message or ''}",
                event.error_code,
            )
        owner, out = self.subagents.enter(mark_of(event), event.author)
        if event.author != "user" and event.content is not None and event.content.parts:
            out += self._streamed(event, owner) if event.partial else self._final(event, owner)
        out += self._state_delta(event, owner)
        if event.actions and event.actions.end_of_agent:
            out += self.subagents.leave(owner)
        return out

    def finish(self) -> list[p.Event]:
        """Ends the run; client calls still unanswered are sent and listed as pending."""
        out = self._close(waiting=bool(self.pending))
        outcome = p.SuccessOutcome(pending_tool_call_ids=list(self.pending) or None)
        out.append(self._finished(outcome))
        return out

    def cancelled(self) -> list[p.Event]:
        out = self._close(cancelled=True)
        out.append(self._finished(p.CancelledOutcome()))
        return out

    def interrupted(self) -> list[p.Event]:
        """Ends the run waiting for the approvals it asked for."""
        out = self._close(waiting=True)
        out.append(self._finished(p.InterruptOutcome(interrupts=list(self.interrupts))))
        return out

    def reopen(self) -> list[p.Event]:
        """What a late subscriber needs to join mid-run: the sub-agents speaking and every
        message not yet complete, as it stands."""
        beside = self.beside() if self.beside is not None else []
        return self.subagents.replay() + self.messages.replay() + beside

    def text_so_far(self, message_id: str) -> str:
        """The text streamed so far of a message not yet complete, for the store."""
        return self.messages.text_so_far(message_id)

    def fail(self, code: p.ErrorCode, message: str) -> list[p.Event]:
        """Ends the run with RUN_ERROR, closing any open message first."""
        out = self.messages.close() if self.phase is Phase.STARTED else []
        self.phase = Phase.ENDED
        out.append(p.RunError(message=message, code=code.value, usage=self._taken_usage()))
        return out

    # --- internals -----------------------------------------------------------------------

    def _streamed(self, event: AdkEvent, owner: str | None) -> list[p.Event]:
        """A chunk of a model's reply: its thoughts and its text, in the order they came."""
        out: list[p.Event] = []
        for part in event.content.parts if event.content and event.content.parts else ():
            if part.text:
                out += self._chunk(event, part.thought, part.text, owner)
        return out

    def _final(self, event: AdkEvent, owner: str | None) -> list[p.Event]:
        parts = event.content.parts if event.content and event.content.parts else []
        out: list[p.Event] = []
        # The thoughts and text of the event, sent whole unless they were streamed.
        for kind, thought in ((Kind.REASONING, True), (Kind.TEXT, False)):
            message_id = _message_id(kind, event.id)
            text = "".join(
                part.text for part in parts if part.text and bool(part.thought) is thought
            )
            if text and not self.messages.was_sent(message_id):
                out += self._chunk(event, thought, text, owner)
            out += self.messages.finish(message_id)
        long_running = event.long_running_tool_ids or set()
        own = server_calls(event)
        for part in parts:
            call = part.function_call
            if call is None:
                continue
            call_id = call.id or ""
            if call.name == CONFIRMATION_CALL:
                self._ask_approval(call_id, dict(call.args or {}), event.timestamp, owner)
                continue
            out += self.messages.close()
            predicted = self._unpredicted.pop(call.name or "", None)
            streamed: list[p.Event] = [predict_state_event(predicted)] if predicted else []
            streamed += [
                p.ToolCallStart(
                    tool_call_id=call_id,
                    tool_call_name=call.name or "",
                    parent_message_id=event.id,
                    subagent_run_id=owner,
                ),
                p.ToolCallArgs(tool_call_id=call_id, delta=dump_json(call.args or {})),
                p.ToolCallEnd(tool_call_id=call_id),
            ]
            if call_id in long_running and call_id not in own:
                # Held until the run ends: a call the server's policy refuses in the
                # meantime never reaches the browser.
                self.held[call_id] = streamed
                self.pending[call_id] = call.name or ""
                self.client_calls.add(call_id)
                continue
            # The agent's own long-running call is everyone's to see, and waits for its
            # final result unless ADK answers it at once.
            if call_id in own:
                self.pending[call_id] = call.name or ""
            out += streamed
            out += self.subagents.tool_call(call_id, call.name or "", event.id, owner)
        # ADK answers a call that waits for approval with a placeholder; the real result
        # comes once the person has answered.
        awaiting_approval = event.actions.requested_tool_confirmations if event.actions else {}
        shown = shown_surfaces(event)
        interim = interim_results(event)
        for part in parts:
            response = part.function_response
            if response is None or response.id is None or response.id in awaiting_approval:
                continue
            if response.id not in interim:  # an interim result leaves its call waiting
                self.pending.pop(response.id, None)
            if self.held.pop(response.id, None) is not None:
                # Refused before the browser saw it; the model explains the refusal.
                continue
            out += self.messages.close()
            out += self.subagents.tool_result(response.id)
            out.append(
                p.ToolCallResult(
                    message_id=result_message_id(response.id),
                    tool_call_id=response.id,
                    content=result_content(response),
                    role="tool",
                    subagent_run_id=owner,
                )
            )
            out += [
                p.ActivitySnapshot(
                    message_id=surface.message_id,
                    activity_type=SURFACE_ACTIVITY,
                    content=surface.content,
                    replace=True,
                    subagent_run_id=owner,
                )
                for surface in shown
                if surface.tool_call_id == response.id
            ]
        return out

    def _chunk(
        self, event: AdkEvent, thought: bool | None, text: str, owner: str | None
    ) -> list[p.Event]:
        kind = Kind.REASONING if thought else Kind.TEXT
        return self.messages.add(
            kind,
            _message_id(kind, event.id),
            text,
            owner=owner,
            name=event.author if kind is Kind.TEXT else None,
        )

    def _ask_approval(
        self, call_id: str, args: dict[str, Any], asked_at: float, owner: str | None
    ) -> None:
        if self._interrupt_for is None:
            raise AgentFailure("the agent asked for an approval, but this run cannot take one")
        interrupt = self._interrupt_for(call_id, args, asked_at)
        interrupt.subagent_run_id = owner
        self.subagents.interrupted(owner, interrupt.id)
        self.interrupts.append(interrupt)

    def _release_held(self) -> list[p.Event]:
        held = [event for events in self.held.values() for event in events]
        self.held.clear()
        return held

    def _close(self, *, waiting: bool = False, cancelled: bool = False) -> list[p.Event]:
        """Ends what is open as the run ends: the calls held back go out (unless it was
        cancelled) before the sub-agents that made them are closed."""
        self._expect(Phase.STARTED)
        self.phase = Phase.ENDED
        held = [] if cancelled else self._release_held()
        closed = self.subagents.close(waiting=waiting, cancelled=cancelled)
        ending = self.messages.close()
        if cancelled:
            # The reply a Stop cut shows its mark live, as the store keeps it (cut_off): a
            # 1.0 client merges an END's metadata into the message it closes.
            for event in ending:
                if isinstance(event, p.TextMessageEnd):
                    event.metadata = {**(event.metadata or {}), "ended": Ending.STOPPED.value}
        return ending + held + closed

    def _finished(self, outcome: p.Outcome) -> p.RunFinished:
        return p.RunFinished(
            thread_id=self.thread_id, run_id=self.run_id, outcome=outcome, usage=self._taken_usage()
        )

    def _taken_usage(self) -> list[p.TokenUsage] | None:
        return self._usage() if self._usage else None

    def _state_delta(self, event: AdkEvent, owner: str | None) -> list[p.Event]:
        delta = event.actions.state_delta if event.actions else None
        patch = state_patch(delta) if delta else []
        return [p.StateDelta(delta=patch, subagent_run_id=owner)] if patch else []

    def _expect(self, phase: Phase) -> None:
        if self.phase is not phase:
            raise RuntimeError(f"run {self.run_id} is {self.phase.name}, expected {phase.name}")


def _message_id(kind: Kind, event_id: str) -> str:
    return event_id if kind is Kind.TEXT else reasoning_message_id(event_id)


class AgentFailure(Exception):
    """The model or a tool failed; the run ends with RUN_ERROR code AGENT_ERROR."""

    def __init__(self, message: str, error_code: str | None = None) -> None:
        super().__init__(message)
        # The ADK event's error code, when an event said so.
        self.error_code = error_code
