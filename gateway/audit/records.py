"""What the audit keeps: a tool call (``AuditRecord``) and an action at a door
(``AccessRecord``), each as the row its table binds and back, and as one line for a person.

A tool call's outcome is a word and a detail, read from the tool's result (``outcome_of``):
its ``status``, "error", or "ok". Times are Unix seconds, printed in UTC to the millisecond.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Mapping
from typing import Any, Literal

Executor = Literal["server", "client"]


@dataclasses.dataclass(frozen=True)
class AuditRecord:
    """One tool call. ``at`` is when it started, in Unix seconds."""

    at: float
    user_id: str
    thread_id: str
    run_id: str
    tool: str
    call_id: str
    arguments: dict[str, Any]
    outcome: str
    detail: str | None
    duration_ms: float | None
    executor: Executor

    def as_row(self) -> tuple[Any, ...]:
        arguments = json.dumps(self.arguments, ensure_ascii=False, default=str)
        return (
            self.at,
            self.user_id,
            self.thread_id,
            self.run_id,
            self.tool,
            self.call_id,
            arguments,
            self.outcome,
            self.detail,
            self.duration_ms,
            self.executor,
        )

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> AuditRecord:
        at, user, thread, run, tool, call_id, arguments, outcome, detail, ms, executor = row
        return cls(
            at=at,
            user_id=user,
            thread_id=thread,
            run_id=run,
            tool=tool,
            call_id=call_id,
            arguments=json.loads(arguments),
            outcome=outcome,
            detail=detail,
            duration_ms=ms,
            executor=executor,
        )

    def line(self) -> str:
        """One line for a person: time, who, where, what, outcome, how long, arguments."""
        took = f"{self.duration_ms:.0f} ms" if self.duration_ms is not None else "- ms"
        outcome = f"{self.outcome} ({self.detail})" if self.detail else self.outcome
        arguments = json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))
        return (
            f"{_when(self.at)}  user={self.user_id}  thread={self.thread_id}  "
            f"run={self.run_id}  {self.tool}  {self.executor}  {outcome}  {took}  {arguments}"
        )


@dataclasses.dataclass(frozen=True)
class AccessRecord:
    """One action at a door. ``user_id`` is "" when the caller was not identified; ``via``
    says how they were ("dev": only claimed); ``outcome`` is "ok", a word such as
    "nothing_to_cancel", or the ErrorCode the caller was refused with."""

    at: float
    user_id: str
    org: str | None
    via: str
    client: str
    door: str
    action: str
    thread_id: str
    target: str
    outcome: str
    detail: str | None

    def as_row(self) -> tuple[Any, ...]:
        return dataclasses.astuple(self)

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> AccessRecord:
        return cls(*row)

    def line(self) -> str:
        """One line for a person: time, who and how, from where, what, outcome."""
        who = f"user={self.user_id or '-'} via={self.via}"
        if self.org:
            who += f" org={self.org}"
        target = f" {self.target}" if self.target else ""
        outcome = f"{self.outcome} ({self.detail})" if self.detail else self.outcome
        return (
            f"{_when(self.at)}  {who}  client={self.client or '-'}  "
            f"thread={self.thread_id or '-'}  {self.door} {self.action}{target}  {outcome}"
        )


Entry = AuditRecord | AccessRecord


def _when(at: float) -> str:
    moment = datetime.datetime.fromtimestamp(at, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def outcome_of(result: Any) -> tuple[str, str | None]:
    """A tool result as an outcome word and a detail: its status, "error", or "ok"."""
    if not isinstance(result, Mapping):
        return "ok", None
    if result.get("error"):
        return "error", str(result["error"])
    status = result.get("status")
    if status:
        detail = result.get("reason") or result.get("message")
        return str(status), str(detail) if detail else None
    return "ok", None
