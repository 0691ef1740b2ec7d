"""ADK events in, AG-UI events out: one stateful translator per run, with no I/O.

Rules of the stream this produces (AG-UI 1.0):

- ``RUN_STARTED`` first; then text messages and tool calls, never interleaved: a text
  message is ended before a tool call starts; nothing follows ``RUN_FINISHED`` or
  ``RUN_ERROR``.
- Streamed model text (ADK partial events) becomes TEXT_MESSAGE_START / CONTENT, and the
  final aggregated event only ends it: its text is not sent again.
- Tool calls are taken from ADK's final (saved) model event, never from streamed previews,
  so the id a client sees is the id stored in the session.

Ids, shared with ``gateway.history`` so snapshots repeat what was streamed live:
an assistant message's id is its ADK event id; a tool call's id is ADK's function call id;
a server tool's result message is ``"tr-" + tool call id``.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable
from typing import Any

from google.adk.events import Event as AdkEvent

from gateway import protocol as p

# ADK's own long-running call that asks a person to approve another call.
CONFIRMATION_CALL = "adk_request_confirmation"
# ADK marks the events that seal a cancelled invocation with this error code.
ABORTED = "INVOCATION_ABORTED"

InterruptFor = Callable[[str, dict[str, Any], float], p.Interrupt]


def result_message_id(tool_call_id: str) -> str:
    return "tr-" + tool_call_id


def dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class Phase(enum.IntEnum):
    NEW = 0
    STARTED = 1
    ENDED = 2


class RunTranslator:
    """Turns the ADK events of one run into a valid AG-UI event stream."""

    def __init__(
        self, thread_id: str, run_id: str, interrupt_for: InterruptFor | None = None
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.phase = Phase.NEW
        self.open_text_id: str | None = None
        self.open_text: list[str] = []
        # Long-running (client) calls made in this run that have no response yet.
        self.pending: dict[str, str] = {}
        # Every client call streamed in this run: their live events go to the executor only.
        self.client_calls: set[str] = set()
        # The live events of client calls, sent when the run ends and they are still open.
        self.held: dict[str, list[p.Event]] = {}
        # Approvals asked in this run, turned into AG-UI Interrupts by ``interrupt_for``.
        self.interrupts: list[p.Interrupt] = []
        self._interrupt_for = interrupt_for

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
        out: list[p.Event] = []
        if event.error_code == ABORTED:
            return out
        if event.error_code or event.error_message:
            raise AgentFailure(f"{event.error_code or 'model error'}: {event.error_message or ''}")
        if event.author == "user" or event.content is None or not event.content.parts:
            out.extend(self._state_delta(event))
            return out
        parts = event.content.parts
        text = "".join(part.text for part in parts if part.text and not part.thought)
        if event.partial:
            if text:
                out.extend(self._text(event.id, text))
            return out
        if text:
            if self.open_text_id != event.id:
                out.extend(self._text(event.id, text))
            out.extend(self._end_text())
        long_running = event.long_running_tool_ids or set()
        for part in parts:
            call = part.function_call
            if call is None:
                continue
            call_id = call.id or ""
            if call.name == CONFIRMATION_CALL:
                self._ask_approval(call_id, dict(call.args or {}), event.timestamp)
                continue
            out.extend(self._end_text())
            streamed: list[p.Event] = [
                p.ToolCallStart(
                    tool_call_id=call_id,
                    tool_call_name=call.name or "",
                    parent_message_id=event.id,
                ),
                p.ToolCallArgs(tool_call_id=call_id, delta=dump_json(call.args or {})),
                p.ToolCallEnd(tool_call_id=call_id),
            ]
            if call_id in long_running:
                # Held until the run ends: a call the server's policy refuses in the
                # meantime never reaches the browser.
                self.held[call_id] = streamed
                self.pending[call_id] = call.name or ""
                self.client_calls.add(call_id)
            else:
                out.extend(streamed)
        # ADK answers a call that waits for approval with a placeholder; the real result
        # comes once the person has answered.
        awaiting_approval = event.actions.requested_tool_confirmations if event.actions else {}
        for part in parts:
            response = part.function_response
            if response is None or response.id is None or response.id in awaiting_approval:
                continue
            self.pending.pop(response.id, None)
            if self.held.pop(response.id, None) is not None:
                # Refused before the browser saw it; the model explains the refusal.
                continue
            out.extend(self._end_text())
            out.append(
                p.ToolCallResult(
                    message_id=result_message_id(response.id),
                    tool_call_id=response.id,
                    content=dump_json(response.response or {}),
                    role="tool",
                )
            )
        out.extend(self._state_delta(event))
        return out

    def finish(self) -> list[p.Event]:
        """Ends the run; client calls still unanswered are sent and listed as pending."""
        out = self._close() + self._release_held()
        outcome = p.SuccessOutcome(pending_tool_call_ids=list(self.pending) or None)
        out.append(p.RunFinished(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome))
        return out

    def cancelled(self) -> list[p.Event]:
        out = self._close()
        out.append(
            p.RunFinished(
                thread_id=self.thread_id, run_id=self.run_id, outcome=p.CancelledOutcome()
            )
        )
        return out

    def interrupted(self) -> list[p.Event]:
        """Ends the run waiting for the approvals it asked for."""
        out = self._close() + self._release_held()
        out.append(
            p.RunFinished(
                thread_id=self.thread_id,
                run_id=self.run_id,
                outcome=p.InterruptOutcome(interrupts=list(self.interrupts)),
            )
        )
        return out

    def reopen(self) -> list[p.Event]:
        """What a late subscriber needs to join mid-message: the open text so far."""
        if self.open_text_id is None:
            return []
        return [
            p.TextMessageStart(message_id=self.open_text_id, role="assistant"),
            p.TextMessageContent(message_id=self.open_text_id, delta="".join(self.open_text)),
        ]

    def fail(self, code: p.ErrorCode, message: str) -> list[p.Event]:
        """Ends the run with RUN_ERROR, closing any open text first."""
        out = self._close() if self.phase is Phase.STARTED else []
        self.phase = Phase.ENDED
        out.append(p.RunError(message=message, code=code.value))
        return out

    # --- internals -----------------------------------------------------------------------

    def _ask_approval(self, call_id: str, args: dict[str, Any], asked_at: float) -> None:
        if self._interrupt_for is None:
            raise AgentFailure("the agent asked for an approval, but this run cannot take one")
        self.interrupts.append(self._interrupt_for(call_id, args, asked_at))

    def _text(self, message_id: str, delta: str) -> Iterable[p.Event]:
        if self.open_text_id != message_id:
            yield from self._end_text()
            self.open_text_id = message_id
            yield p.TextMessageStart(message_id=message_id, role="assistant")
        self.open_text.append(delta)
        yield p.TextMessageContent(message_id=message_id, delta=delta)

    def _end_text(self) -> list[p.Event]:
        if self.open_text_id is None:
            return []
        message_id, self.open_text_id = self.open_text_id, None
        self.open_text = []
        return [p.TextMessageEnd(message_id=message_id)]

    def _release_held(self) -> list[p.Event]:
        held = [event for events in self.held.values() for event in events]
        self.held.clear()
        return held

    def _close(self) -> list[p.Event]:
        self._expect(Phase.STARTED)
        self.phase = Phase.ENDED
        return self._end_text()

    def _state_delta(self, event: AdkEvent) -> list[p.Event]:
        delta = event.actions.state_delta if event.actions else None
        if not delta:
            return []
        patch = [
            {"op": "add", "path": "/" + key.replace("~", "~0").replace("/", "~1"), "value": value}
            for key, value in delta.items()
            if not key.startswith("temp:")
        ]
        return [p.StateDelta(delta=patch)] if patch else []

    def _expect(self, phase: Phase) -> None:
        if self.phase is not phase:
            raise RuntimeError(f"run {self.run_id} is {self.phase.name}, expected {phase.name}")


class AgentFailure(Exception):
    """The model or a tool failed; the run ends with RUN_ERROR code AGENT_ERROR."""
