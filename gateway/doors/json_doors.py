"""The small HTTP doors: one request in, one JSON document out.

GET /tools lists the client tools the catalog declares, for anyone. The rest answer a
signed-in caller (``gateway.doors.access`` identifies and audits them): GET /me, who the
caller is and what the hosted app adds; GET /capabilities, what the hosted agent can do;
GET /history, a long thread's earlier messages page by page; POST /ws-ticket, a
single-use ticket a browser's /ws signs in with. A refused caller gets the refusal's HTTP
status and RUN_ERROR body (``gateway.doors.asgi``). None of them touches a run.
"""

from __future__ import annotations

import msgspec

from gateway import wire as p
from gateway.auth import query_param
from gateway.doors.access import Access
from gateway.doors.asgi import Scope, Send, refuse, respond
from gateway.doors.shared import Shared
from gateway.hub.hub import Hub


async def tools(hub: Hub, send: Send) -> None:
    """GET /tools: the client tools of the server's catalog, none without one."""
    catalog = hub.engine.catalog
    tools = [entry.declaration() for entry in catalog.client_entries()] if catalog else []
    await respond(send, 200, msgspec.json.encode({"tools": tools}), b"application/json")


async def me(shared: Shared, scope: Scope, send: Send) -> None:
    """GET /me: the signed-in user, and what the hosted app adds (the demo: the screens
    the user may open, for the web client's menu)."""
    try:
        identity = await Access(shared.auth, shared.hub.audit, scope, "http", "profile").identify()
    except p.GatewayError as error:
        await refuse(send, error)
        return
    profile: dict[str, object] = {"userId": identity.user, "org": identity.org}
    extra = shared.hub.engine.hosted.profile
    if extra is not None:
        profile.update(extra(identity.user))
    await respond(send, 200, msgspec.json.encode(profile), b"application/json")


async def capabilities(shared: Shared, document: bytes, scope: Scope, send: Send) -> None:
    """GET /capabilities: what the hosted agent can do (``gateway.adk.capabilities``), for
    a signed-in caller, since it names the agent's tools and sub-agents."""
    try:
        await Access(shared.auth, shared.hub.audit, scope, "http", "capabilities").identify()
    except p.GatewayError as error:
        await refuse(send, error)
        return
    await respond(send, 200, document, b"application/json")


async def history(shared: Shared, scope: Scope, send: Send) -> None:
    """GET /history?threadId=T&before=N&limit=L: the messages before a snapshot's first one.

    A reattach to a long thread sends only its latest part, with a ``gateway.history``
    event naming where the rest begins; each page names the one before it. With no
    ``before``, the latest part itself: what a client with no reattach (an HttpAgent)
    shows on load. ``limit`` makes pages smaller still: at most that many events'
    messages (``MAX_PAGE``), a page-sized view of a long thread. Every page names the
    thread's branches on its active path (``branches``: docs/branches.md).
    """
    try:
        identity = await Access(shared.auth, shared.hub.audit, scope, "http", "history").identify()
        shared.rates.check(identity.user)
        thread_id = p.reattach_to(query_param(scope, "threadId") or "").thread_id
        page = await shared.hub.earlier(identity.user, thread_id, _cursor(scope), _limit(scope))
        tree = await shared.hub.engine.branches(identity.user, thread_id)
    except p.GatewayError as error:
        await refuse(send, error)
        return
    body = msgspec.json.encode(
        {
            "threadId": thread_id,
            "messages": page.messages,
            "earlier": page.earlier,
            "times": page.times_ms(),
            # The forks on the active path and their branches (docs/branches.md).
            "branches": tree.listing(),
        }
    )
    await respond(send, 200, body, b"application/json")


async def ws_ticket(shared: Shared, scope: Scope, send: Send) -> None:
    """POST /ws-ticket: a single-use ticket for ``/ws?ticket=``, for the caller."""
    try:
        identity = await Access(shared.auth, shared.hub.audit, scope, "http", "ticket").identify()
        ticket = shared.auth.tickets.issue(identity)
    except p.GatewayError as error:
        await refuse(send, error)
        return
    body = msgspec.json.encode({"ticket": ticket.ticket, "expiresIn": round(ticket.seconds, 3)})
    # A credential: no cache may keep it.
    await respond(send, 200, body, b"application/json", [(b"cache-control", b"no-store")])


# The most events' messages one /history page may be asked for.
MAX_PAGE = 1000


def _limit(scope: Scope) -> int | None:
    raw = query_param(scope, "limit")
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 4 and 1 <= int(raw) <= MAX_PAGE):
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"?limit= must be a whole number from 1 to {MAX_PAGE}: how many events' messages"
            " one page holds at most.",
        )
    return int(raw)


def _cursor(scope: Scope) -> int | None:
    raw = query_param(scope, "before")
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):  # below SQLite's 2**63
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            "?before= must be the `before` of a gateway.history event or the `earlier` of a"
            " page: a whole number.",
        )
    return int(raw)
