"""The errors a client can meet: AgentCore's table of codes, and a sentence for each case.

A ``GatewayError`` carries a code and a sentence that tells the client what to do, and
becomes a RUN_ERROR. A failure nobody expected is logged under a new error id
(``unexpected``); the client gets the id, never the exception's text.
"""

from __future__ import annotations

import enum
import logging
import uuid

from gateway.wire.events import RunError

log = logging.getLogger(__name__)

# Where a refusal's RUN_ERROR names the input it refuses (its runId), when the input had
# one: a refusal before any run belongs to no run, and a client with several inputs in
# flight (sent again after a reload) tells by this which one was refused.
REFUSED_RUN_ID = "gateway.runId"
# Where one error for several frames refused at once (a full queue, a flood) names every
# input among them, in order (its ``REFUSED_RUN_ID`` is the first's); the frames a rate
# limit refuses are not read, and name none.
REFUSED_RUN_IDS = "gateway.runIds"


class ErrorCode(enum.StrEnum):
    """The AgentCore error table, and the gateway's codes for a cluster's failures (a
    retryable outage, a process lost mid-run, a thread taken over); ``http_status`` is what
    the SSE door answers with."""

    UNAUTHORIZED = "UNAUTHORIZED"
    ACCESS_DENIED = "ACCESS_DENIED"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    RATE_LIMIT_EXCEEDED = "RATE_LIMIT_EXCEEDED"
    SESSION_BUSY = "SESSION_BUSY"
    SERVICE_QUOTA_EXCEEDED = "SERVICE_QUOTA_EXCEEDED"
    # Retryable: this process is going away (a drain); the same input succeeds elsewhere.
    SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"
    AGENT_ERROR = "AGENT_ERROR"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    # The gateway's database cannot be reached or cannot commit now: try again shortly.
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    # The process running the run stopped (killed, lost) before it finished.
    RUN_INTERRUPTED = "RUN_INTERRUPTED"
    # This process stalled past its lease and another took the thread over: reattach.
    THREAD_TAKEN_OVER = "THREAD_TAKEN_OVER"
    # The thread door (``gateway.wire.threads``): no thread of the caller's by that id,
    # a listing's cursor it did not make, a search query too long.
    THREAD_NOT_FOUND = "THREAD_NOT_FOUND"
    BAD_CURSOR = "BAD_CURSOR"
    BAD_QUERY = "BAD_QUERY"

    @property
    def http_status(self) -> int:
        return _HTTP_STATUS[self]


_HTTP_STATUS = {
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.ACCESS_DENIED: 403,
    ErrorCode.VALIDATION_ERROR: 400,
    ErrorCode.RATE_LIMIT_EXCEEDED: 429,
    ErrorCode.SESSION_BUSY: 409,
    ErrorCode.SERVICE_QUOTA_EXCEEDED: 429,
    ErrorCode.SERVICE_UNAVAILABLE: 503,
    ErrorCode.AGENT_ERROR: 200,
    ErrorCode.INTERNAL_ERROR: 500,
    ErrorCode.STORE_UNAVAILABLE: 503,
    ErrorCode.RUN_INTERRUPTED: 503,
    ErrorCode.THREAD_TAKEN_OVER: 409,
    ErrorCode.THREAD_NOT_FOUND: 404,
    ErrorCode.BAD_CURSOR: 400,
    ErrorCode.BAD_QUERY: 400,
}


class GatewayError(Exception):
    """An error a client can meet: a code from the table and a sentence saying what to do."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_event(self) -> RunError:
        return RunError(message=self.message, code=self.code.value)


_FAILED = {
    ErrorCode.INTERNAL_ERROR: "The gateway failed while handling this",
    ErrorCode.AGENT_ERROR: "The agent failed while answering",
}


def unexpected(
    what: str, code: ErrorCode = ErrorCode.INTERNAL_ERROR, *, traceback: bool = True
) -> GatewayError:
    """For a failure being handled: logs it under a new error id, returns what to tell.

    The client gets the id and a sentence, never the exception's text (it can hold names,
    paths or another user's data); the log line with the same id has the details, and the
    traceback of the exception being handled unless ``traceback`` is False.
    """
    error_id = uuid.uuid4().hex[:12]
    log.error("%s failed (error id %s)", what, error_id, exc_info=traceback)
    return GatewayError(
        code,
        f"{_FAILED[code]} (error id {error_id}). What was stored before is kept; try again,"
        " or give the error id to the operator.",
    )
