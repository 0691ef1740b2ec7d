"""Regenerate, edit and switch: what an input asks of its thread's branches, done before
the input is planned (docs/branches.md).

Theory of operation. An input asks for a fork with ``forwardedProps.branch.before`` (the
user message whose turn gets a new version), or without asking, by resending as its last
message a user message the thread shows already (a stock client's regenerate, or its edit
under the same id); it asks for a switch with ``forwardedProps.branch.switchTo``. The hub
hands ``Branching.plan`` the input once its run has claimed the thread and read it: the
store moves the branches in one write (``gateway.store.branches``), the thread is read
again, and only then is the input planned, so the planner and ADK see the active path
alone. The plan carries what the run shows first: ``parentRunId`` on a fork's
RUN_STARTED, ``gateway.branches`` for every watcher, and for a fork the path up to it for
the thread's other connections (the client that asked shows it already). A switch runs
nothing: its run shows the thread as a reattach would, to every watcher, and is logged,
so a reattach by cursor replays it.

Nothing here runs a tool: the moves only choose which stored events the thread shows, so a
browser action or a server tool of another branch is never done again; a new version's
model calls what it calls, as in any turn.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Annotated

import msgspec
from google.adk.sessions import Session

from gateway import wire as p
from gateway.adk.engine import Engine
from gateway.audit.log import AuditLog
from gateway.audit.records import AccessRecord
from gateway.context import event_metadata
from gateway.hub.planning import Plan, Planner
from gateway.hub.snapshots import branches_event, thread_snapshot
from gateway.hub.states import ThreadState
from gateway.hub.threads import Run
from gateway.metrics import OFF, Metrics
from gateway.store.branches import BranchRefused, Fork, Moved, Switch

log = logging.getLogger(__name__)

_FIELD = "$.forwardedProps.branch"

_Id = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class _Asked(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """``forwardedProps.branch``: exactly one of the two."""

    before: _Id | None = None
    switch_to: _Id | None = None


def asked(run_input: p.RunAgentInput) -> _Asked | None:
    """What the input asks of the thread's branches explicitly; None: nothing. Raises
    VALIDATION_ERROR naming the field, before anything is read."""
    props = run_input.forwarded_props
    if not isinstance(props, dict) or "branch" not in props:
        return None
    try:
        ask = msgspec.convert(props["branch"], _Asked)
    except msgspec.ValidationError as error:
        said = str(error)  # with a path inside the object, or none when it is the object
        where = said.replace("`$", f"`{_FIELD}") if "`$" in said else f"{said} - at `{_FIELD}`"
        raise p.GatewayError(p.ErrorCode.VALIDATION_ERROR, where) from None
    if (ask.before is None) == (ask.switch_to is None):
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"{_FIELD} holds exactly one of before (a user message to regenerate or edit from)"
            " and switchTo (the runId of a branch to show).",
        )
    if ask.before is not None and not _new_message(run_input):
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"{_FIELD}.before forks the thread for a new version of a turn: the input's last"
            " message must be the user's message that begins it, with no resume or press.",
        )
    return ask


def _new_message(run_input: p.RunAgentInput) -> bool:
    messages = run_input.messages
    return (
        bool(messages)
        and isinstance(messages[-1], p.UserMessage)
        and not run_input.resume
        and p.user_action(run_input) is None
    )


def resent(run_input: p.RunAgentInput, session: Session) -> str | None:
    """The id of the input's last message if it is a user message the thread shows already
    (among the events read for the run): a stock client's regenerate or edit."""
    if not _new_message(run_input):
        return None
    message_id = run_input.messages[-1].id
    for event in session.events:
        if event.author != "user" or not event.content or not event.content.parts:
            continue
        if not any(part.text for part in event.content.parts):
            continue  # a browser's result, not a message
        if (event_metadata(event).get("messageId") or event.id) == message_id:
            return message_id
    return None


class Branching:
    """Moves a thread's branches for the inputs that ask, and plans what their runs show."""

    def __init__(
        self,
        engine: Engine,
        *,
        most: int,
        snapshot_bytes: int | None,
        audit: AuditLog | None = None,
        metrics: Metrics = OFF,
    ) -> None:
        self.engine = engine
        self.most = most  # branches made by forks a thread may have (0: no limit)
        self.snapshot_bytes = snapshot_bytes
        self.audit = audit
        self.metrics = metrics

    async def plan(
        self, planner: Planner, run: Run, run_input: p.RunAgentInput, session: Session
    ) -> Plan:
        """The input's plan, once what it asks of the thread's branches is done."""
        move = self._move(run, run_input, session)
        if move is None:
            return await planner.plan(run, run_input, session)
        try:
            moved = await self.engine.sessions.move_branch(move)
        except BranchRefused as refused:
            raise _refusal(refused, run.thread.thread_id) from None
        if not moved.changed and isinstance(move, Fork):
            return await planner.plan(run, run_input, session)  # nothing to fork: a new turn
        thread = run.thread
        self._tell(run, move, moved)
        opened = await self.engine.open_thread(thread.user_id, thread.thread_id)
        assert opened.session is not None
        page, shown = await self.engine.thread_view(
            thread.user_id, thread.thread_id, self.snapshot_bytes
        )
        if isinstance(move, Switch):
            return Plan(
                message=None,
                metadata={},
                client_tools={},
                session=opened.session,
                thread_state=ThreadState.IDLE,
                shown_first=thread_snapshot(thread.thread_id, page, shown, moved.tree),
            )
        plan = await planner.plan(run, run_input, opened.session)
        snapshot, *_ = thread_snapshot(thread.thread_id, page, shown)
        return dataclasses.replace(
            plan,
            parent_run_id=moved.parent_run_id,
            shown_first=[branches_event(moved.tree)],
            observers_first=[snapshot],
        )

    def _move(self, run: Run, run_input: p.RunAgentInput, session: Session) -> Fork | Switch | None:
        thread, now = run.thread, time.time()
        ask = asked(run_input)
        key = (self.engine.app_name, thread.user_id, thread.thread_id)
        if ask is not None and ask.switch_to is not None:
            return Switch(*key, ask.switch_to, now)
        before = ask.before if ask is not None else resent(run_input, session)
        if before is None:
            return None
        last = run_input.messages[-1]
        text = p.text_of(last.content) if isinstance(last, p.UserMessage) else ""
        return Fork(*key, before, run.run_id, last.id, text, now, self.most, implicit=ask is None)

    def _tell(self, run: Run, move: Fork | Switch, moved: Moved) -> None:
        """The log line, the counter and the audit row of a move that changed the thread."""
        if not moved.changed:
            return
        thread, target = run.thread, move.run_id
        kind = "forked" if isinstance(move, Fork) else "switched"
        log.info(
            "thread %s of %s %s by %s: it shows the branch begun by run %s (%d branches)",
            thread.thread_id,
            thread.user_id,
            kind,
            run,
            target,
            len(moved.tree.branches),
        )
        self.metrics.branch_moved("fork" if isinstance(move, Fork) else "switch")
        if self.audit is not None:
            caller = run.caller
            self.audit.record(
                AccessRecord(
                    at=time.time(),
                    user_id=thread.user_id,
                    org=caller.org if caller is not None else None,
                    via="run",
                    client=run.owner or "",
                    door="branch",
                    action=f"branch.{kind}",
                    thread_id=thread.thread_id,
                    target=target,
                    outcome="ok",
                    detail=_detail(move),
                )
            )


def _detail(move: Fork | Switch) -> str | None:
    if isinstance(move, Fork):
        return f"before {move.before}" + (" (resent by the client)" if move.implicit else "")
    return None


def _refusal(refused: BranchRefused, thread_id: str) -> p.GatewayError:
    sentences: dict[str, tuple[p.ErrorCode, str]] = {
        "no_message": (
            p.ErrorCode.VALIDATION_ERROR,
            f"Thread {thread_id!r} shows no such user message ({_FIELD}.before): regenerate"
            " or edit from one of the messages it shows now.",
        ),
        "no_branch": (
            p.ErrorCode.VALIDATION_ERROR,
            f"Thread {thread_id!r} has no branch begun by that run ({_FIELD}.switchTo):"
            " take a runId from its gateway.branches.",
        ),
        "no_thread": (
            p.ErrorCode.VALIDATION_ERROR,
            f"There is no thread {thread_id!r} to regenerate, edit or switch in.",
        ),
        "waiting": (
            p.ErrorCode.SESSION_BUSY,
            f"Thread {thread_id!r} waits on a browser action or an approval: answer it (or"
            " send a new message) before you regenerate, edit or switch.",
        ),
        "too_many": (
            p.ErrorCode.SERVICE_QUOTA_EXCEEDED,
            f"Thread {thread_id!r} has {refused.limit} branches made by regenerating or"
            " editing, the most it may have (GATEWAY_BRANCHES_PER_THREAD): switch to one of"
            " them and go on there, or start a new thread.",
        ),
    }
    code, sentence = sentences[refused.reason]
    return p.GatewayError(code, sentence)
