"""Planning a run: what an input brings to its thread, made the message for ADK.

Theory of operation. A door's input has claimed its thread and the thread is read; the
``Planner`` reads what the input brings that is new (``gateway.hub.inputs``) against what
the thread waits on (``gateway.hub.open_calls``) and returns a ``Plan``: the message for
ADK and the run's context. A new turn closes the calls it leaves unanswered as superseded
and becomes the user's message; answers to every open call become the function responses
that resume the paused invocation; answers to only some wait in the thread for the rest,
and the run then only reports what the thread still waits for (no message, nothing runs).
Each move is fired on the thread's table (``gateway.hub.states``), which refuses one it
does not hold, and the plan carries the state it leaves the thread in. What the input's
``state`` writes to the thread (``gateway.hub.client_state``) is read first, so a refused
edit stores nothing, and goes with the message for ADK to store.

The planner never calls back into the hub: it is given what it reads (the engine, the
declarations of client tools, the audit, the approval timeout, the context allow-list)
and writes only to the thread (its early answers) and the store (a superseded call's
response). Approvals become AG-UI Interrupts here too, for the translator and for a
reattach that shows an idle thread.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import time
from collections.abc import Mapping
from typing import Any

import msgspec
from google.adk.events import Event as AdkEvent
from google.adk.events.event_actions import EventActions
from google.adk.sessions import Session
from google.genai import types

from gateway import wire as p
from gateway.a2ui.actions import ACTION_KEY, check_action
from gateway.a2ui.catalogs import CAPABILITIES, ClientCatalogs, client_catalogs
from gateway.a2ui.surfaces import Surfaces
from gateway.adk import approvals
from gateway.adk.engine import Engine
from gateway.adk.resumability import tools_not_offered
from gateway.audit.log import AuditLog
from gateway.context import RUN_METADATA_KEY, allowed_context
from gateway.hub.client_state import DEFAULT_RULES, StateEdit, StateRules, read_edit
from gateway.hub.inputs import NewTurn, read_input
from gateway.hub.open_calls import OpenCall, answered_calls, open_calls
from gateway.hub.states import ThreadState, Trigger, thread_state, transition
from gateway.hub.threads import Run, Thread
from gateway.tools.client import ClientTool
from gateway.tools.declarations import DeclarationLog, declared_client_tools
from gateway.translate.translator import dump_json, result_message_id

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a run does: the message for ADK (None: nothing to resume yet) and its context."""

    message: types.Content | None
    metadata: dict[str, Any]
    client_tools: dict[str, ClientTool]
    # The thread as planning read it, handed to ADK; None: ADK reads it itself.
    session: Session | None
    # The thread's state once planned (``gateway.hub.states``): RUNNING when ``message``
    # runs the agent; else the state the thread stays in, as the run only reports it.
    thread_state: ThreadState
    notices: list[p.Event] = dataclasses.field(default_factory=list)
    # With nothing to resume: the browser calls still unanswered, by id, for the outcome.
    waiting: dict[str, str] = dataclasses.field(default_factory=dict)
    # The browser's results, for the thread's other connections.
    results: list[p.ToolCallResult] = dataclasses.field(default_factory=list)
    # The answers that closed the browser's calls a new message left unanswered, for every
    # connection: a page shows them live as a reload does.
    closed: list[p.ToolCallResult] = dataclasses.field(default_factory=list)
    # The user's message that starts the turn, for the thread's other connections.
    said: NewTurn | None = None
    # The thread's state, for a client that shares state: its deltas apply to this.
    state: p.StateSnapshot | None = None
    # What the client's state writes to the thread, stored with the message (empty: nothing).
    state_delta: dict[str, Any] = dataclasses.field(default_factory=dict)
    # What the client renders of A2UI (None: nothing), and the thread's surfaces if planning
    # read them (a press is checked against them); the run's tools show surfaces by these.
    catalogs: ClientCatalogs | None = None
    surfaces: Surfaces | None = None
    # The invocation to go on with, with no new message (a restart's: ``finish_cut_off``).
    resumes: str | None = None
    # What a branch move (``gateway.hub.branches``) has the run show first, after its
    # RUN_STARTED: to the thread's other connections only, then to every watcher; and the
    # run a fork's new version continues from (RUN_STARTED's parentRunId).
    observers_first: list[p.Event] = dataclasses.field(default_factory=list)
    shown_first: list[p.Event] = dataclasses.field(default_factory=list)
    parent_run_id: str | None = None

    @property
    def runs_agent(self) -> bool:
        return self.message is not None or self.resumes is not None

    def __post_init__(self) -> None:
        # A plan runs the agent exactly when it moves the thread into RUNNING.
        assert self.runs_agent == (self.thread_state is ThreadState.RUNNING)


class Planner:
    """Makes a run's plan from its input and its stored thread; see the module's docstring."""

    def __init__(
        self,
        engine: Engine,
        *,
        declarations: DeclarationLog,
        audit: AuditLog | None,
        approval_timeout: float,
        context_allow: frozenset[str],
        state_rules: StateRules = DEFAULT_RULES,
    ) -> None:
        self.engine = engine
        # Without a catalog, what each connection declares is logged, once and on a change.
        self.declarations = declarations
        self.audit = audit
        self.approval_timeout = approval_timeout
        self.context_allow = context_allow
        # What a client's RunAgentInput.state may write to its thread.
        self.state_rules = state_rules

    async def plan(self, run: Run, run_input: p.RunAgentInput, session: Session) -> Plan:
        edit = read_edit(run_input.state, session.state, self.state_rules)
        plan = await self._plan(run, run_input, session)
        if edit is None:
            return plan
        if edit.delta:
            log.info(
                "%s writes the client's state keys %s%s",
                run,
                ", ".join(sorted(edit.delta)),
                f" (ignored: {', '.join(edit.ignored)})" if edit.ignored else "",
            )
            if plan.message is None:
                await self._store_state(run, plan, edit, session)
        elif edit.ignored:
            log.info("%s ignores the client's state keys %s", run, ", ".join(edit.ignored))
        return dataclasses.replace(
            plan,
            state=p.StateSnapshot(snapshot=edit.snapshot),
            state_delta=edit.delta if plan.message is not None else {},
            notices=[*plan.notices, *edit.notices()],
        )

    async def _store_state(self, run: Run, plan: Plan, edit: StateEdit, session: Session) -> None:
        """Stores an edit when nothing runs: on an event of its own in the invocation the
        thread waits in, as ADK stores a state delta that comes with no message."""
        waiting = open_calls(session)
        invocation_id = next(
            (call.invocation_id for call in waiting.values()), f"state-{run.run_id}"
        )
        event = AdkEvent(
            author="user",
            invocation_id=invocation_id,
            actions=EventActions(state_delta=edit.delta),
            # The run's mark, as ADK gives each event of a run: the run's events begin here.
            custom_metadata={RUN_METADATA_KEY: plan.metadata},
        )
        await self.engine.append(session, event)

    async def _plan(self, run: Run, run_input: p.RunAgentInput, session: Session) -> Plan:
        thread = run.thread
        open_items = open_calls(session)
        request = read_input(
            run_input, open_items, answered_calls(session), self.approval_timeout, time.time()
        )
        catalogs = client_catalogs(run_input.context)
        metadata: dict[str, Any] = {
            "runId": run.run_id,
            **_owned_by(run),
            # Only allowed entries reach the policy and the model; the rest are logged.
            "context": allowed_context(
                {
                    entry.description: entry.value
                    for entry in run_input.context
                    if entry.description != CAPABILITIES  # the gateway's to read
                },
                self.context_allow,
            ),
        }
        client_tools = declared_client_tools(
            run_input.tools, self.engine.catalog, self.engine.server_tools
        )
        if self.engine.catalog is None:
            self.declarations.note(run.executor, client_tools)
        state = thread_state(open_items)
        if isinstance(request, NewTurn):
            surfaces = None
            if request.action is not None:  # refused before anything is stored
                surfaces = await self.engine.surfaces(thread.user_id, thread.thread_id)
                check_action(request.action, surfaces)
                metadata[ACTION_KEY] = msgspec.to_builtins(request.action)
            running = transition(state, Trigger.USER_MESSAGE)
            closed = await self._supersede(thread, run.run_id, session, open_items)
            thread.early.clear()
            thread.early_messages.clear()
            metadata["messageId"] = request.message_id
            content = types.Content(role="user", parts=[types.Part(text=request.text)])
            return Plan(
                content,
                metadata,
                client_tools,
                session,
                running,
                said=request,
                closed=closed,
                catalogs=catalogs,
                surfaces=surfaces,
                notices=self._unoffered(client_tools),
            )
        run.overruled.update(request.overruled)  # the door audits what the hub decided
        thread.early.update(request.responses)
        thread.early_messages.update(request.tool_messages)
        answered = {cid: r for cid, r in thread.early.items() if cid in open_items}
        if not answered or any(call_id not in answered for call_id in open_items):
            if answered:
                state = transition(state, Trigger.SOME_ANSWERED)
            waiting = {
                call_id: call.name
                for call_id, call in open_items.items()
                if call_id not in thread.early and not call.is_approval
            }
            return Plan(
                None,
                metadata,
                client_tools,
                session,
                state,
                notices=request.notices,
                waiting=waiting,
            )
        running = transition(state, Trigger.ALL_ANSWERED)
        self.audit_answers(thread, run.run_id, open_items, answered)
        messages = dict(thread.early_messages)
        thread.early.clear()
        thread.early_messages.clear()
        metadata["toolMessageIds"] = {cid: m.id for cid, m in messages.items()}
        # The client's words where the answer the model reads would not read back as them
        # (text, or JSON written another way), so every tab and a reload show what it sent.
        own_words = {
            cid: msgspec.to_builtins(m.content)
            for cid, m in messages.items()
            if cid in answered and m.content != dump_json(answered[cid])
        }
        if own_words:
            metadata["toolMessageContents"] = own_words
        results = [
            p.ToolCallResult(
                message_id=messages[cid].id,
                tool_call_id=cid,
                content=messages[cid].content,
                role="tool",
            )
            for cid in open_items
            if cid in messages
        ]
        return Plan(
            function_responses(open_items, answered),
            metadata,
            client_tools,
            session,
            running,
            notices=request.notices,
            results=results,
            catalogs=catalogs,
        )

    def _unoffered(self, client_tools: Mapping[str, object]) -> list[p.Event]:
        """A notice that a non-resumable App's model is not offered the client's tools."""
        if self.engine.resumable or not client_tools:
            return []
        return [tools_not_offered(self.engine.app_name, client_tools)]

    async def _supersede(
        self, thread: Thread, run_id: str, session: Session, open_items: dict[str, OpenCall]
    ) -> list[p.ToolCallResult]:
        """Closes open calls so a new user message starts from a consistent thread; the
        results of the browser's calls, as a snapshot shows them."""
        by_invocation: dict[str, dict[str, dict[str, Any]]] = {}
        closed = []
        for call in open_items.values():
            response = (
                {"confirmed": False, "payload": {"reason": "superseded"}}
                if call.is_approval
                else {"status": "no_result", "reason": "superseded"}
            )
            by_invocation.setdefault(call.invocation_id, {})[call.call_id] = response
            if not call.is_approval:
                closed.append(
                    p.ToolCallResult(
                        message_id=result_message_id(call.call_id),
                        tool_call_id=call.call_id,
                        content=dump_json(response),
                        role="tool",
                    )
                )
        for invocation_id, responses in by_invocation.items():
            calls = {cid: open_items[cid] for cid in responses}
            self.audit_answers(thread, run_id, calls, responses)
            event = AdkEvent(
                author="user",
                invocation_id=invocation_id,
                content=function_responses(calls, responses),
            )
            await self.engine.append(session, event)
        return closed

    def interrupt(self, call: OpenCall) -> p.Interrupt:
        original = call.approved_call()
        name = str(original.get("name", ""))
        args = original.get("args") or {}
        asked = call.asked_confirmation()
        return p.Interrupt(
            id=call.call_id,
            reason="approval",
            message=approvals.interrupt_message(
                name,
                args,
                str(asked.get("hint") or ""),
                self.engine.catalog,
                own_hint=name in self.engine.own_hints,
            ),
            tool_call_id=str(original.get("id", "")) or None,
            response_schema=approvals.response_schema(asked.get("payload")),
            expires_at=_iso(call.asked_at + self.approval_timeout),
            metadata={"tool": name, "arguments": args},
        )

    def waiting_for(self, open_items: dict[str, OpenCall]) -> p.Outcome:
        """How an idle thread's last run ended: open approvals, or open browser calls."""
        approvals = [self.interrupt(call) for call in open_items.values() if call.is_approval]
        if approvals:
            return p.InterruptOutcome(interrupts=approvals)
        return p.SuccessOutcome(pending_tool_call_ids=list(open_items) or None)

    def audit_answers(
        self,
        thread: Thread,
        run_id: str,
        calls: dict[str, OpenCall],
        responses: dict[str, dict[str, Any]],
    ) -> None:
        """Records what the browser (or a person, for an approval) answered each call."""
        if self.audit is None:
            return
        for call_id, call in calls.items():
            if call_id not in responses:
                continue
            if call.is_approval:
                tool = f"{call.approved_call().get('name', '')} approval"
                args = call.approved_call().get("args") or {}
            else:
                tool, args = call.name, call.args
            self.audit.record_client_result(
                thread.user_id,
                thread.thread_id,
                run_id,
                tool,
                call_id,
                args,
                responses[call_id],
                duration_ms=(time.time() - call.asked_at) * 1000,
            )


def _owned_by(run: Run) -> dict[str, str]:
    """The run's metadata naming whose its client calls are to execute, stored with each
    of its events so that it outlives the connection and a restart."""
    return {"client": run.owner} if run.owner else {}


def function_responses(
    calls: dict[str, OpenCall], responses: dict[str, dict[str, Any]]
) -> types.Content:
    """Function responses in call order: the model pairs them with its calls by position."""
    parts = [
        types.Part(
            function_response=types.FunctionResponse(
                id=call.call_id, name=call.name, response=responses[call.call_id]
            )
        )
        for call in calls.values()
        if call.call_id in responses
    ]
    return types.Content(role="user", parts=parts)


def _iso(timestamp: float) -> str:
    moment = datetime.datetime.fromtimestamp(timestamp, tz=datetime.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
