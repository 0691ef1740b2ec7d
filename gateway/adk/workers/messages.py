"""What the main process and a worker say to each other, one msgspec type a message.

Frames on the pipe are a 4-byte big-endian length, then one message as msgpack, tagged by
its type's name. ADK's own objects (a session, a message, an event) travel as ADK's JSON
(``model_dump_json``), so they have one description, ADK's; everything else is here.

Main process to worker: ``Start`` a run, ``Cancel`` it (as a user's cancel: ADK seals the
invocation), ``Stop`` it (the hub closed the stream: the task is cancelled), the answer
to each of the worker's ``Append``s and ``ReadSurfaces``, and ``Credit`` for more of a
run's events. Worker to main process: ``Hello`` once, then per run its ``Append``s (a
non-partial event to store before ADK goes on), ``ReadSurfaces`` when a tool returns A2UI
operations, ``Yielded`` events (what the runner yields, in order; a streamed chunk like the
one before it as ``Streamed``, its text), ``Stalled`` if its model
goes quiet, and one ``Finished`` or ``Failed``, always last (or, first and alone, ``Unkept``:
the run's Start is wanted whole); and, outside any run, what
its plugins record for the main process's audit log and metrics (``Recorded``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from gateway import wire as p
from gateway.a2ui.surfaces import Surface

__all__ = [
    "Append",
    "Appended",
    "Audited",
    "CallSent",
    "Cancel",
    "Credit",
    "Failed",
    "Finished",
    "FromMain",
    "FromWorker",
    "Hello",
    "ModelCalled",
    "ReadSurfaces",
    "Recorded",
    "Stalled",
    "Start",
    "Stop",
    "Streamed",
    "SurfacesRead",
    "TokensUsed",
    "ToolDeclaration",
    "Unkept",
    "Yielded",
]


class ToolDeclaration(msgspec.Struct, frozen=True):
    """A client tool the run offers, as the browser declared it."""

    name: str
    description: str
    parameters: dict[str, Any]


class Start(msgspec.Struct, tag=True, frozen=True):
    """Runs one ADK invocation; ``run`` names it in every later message of the run."""

    run: int
    user_id: str
    thread_id: str
    session: bytes  # the session as the hub loaded it, ADK's JSON
    message: bytes | None  # the new message (types.Content JSON), or None to resume
    invocation_id: str | None
    state_delta: dict[str, Any] | None
    metadata: dict[str, Any]  # the run's own metadata (runId, client tools' names, ...)
    client_tools: list[ToolDeclaration]
    catalogs: dict[str, list[str] | None] | None
    caller: dict[str, Any] | None  # gateway.context.Caller's fields; None: nobody asked
    traceparent: str | None = None  # the run's span, W3C; None: traces are off
    surfaces: dict[str, Surface] | None = None  # the thread's A2UI, if the hub read them
    # The main process stores the run's input ahead of its commit (``SessionService.input_ahead``):
    # the worker goes on without waiting for its answer (``remote_session``).
    input_ahead: bool = False
    # The session's first ``kept`` events, the last ``kept_last``, are the ones the worker
    # kept of the thread's last run there: ``session`` holds only the events after them
    # (``gateway.adk.workers.kept``). 0: the whole session.
    kept: int = 0
    kept_last: str | None = None


class Cancel(msgspec.Struct, tag=True, frozen=True):
    run: int


class Stop(msgspec.Struct, tag=True, frozen=True):
    run: int


class Credit(msgspec.Struct, tag=True, frozen=True):
    """The hub took ``events`` more of the run's events: the worker may send that many more
    (``gateway.adk.workers.credit``)."""

    run: int
    events: int


class Appended(msgspec.Struct, tag=True, frozen=True):
    """The store committed the ``Append`` numbered ``call``; ``error`` if it refused it."""

    run: int
    call: int
    error: str | None = None


class SurfacesRead(msgspec.Struct, tag=True, frozen=True):
    """The answer to ``ReadSurfaces`` numbered ``call``: the thread's live A2UI surfaces,
    or ``error`` if they could not be read."""

    run: int
    call: int
    live: dict[str, Surface] | None = None
    error: str | None = None


class Hello(msgspec.Struct, tag=True, frozen=True):
    index: int
    pid: int


class Append(msgspec.Struct, tag=True, frozen=True):
    run: int
    call: int
    event: bytes  # ADK's JSON


class ReadSurfaces(msgspec.Struct, tag=True, frozen=True):
    """The run's thread's A2UI surfaces are wanted: a tool of the run returned operations,
    which are checked against them (read once a run, as in one process)."""

    run: int
    call: int


class Yielded(msgspec.Struct, tag=True, frozen=True):
    """An event the runner yielded: ADK's JSON, or, ``stored``, the run's last ``Append``,
    which the main process parsed already (ADK yields each event right after storing it).
    An event that says the model failed carries the provider's failure (as ``Finished``
    does), which the hub reads as it translates that event."""

    run: int
    event: bytes = b""
    stored: bool = False
    failure: tuple[str, str, str, str] | None = None  # code, sentence, detail, model


class Streamed(msgspec.Struct, tag=True, frozen=True):
    """A streamed chunk the runner yielded that is the run's last chunk sent whole but for
    its text, id and time: those alone (``gateway.adk.workers.chunks``)."""

    run: int
    text: str
    id: str
    timestamp: float


class Stalled(msgspec.Struct, tag=True, frozen=True):
    """A model call of the run has sent nothing for ``GATEWAY_MODEL_TIMEOUT``: the main
    process stops the run as it stops one of its own (``model`` names it for the log)."""

    run: int
    model: str
    seconds: float


class Audited(msgspec.Struct, tag=True, frozen=True):
    """A tool call the worker's audit plugin recorded, as its row (``AuditRecord.as_row``)."""

    row: list[Any]


class CallSent(msgspec.Struct, tag=True, frozen=True):
    """A client call went to the browser (``AuditLog.note_sent``: its answer is timed)."""

    call_id: str


class ModelCalled(msgspec.Struct, tag=True, frozen=True):
    """A model call ended (``Metrics.model_called``)."""

    model: str
    seconds: float
    failed: bool


class TokensUsed(msgspec.Struct, tag=True, frozen=True):
    """What a model call reported it used (``Metrics.tokens_used``)."""

    model: str
    input_tokens: int | None
    output_tokens: int | None


class Finished(msgspec.Struct, tag=True, frozen=True):
    """The invocation ended; what the worker's plugins counted of it, and the session the
    worker keeps of the thread: ``kept`` events, the last ``kept_last``
    (``gateway.adk.workers.kept``)."""

    run: int
    usage: list[p.TokenUsage] | None = None
    failure: tuple[str, str, str, str] | None = None  # code, sentence, detail, model
    kept: int = 0
    kept_last: str | None = None


class Unkept(msgspec.Struct, tag=True, frozen=True):
    """The run's ``Start`` named events of the thread this worker does not keep: the main
    process sends it again with the whole session (``gateway.adk.workers.kept``)."""

    run: int


class Failed(msgspec.Struct, tag=True, frozen=True):
    """The invocation raised; ``kind`` is the exception's type, ``text`` for the log only,
    ``refusal`` the code of the GatewayError a plugin refused the run with (``text`` then
    is its sentence, for the client)."""

    run: int
    kind: str
    text: str
    refusal: str | None = None


FromMain = Start | Cancel | Stop | Appended | SurfacesRead | Credit
# What a worker's plugins record for the main process's audit log and metrics.
Recorded = Audited | CallSent | ModelCalled | TokensUsed
FromWorker = (
    Hello
    | Append
    | ReadSurfaces
    | Yielded
    | Streamed
    | Stalled
    | Finished
    | Failed
    | Unkept
    | Recorded
)
