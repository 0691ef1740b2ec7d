"""The thread door's JSON (``docs/threads.md``): a thread's summary, a PATCH, a live change.

A ``ThreadSummary`` is what ``GET /threads`` lists and every other verb answers with; a
``ThreadEdit`` is a PATCH body, decoded strictly (an unknown key or a wrong type is a
VALIDATION_ERROR naming it) and then held to its bounds (``edit``); a change to a thread
travels to the user's connections as a ``CUSTOM`` event named ``gateway.thread``
(``changed``). Times are ISO-8601 UTC with milliseconds.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Literal

import msgspec

from gateway.wire import bounds
from gateway.wire.base import Wire, explained
from gateway.wire.errors import ErrorCode, GatewayError
from gateway.wire.events import Custom

THREAD_CHANGE = "gateway.thread"

TITLE_CHARS = 200
METADATA_KEYS = 32
METADATA_BYTES = 4096
METADATA_DEPTH = 8
# A PATCH body, at most: a title, two flags and the metadata, with room for their keys.
EDIT_BYTES = 8192

State = Literal["idle", "running", "waiting"]
WaitingOn = Literal["approval", "browser_action", "tool_result"]
Change = Literal["created", "updated", "deleted"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ThreadSummary(Wire, omit_defaults=False):
    thread_id: str
    title: str
    created_at: str
    last_activity_at: str
    preview: str
    state: State
    waiting_on: WaitingOn | None
    pinned: bool
    archived: bool
    metadata: dict[str, Any]


class ThreadEdit(Wire, forbid_unknown_fields=True):
    """A PATCH body: any of its fields, at least one."""

    title: str | None = None
    archived: bool | None = None
    pinned: bool | None = None
    metadata: dict[str, Any] | None = None


_edit_decoder = msgspec.json.Decoder(ThreadEdit)


def edit(body: bytes) -> ThreadEdit:
    """A PATCH body, decoded and within bounds; VALIDATION_ERROR saying what is wrong."""
    if len(body) > EDIT_BYTES:
        raise _invalid(f"The body is {len(body)} bytes; a PATCH holds at most {EDIT_BYTES}.")
    try:
        change = _edit_decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise _invalid(f"Invalid PATCH body: {explained(exc)}") from None
    except (msgspec.DecodeError, RecursionError):
        raise _invalid("The body is not a JSON object.") from None
    if all(getattr(change, name) is None for name in change.__struct_fields__):
        raise _invalid("A PATCH names at least one of title, archived, pinned and metadata.")
    if change.title is not None:
        change.title = change.title.strip()
        if not change.title or len(change.title) > TITLE_CHARS or _CONTROL.search(change.title):
            raise _invalid(
                f"`title` must be 1 to {TITLE_CHARS} characters (spaces around it trimmed),"
                " with no control characters."
            )
    if change.metadata is not None:
        _check_metadata(change.metadata)
    return change


def _check_metadata(metadata: dict[str, Any]) -> None:
    if len(metadata) > METADATA_KEYS:
        raise _invalid(f"`metadata` has {len(metadata)} keys; at most {METADATA_KEYS}.")
    try:
        bounds.check(metadata, max_depth=METADATA_DEPTH)
    except bounds.OutOfBounds as bad:
        raise _invalid(bad.at("metadata")) from None
    size = len(msgspec.json.encode(metadata))
    if size > METADATA_BYTES:
        raise _invalid(f"`metadata` is {size} bytes as JSON; at most {METADATA_BYTES}.")


def _invalid(message: str) -> GatewayError:
    return GatewayError(ErrorCode.VALIDATION_ERROR, message)


def changed(change: Change, summary: ThreadSummary | None, thread_id: str) -> Custom:
    """The live event of a change to a thread (``deleted``: its id only)."""
    thread: Any = summary if summary is not None else {"threadId": thread_id}
    return Custom(name=THREAD_CHANGE, value={"change": change, "thread": thread})


def iso(timestamp: float) -> str:
    """A store's time (seconds since the epoch) as ISO-8601 UTC with milliseconds."""
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def not_found(thread_id: str) -> GatewayError:
    """Another user's thread and no thread at all are one answer: nothing is revealed."""
    return GatewayError(
        ErrorCode.THREAD_NOT_FOUND,
        f"You have no thread {thread_id!r}; list yours with GET /threads.",
    )
