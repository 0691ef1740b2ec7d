"""The thread door: GET /threads, and GET, PATCH, DELETE /threads/{id}, GET .../export.

A signed-in user's threads (``docs/threads.md`` is the contract): listed and searched,
read, renamed, archived, pinned, tagged, deleted and exported, under the same identity,
CORS and per-user rate limit as /history. The work is the hub's (``gateway.hub.listing``);
this door reads the request (query, path, a bounded JSON body), answers JSON, and audits a
delete. Another user's thread is THREAD_NOT_FOUND through every verb, as one that does not
exist: a door never reveals that it does.
"""

from __future__ import annotations

import dataclasses
import logging

import msgspec

from gateway import wire as p
from gateway.auth import query_param
from gateway.doors.access import Access
from gateway.doors.asgi import Receive, Scope, Send, challenge, respond
from gateway.doors.body import RequestBody, http_status
from gateway.doors.shared import Shared
from gateway.hub import thread_export
from gateway.store.thread_index import (
    QUERY_CHARS,
    BadCursor,
    ListingCursor,
    ThreadFilter,
    search_terms,
)
from gateway.wire import threads as t

log = logging.getLogger(__name__)

PREFIX = "/threads"
MAX_LIMIT = 100
DEFAULT_LIMIT = 30
JSON = b"application/json"


def methods(path: str) -> str | None:
    """The methods a path of this door takes (for CORS), None if it is not this door's."""
    if path == PREFIX:
        return "GET"
    if not path.startswith(PREFIX + "/"):
        return None
    return "GET" if path.endswith("/export") else "GET, PATCH, DELETE"


async def serve(shared: Shared, scope: Scope, receive: Receive, send: Send, path: str) -> None:
    """Answers one request of the door: the verb's JSON, or its refusal."""
    method = scope["method"]
    access = Access(shared.auth, shared.hub.audit, scope, "http", f"threads {method.lower()}")
    body = RequestBody(
        scope,
        receive,
        max_bytes=t.EDIT_BYTES,
        timeout=shared.settings.body_timeout,
        takes="PATCH /threads/{threadId} takes an object of title, archived, pinned, metadata",
        bound="(a PATCH of a thread's title, flags and metadata).",
    )
    try:
        identity = await access.identify()
        shared.rates.check(identity.user)
        answer = await _answer(shared, access, identity.user, body, path)
        shared.hub.metrics.thread_door(_verb(access.method, path, access.scope))
    except p.GatewayError as error:
        await body.settle()  # a refused body is read to its end, or the answer is lost
        status = 405 if isinstance(error, NotAllowed) else http_status(error)
        headers = challenge(error) + (error.allow if isinstance(error, NotAllowed) else [])
        await respond(send, status, p.encode(error.to_event()), JSON, headers)
        return
    await respond(send, answer.status, answer.document, answer.content_type, answer.headers)


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    document: bytes
    status: int = 200
    content_type: bytes = JSON
    headers: list[tuple[bytes, bytes]] = dataclasses.field(default_factory=list)


class NotAllowed(p.GatewayError):
    """A method the path does not take: 405, with the methods it does."""

    def __init__(self, method: str, path: str) -> None:
        super().__init__(
            p.ErrorCode.VALIDATION_ERROR,
            f"{method} {path} is not a verb of the thread door; see docs/threads.md.",
        )
        self.allow = [(b"allow", (methods(path) or "GET").encode())]


async def _answer(
    shared: Shared, access: Access, user: str, body: RequestBody, path: str
) -> Answer:
    listing = shared.hub.listing
    method = access.method
    allowed = (methods(path) or "").split(", ")
    if method not in allowed:
        raise NotAllowed(method, path)
    if path == PREFIX:
        threads, cursor = await listing.page(user, _filter(access))
        return Answer(msgspec.json.encode({"threads": threads, "nextCursor": cursor}))
    thread_id, export = _thread_of(path)
    if export:
        return await _export(shared, access, user, thread_id)
    if method == "PATCH":
        edit = t.edit(await body.json())
        return Answer(msgspec.json.encode(await listing.edit(user, thread_id, edit)))
    if method == "DELETE":
        await listing.delete(user, thread_id)
        access.record("thread.deleted", thread_id=thread_id)
        return Answer(b"", status=204)
    return Answer(msgspec.json.encode(await listing.one(user, thread_id)))


async def _export(shared: Shared, access: Access, user: str, thread_id: str) -> Answer:
    kind = query_param(access.scope, "format") or "json"
    if kind not in ("json", "markdown"):
        raise _invalid("?format= is `json` or `markdown`.")
    listing = shared.hub.listing
    summary = await listing.one(user, thread_id)
    messages = await listing.messages(user, thread_id)
    document, content_type, extension = (
        (thread_export.as_json(summary, messages), b"application/json", "json")
        if kind == "json"
        else (thread_export.as_markdown(summary, messages), b"text/markdown; charset=utf-8", "md")
    )
    log.info("thread %s of %s exported as %s", thread_id, user, kind)
    disposition = thread_export.disposition(thread_id, extension)
    return Answer(document, content_type=content_type, headers=[disposition])


def _thread_of(path: str) -> tuple[str, bool]:
    """The thread a path names (ASGI has decoded it), and whether it is its export;
    VALIDATION_ERROR if the id is not one a thread may have."""
    rest = path[len(PREFIX) + 1 :]
    export = rest.endswith("/export")
    if export:
        rest = rest[: -len("/export")]
    return p.reattach_to(rest).thread_id, export


def _filter(access: Access) -> ThreadFilter:
    scope = access.scope
    limit = _limit(query_param(scope, "limit"))
    archived = {"false": False, "true": True, "all": None}
    shown = query_param(scope, "archived") or "false"
    if shown not in archived:
        raise _invalid("?archived= is `false` (the default), `true` or `all`.")
    after = None
    if (raw := query_param(scope, "cursor")) is not None:
        try:
            after = ListingCursor.decode(raw)
        except BadCursor:
            raise p.GatewayError(
                p.ErrorCode.BAD_CURSOR,
                "?cursor= is not one a listing gave: pass the `nextCursor` of the page"
                " before, or leave it out for the first page.",
            ) from None
    query = query_param(scope, "q") or ""
    if len(query) > QUERY_CHARS:
        raise p.GatewayError(
            p.ErrorCode.BAD_QUERY,
            f"?q= is {len(query)} characters; a search takes at most {QUERY_CHARS}.",
        )
    return ThreadFilter(archived[shown], tuple(search_terms(query)), after, limit)


def _limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 3 and 1 <= int(raw) <= MAX_LIMIT):
        raise _invalid(f"?limit= is a whole number from 1 to {MAX_LIMIT}.")
    return int(raw)


def _verb(method: str, path: str, scope: Scope) -> str:
    """What a request did, as the metrics count it (a bounded set)."""
    if path == PREFIX:
        return "search" if query_param(scope, "q") else "list"
    if path.endswith("/export"):
        return "export"
    return {"PATCH": "edit", "DELETE": "delete"}.get(method, "read")


def _invalid(message: str) -> p.GatewayError:
    return p.GatewayError(p.ErrorCode.VALIDATION_ERROR, message)
