"""What every door does around its work: identify the caller, log the request, audit.

One ``Access`` per request or connection: a caller's way in through one door. It identifies
the caller in one log line naming the user, the client address and the AgentCore session
header; its audit rows (``AccessRecord``) say who did what from where: approvals, cancels,
reattaches, and every attempt refused as UNAUTHORIZED or ACCESS_DENIED. The hub records
tool calls; the doors record the rest, so the hub needs no knowledge of addresses or
credentials.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from gateway import logs
from gateway import wire as p
from gateway.audit import AccessRecord, AuditLog
from gateway.auth import Authenticator, Identity, Impersonation
from gateway.context import Caller
from gateway.doors.asgi import header
from gateway.metrics import OFF, Metrics

log = logging.getLogger(__name__)

AGENTCORE_SESSION = b"x-amzn-bedrock-agentcore-runtime-session-id"
# A client-sent value shown in a door's log line is cut to this many characters.
SHOWN_CHARS = 64
# Refusals that say who tried what they may not: always audited.
DENIALS = (p.ErrorCode.UNAUTHORIZED, p.ErrorCode.ACCESS_DENIED)


def shown(value: str | None) -> str:
    """A client-sent value for a key=value log line: escaped and cut as ``gateway.logs``
    shows any value, with its spaces escaped too, so it cannot forge another pair."""
    return logs.shown(value.replace(" ", "\\x20"), SHOWN_CHARS) if value else "-"


class Access:
    """A caller's access through one door: ``door`` is "ws", "sse" or "http", as the audit
    rows name it; ``action`` what the request is for."""

    def __init__(
        self,
        auth: Authenticator,
        audit: AuditLog | None,
        scope: MutableMapping[str, Any],
        door: str,
        action: str,
        metrics: Metrics = OFF,
    ) -> None:
        self.auth, self.audit, self.scope = auth, audit, scope
        self.metrics = metrics
        self.door, self.action = door, action
        client = scope.get("client")
        self.client = str(client[0]) if client else ""
        # A WebSocket scope has no method; its log lines say WS.
        self.method = str(scope.get("method", "WS"))
        self.session = shown(header(scope, AGENTCORE_SESSION))
        self.identity: Identity | None = None

    async def identify(self) -> Identity:
        """The caller, logged in one line; a refusal is logged and audited, then raised."""
        request = f"{self.method} {self.scope['path']}"
        try:
            self.identity = await self.auth.identify(self.scope)
        except p.GatewayError as error:
            if isinstance(error, Impersonation):
                self.identity = error.identity
            self._refused(request, error)
            raise
        except Exception:
            failure = p.unexpected(f"checking the caller of {request}")
            self._refused(request, failure)
            raise failure from None
        log.info(
            "%s user=%s via=%s client=%s session=%s",
            request,
            self.identity.user,
            self.identity.via,
            self.client or "-",
            self.session,
        )
        return self.identity

    @property
    def caller(self) -> Caller | None:
        """Who asks, as a run's tools are told (``gateway.context.caller``); None before
        ``identify``."""
        return self.identity.caller if self.identity is not None else None

    def _refused(self, request: str, error: p.GatewayError) -> None:
        log.info(
            "refused %s user=%s client=%s session=%s: %s",
            request,
            self.identity.user if self.identity else "-",
            self.client or "-",
            self.session,
            error.message,
        )
        self.record(self.action, outcome=error.code.value, detail=error.message)

    def record(
        self,
        action: str,
        *,
        thread_id: str = "",
        target: str = "",
        outcome: str = "ok",
        detail: str | None = None,
    ) -> None:
        if self.audit is None:
            return
        identity = self.identity
        self.audit.record_access(
            AccessRecord(
                at=time.time(),
                user_id=identity.user if identity else "",
                org=identity.org if identity else None,
                via=identity.via if identity else "-",
                client=self.client,
                door=self.door,
                action=action,
                thread_id=thread_id,
                target=target,
                outcome=outcome,
                detail=detail,
            )
        )

    def record_input(
        self,
        run_input: p.RunAgentInput,
        error: p.GatewayError | None,
        overruled: Mapping[str, str] | None = None,
    ) -> None:
        """Audits a run input: each approval answer, and any input refused as a denial.

        Written once the hub has decided: an answer it did not take as sent has the code of
        its notice (``overruled``: INTERRUPT_ALREADY_ANSWERED, INTERRUPT_EXPIRED) as outcome.
        """
        outcome = error.code.value if error else "ok"
        self.record_answers(run_input.thread_id, run_input.resume or [], error, overruled)
        if error is not None and error.code in DENIALS and not run_input.resume:
            last = run_input.messages[-1] if run_input.messages else None
            action = "tool_result" if isinstance(last, p.ToolMessage) else "run"
            self.record(
                action, thread_id=run_input.thread_id, outcome=outcome, detail=error.message
            )

    def record_answers(
        self,
        thread_id: str,
        entries: list[p.ResumeEntry],
        error: p.GatewayError | None,
        overruled: Mapping[str, str] | None = None,
    ) -> None:
        """Audits approval answers (a run input's ``resume``, a ``liveResume``) as decided."""
        outcome = error.code.value if error else "ok"
        for entry in entries:
            taken = (overruled or {}).get(entry.interrupt_id, outcome) == "ok"
            self.metrics.approval_answered(_decision(entry) if taken else "refused")
            self.record(
                "approval",
                thread_id=thread_id,
                target=entry.interrupt_id,
                outcome=(overruled or {}).get(entry.interrupt_id, outcome),
                detail=_decision(entry),
            )

    def record_cancel(
        self, thread_id: str, cancelled: bool, error: p.GatewayError | None = None
    ) -> None:
        """Audits a cancel: "ok", "nothing_to_cancel", or the code it was refused with."""
        if error is not None:
            self.record(
                "cancel", thread_id=thread_id, outcome=error.code.value, detail=error.message
            )
            return
        self.record(
            "cancel", thread_id=thread_id, outcome="ok" if cancelled else "nothing_to_cancel"
        )

    def record_reattach(self, thread_id: str, error: p.GatewayError | None) -> None:
        """Audits a reattach: "ok", or the code it was refused with."""
        self.record(
            "reattach",
            thread_id=thread_id,
            outcome=error.code.value if error else "ok",
            detail=error.message if error else None,
        )


def _decision(entry: p.ResumeEntry) -> str:
    if entry.status == "cancelled":
        return "cancelled"
    payload = entry.payload
    approved = payload.get("approved") if isinstance(payload, dict) else None
    if approved is True:
        return "approved"
    return "rejected" if approved is False else "unreadable"
