"""An audit record as the log writes one for a tool call, with only what a test varies
(thread, user, tool) left to say."""

from __future__ import annotations

from gateway.audit import AuditRecord


def record(thread: str = "t1", user: str = "demo", tool: str = "find_screen") -> AuditRecord:
    return AuditRecord(
        at=1_700_000_000.0,
        user_id=user,
        thread_id=thread,
        run_id="r1",
        tool=tool,
        call_id=f"call-{thread}-{tool}",
        arguments={"query": "요청 목록"},
        outcome="ok",
        detail=None,
        duration_ms=0.4,
        executor="server",
    )
