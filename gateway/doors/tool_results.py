"""POST /tool-results: a backend system's final result for an agent's own long-running call.

Theory of operation. An agent's long-running tool (``gateway.tools.long_running``) opens
something a person or another system decides, a ticket, and its run ends waiting for the
final result under the call's id (``pendingToolCallIds``). Two may give it: the thread's
owner, with a ``tool`` message in the next RunAgentInput (as for a browser call), and a
backend system here, proving itself with the operator's service credential
(``Authenticator.identify_service``), which no browser user holds::

    POST /tool-results
    Authorization: Bearer <GATEWAY_SERVICE_TOKEN>
    {"threadId": "...", "toolCallId": "...", "content": <JSON>, "messageId"?: "..."}

The answer becomes the tool message it stands for and starts a run on the thread as its
owner, so the hub plans it as it plans the owner's (``gateway.hub.planning``, under the
thread's lease): the paused invocation resumes exactly once, and the run streams to whoever
watches the thread. The door answers 202 ``{"threadId", "runId", "toolCallId",
"waitingFor"}`` once the run has started; ``waitingFor`` names the thread's other open
calls when the model made several at once, and the answer then waits for them (as a
browser's partial answer does) before the invocation resumes.

It refuses what it can name first, each with a code and a sentence: a call that is not a
tool call of the thread (400 VALIDATION_ERROR), a browser's call or an approval (403
ACCESS_DENIED: the client answers those), one answered already (409 TOOL_RESULT_IGNORED)
or closed when the thread moved on (409 TOOL_CALL_CLOSED), a thread with a run going (409
SESSION_BUSY: send it again once the run is over). An answer that loses a race to another
after these checks is found answered by planning, which never resumes twice, and is
refused as answered already. Every answer and refusal is an audit row (``via=service``)
and a log line.
"""

from __future__ import annotations

import logging
import uuid
from typing import Annotated, Any

import msgspec

from gateway import wire as p
from gateway.auth import SERVICE_USER
from gateway.doors.access import Access, shown
from gateway.doors.asgi import Receive, Scope, Send, challenge, respond
from gateway.doors.body import RequestBody, http_status
from gateway.doors.shared import Shared
from gateway.hub.open_calls import final_answer, open_calls
from gateway.hub.states import ThreadState
from gateway.translate.translator import dump_json

log = logging.getLogger(__name__)

_Id = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class ToolResult(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """The body of POST /tool-results."""

    thread_id: _Id
    tool_call_id: _Id
    content: Any
    message_id: _Id | None = None


class Closed(p.GatewayError):
    """A call closed already: 409, under the code that says how it was closed."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(p.ErrorCode.VALIDATION_ERROR, message)
        self.closed_code = code

    def to_event(self) -> p.RunError:
        return p.RunError(message=self.message, code=self.closed_code)


async def tool_result(shared: Shared, scope: Scope, receive: Receive, send: Send) -> None:
    """POST /tool-results; see the module's docstring."""
    access = Access(shared.auth, shared.hub.audit, scope, "http", "tool result")
    settings = shared.settings
    body = RequestBody(
        scope, receive, max_bytes=settings.max_frame_bytes, timeout=settings.body_timeout
    )
    answer: ToolResult | None = None
    try:
        access.identity = shared.auth.identify_service(scope)
        shared.rates.check(SERVICE_USER)
        answer = _decoded(await body.json())
        run_id, waiting = await _start(shared, answer)
    except p.GatewayError as error:
        code = error.closed_code if isinstance(error, Closed) else error.code.value
        _told(access, answer, code, error.message)
        status = 409 if isinstance(error, Closed) else http_status(error)
        # A refused body is read to its end first, or the answer closes the connection.
        await body.settle()
        await respond(
            send, status, p.encode(error.to_event()), b"application/json", challenge(error)
        )
        return
    _told(
        access,
        answer,
        "ok",
        f"waits for {', '.join(waiting)}" if waiting else f"resumed by run {run_id}",
    )
    document = msgspec.json.encode(
        {
            "threadId": answer.thread_id,
            "runId": run_id,
            "toolCallId": answer.tool_call_id,
            "waitingFor": waiting,
        }
    )
    await respond(send, 202, document, b"application/json")


def _decoded(raw: bytes) -> ToolResult:
    try:
        return msgspec.json.decode(raw, type=ToolResult)
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"POST /tool-results takes {{threadId, toolCallId, content, messageId?}}: {error}",
        ) from None


async def _start(shared: Shared, answer: ToolResult) -> tuple[str, list[str]]:
    """Checks the answer against the thread and starts the run it resumes; the run's id,
    and the thread's other open calls the resumption waits for (none: it resumed)."""
    hub = shared.hub
    thread_id, call_id = answer.thread_id, answer.tool_call_id
    owner = await hub.engine.thread_owner(thread_id)
    session = await hub.engine.session(owner, thread_id) if owner is not None else None
    if owner is None or session is None:
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR, f"There is no thread {thread_id!r} to answer a call on."
        )
    open_items = open_calls(session)
    call = open_items.get(call_id)
    if call is None:
        closed = final_answer(session, call_id)
        if closed is None:
            raise p.GatewayError(
                p.ErrorCode.VALIDATION_ERROR,
                f"{call_id!r} is not a tool call of thread {thread_id!r}.",
            )
        if closed.get("status") in ("no_result", "cancelled"):
            why = closed.get("reason") or closed["status"]
            raise Closed(
                "TOOL_CALL_CLOSED",
                f"Tool call {call_id!r} was closed without its result ({why}): the thread "
                "moved on, so this result was not taken.",
            )
        raise _answered(call_id)
    if call.is_approval or not call.server:
        what = "an approval, answered through resume" if call.is_approval else "a browser's call"
        raise p.GatewayError(
            p.ErrorCode.ACCESS_DENIED,
            f"Tool call {call_id!r} is {what}: its client answers it, not a backend system.",
        )
    content = answer.content if isinstance(answer.content, str) else dump_json(answer.content)
    frame = {
        "threadId": thread_id,
        "runId": f"result-{uuid.uuid4().hex[:12]}",
        "messages": [
            {
                "id": answer.message_id or f"result-{call_id}",
                "role": "tool",
                "toolCallId": call_id,
                "content": content,
            }
        ],
        # A run going on the thread is the backend's to wait out, not to stop or queue behind.
        "forwardedProps": {"gateway": {"busy": "reject"}},
    }
    # Decoded as any input is, so the content is held to the same bounds.
    run_input = p.decode_input(msgspec.json.encode(frame))
    try:
        run = await hub.start(owner, run_input, None)
    except p.GatewayError as error:
        if error.code is not p.ErrorCode.SESSION_BUSY:
            raise
        raise p.GatewayError(
            p.ErrorCode.SESSION_BUSY,
            f"Thread {thread_id!r} has a run going; send this result again once it has ended.",
        ) from None
    if run.thread_state is ThreadState.RUNNING:
        return run.run_id, []
    if call_id in run.thread.early:
        # Taken, and kept until the thread's other open calls are answered too.
        return run.run_id, [cid for cid in open_items if cid not in run.thread.early]
    # Another answer got there between the check above and the thread's lease.
    raise _answered(call_id)


def _answered(call_id: str) -> Closed:
    return Closed(
        "TOOL_RESULT_IGNORED",
        f"Tool call {call_id!r} was already answered; this result was not taken.",
    )


def _told(access: Access, answer: ToolResult | None, outcome: str, detail: str) -> None:
    """The answer's audit row and log line."""
    thread_id = answer.thread_id if answer else ""
    call_id = answer.tool_call_id if answer else ""
    access.record(
        "tool result", thread_id=thread_id, target=call_id, outcome=outcome, detail=detail
    )
    log.info(
        "POST /tool-results thread=%s call=%s client=%s: %s",
        shown(thread_id),
        shown(call_id),
        access.client or "-",
        detail if outcome == "ok" else f"{outcome}: {detail}",
    )
