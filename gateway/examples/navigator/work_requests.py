"""The demo's work requests: shown as an A2UI card, approved or rejected by a person.

``show_work_request`` answers "R-1042 보여줘" with the request and a card (a2ui_operations):
title, requester, amount, status, and 승인 / 거절 buttons while it is pending. A press on a
button comes back as the user's turn, and the model calls ``approveWorkRequest`` or
``rejectWorkRequest``, which ADK runs only once a person approved the call: the card goes
through the same approval as the chat. Deciding a request updates its card (status, and
no buttons), so a press on the card as it was before is refused by the gateway.

Who may do what is read from who asks (``gateway.context.caller``), never from what the
model sends: a request is seen only by users of its organisation, and decided only by
those of them who may open screen MNU-3140 (업무 요청 승인). The org is the token's (jwt
mode), else the demo's user directory's (``screens/data/users.json``); the screens are the
directory's. A request of another organisation gets the answer an unknown one gets, so
nobody learns what another organisation has. The approval tools check before a person is
asked to approve (``policy``, a before-tool callback) and again when they run: a run the
gateway started itself, with nobody asking, decides nothing. The card shows 승인 / 거절
only to a user who may decide.

The requests are demo data; each thread keeps its own decisions in its state
(``workRequests``), so every conversation starts from the same pending requests.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
from typing import Any

from google.adk.tools.tool_context import ToolContext

from gateway import a2ui
from gateway.context import Caller, caller
from gateway.examples.navigator.screens import catalog as directory

_REQUEST_ID = re.compile(r"R-\d{3,6}")
# Where a thread keeps the demo's decisions: {request id: "approved" | "rejected"}.
DECISIONS = "workRequests"
PENDING = "pending"
STATUS_LABELS = {PENDING: "대기 중", "approved": "승인됨", "rejected": "거절됨"}
# The demo backend is a little slow, which makes cancelling a running tool visible; the
# variable, read where the tool runs (a worker process too), makes it as slow as it says.
APPROVAL_LATENCY_SECONDS = 0.05
LATENCY_VARIABLE = "NAVIGATOR_APPROVAL_LATENCY_SECONDS"
# The screen whose permission lets a user approve or reject a work request: 업무 요청 승인.
DECIDING_SCREEN = "MNU-3140"
# The catalog's names of the tools that decide a request (``tools/*.json``).
DECIDING_TOOLS = frozenset({"approveWorkRequest", "rejectWorkRequest"})


@dataclasses.dataclass(frozen=True)
class WorkRequest:
    request_id: str
    title: str
    requester: str
    amount: int  # KRW
    org: str
    status: str = PENDING


REQUESTS = {
    request.request_id: request
    for request in (
        WorkRequest("R-1031", "모니터 추가 구매", "정하늘", 320_000, "ORG-01", "approved"),
        WorkRequest("R-1042", "노트북 교체 구매", "김민수", 1_850_000, "ORG-01"),
        WorkRequest("R-1043", "외부 교육 참가비", "이서연", 420_000, "ORG-01"),
        WorkRequest("R-1050", "협력사 유지보수 계약 연장", "박지훈", 12_000_000, "ORG-01"),
        WorkRequest("R-1077", "부서 워크숍 장소 예약", "최유진", 960_000, "ORG-01"),
        WorkRequest("R-2010", "물류 창고 임차 갱신", "한지민", 7_400_000, "ORG-02"),
    )
}


def surface_id(request_id: str) -> str:
    return f"work-request-{request_id}"


def org_of(asker: Caller) -> str | None:
    """The asker's organisation: their token's, else the demo directory's."""
    user = directory.load().users.get(asker.user_id)
    return asker.org or (user.org if user else None)


def may_decide(asker: Caller) -> bool:
    """Whether the asker may approve or reject work requests (of their organisation)."""
    return directory.load().may_open(asker.user_id, DECIDING_SCREEN)


def listed(user_id: str) -> dict[str, Any]:
    """What the portal's list screen shows ``user_id`` (GET /me): the requests of their
    organisation as the demo stores them, the same the card shows, and whether they may
    decide. A thread's decisions are its state (``DECISIONS``), which the page lays over."""
    asker = Caller(user_id)
    org = org_of(asker)
    return {
        "workRequests": [_described(r, r.status) for r in REQUESTS.values() if r.org == org],
        "mayDecide": may_decide(asker),
    }


def refusal(request_id: object, asker: Caller | None, *, deciding: bool) -> str | None:
    """Why ``asker`` may not see (or, ``deciding``, approve or reject) a request; None when
    they may. An unknown request and another organisation's get the same sentence."""
    if asker is None:
        return "Nobody asked for this run, so it shows and decides no work request."
    if not isinstance(request_id, str) or not _REQUEST_ID.fullmatch(request_id):
        return f"{request_id!r} is not a work request id like R-1042"
    org = org_of(asker)
    request = REQUESTS.get(request_id)
    if request is None or request.org != org:
        return _unknown(request_id, org)
    if deciding and not may_decide(asker):
        return (
            f"{asker.user_id} may not approve or reject work requests: that needs screen "
            f"{DECIDING_SCREEN} (업무 요청 승인). Tell the user to ask someone who has it."
        )
    return None


async def show_work_request(requestId: str, tool_context: ToolContext) -> dict[str, Any]:
    """The request, and a card of it for a client that renders A2UI; its buttons only for
    a user who may decide."""
    asker = caller()
    if (refused := refusal(requestId, asker, deciding=False)) is not None:
        return {"error": refused}
    assert asker is not None
    request = REQUESTS[requestId]
    status = _status(request, tool_context)
    card = surface_id(request.request_id)
    return {
        "request": _described(request, status),
        a2ui.OPERATIONS_KEY: [
            a2ui.create_surface(card),
            a2ui.update_components(card, _card(request, status, may_decide(asker))),
            a2ui.update_data_model(card, _data(request, status)),
        ],
    }


async def approve_work_request(
    requestId: str,  # the catalog's parameter name, as the model sends it
    tool_context: ToolContext,
    comment: str = "",
) -> dict[str, Any]:
    """Approves a work request; ADK only calls this after a person approved the call."""
    return await _decide(requestId, "approved", tool_context)


async def reject_work_request(
    requestId: str, tool_context: ToolContext, reason: str = ""
) -> dict[str, Any]:
    """Rejects a work request; ADK only calls this after a person approved the call."""
    return await _decide(requestId, "rejected", tool_context)


async def _decide(request_id: str, decision: str, tool_context: ToolContext) -> dict[str, Any]:
    # Checked again as it runs: a person approved the call, not who may make it.
    if (refused := refusal(request_id, caller(), deciding=True)) is not None:
        return {"error": refused}
    await asyncio.sleep(_latency())
    request = REQUESTS[request_id]
    status = _status(request, tool_context)
    if status != PENDING:
        # Decided before, perhaps on a card this client had not seen change: say so.
        return {
            "error": f"{request_id} is not waiting for a decision: it was {status} already",
            "requestId": request_id,
            "requestStatus": status,
            a2ui.OPERATIONS_KEY: _decided(request, status),
        }
    decisions = dict(tool_context.state.get(DECISIONS) or {})
    tool_context.state[DECISIONS] = {**decisions, request_id: decision}
    by = "approvedBy" if decision == "approved" else "rejectedBy"
    return {
        "status": decision,
        "requestId": request_id,
        by: tool_context.user_id,
        a2ui.OPERATIONS_KEY: _decided(request, decision),
    }


def _latency() -> float:
    try:
        return float(os.environ.get(LATENCY_VARIABLE, APPROVAL_LATENCY_SECONDS))
    except ValueError:  # not a number: the demo's own latency
        return APPROVAL_LATENCY_SECONDS


def _status(request: WorkRequest, tool_context: ToolContext) -> str:
    decisions = tool_context.state.get(DECISIONS) or {}
    return str(decisions.get(request.request_id, request.status))


def _unknown(request_id: str, org: str | None) -> str:
    known = ", ".join(r.request_id for r in REQUESTS.values() if r.org == org) or "none"
    return f"{request_id} is not a work request the demo knows (it knows {known})"


def _described(request: WorkRequest, status: str) -> dict[str, Any]:
    return {
        "requestId": request.request_id,
        "title": request.title,
        "requester": request.requester,
        "amount": request.amount,
        "currency": "KRW",
        "status": status,
    }


def _data(request: WorkRequest, status: str) -> dict[str, Any]:
    """The card's data model: what it shows, and ``status``, which its buttons send."""
    return {
        "requestId": request.request_id,
        "title": f"{request.request_id} · {request.title}",
        "requester": request.requester,
        "amount": f"{request.amount:,}원",
        "status": status,
        "statusLabel": STATUS_LABELS.get(status, status),
    }


def _card(request: WorkRequest, status: str, deciding: bool) -> list[dict[str, Any]]:
    def field(name: str, label: str, path: str) -> list[dict[str, Any]]:
        return [
            {"id": name, "component": "Row", "children": [f"{name}-label", f"{name}-value"]},
            {"id": f"{name}-label", "component": "Text", "text": label, "variant": "caption"},
            {"id": f"{name}-value", "component": "Text", "text": {"path": path}},
        ]

    def button(name: str, label: str, variant: str) -> list[dict[str, Any]]:
        context = {"requestId": request.request_id, "status": {"path": "/status"}}
        return [
            {
                "id": name,
                "component": "Button",
                "child": f"{name}-label",
                "variant": variant,
                "action": {"event": {"name": name, "context": context}},
            },
            {"id": f"{name}-label", "component": "Text", "text": label},
        ]

    return [
        {"id": "root", "component": "Card", "child": "body"},
        {
            "id": "body",
            "component": "Column",
            "children": ["title", "requester", "amount", "status", "actions"],
        },
        {"id": "title", "component": "Text", "text": {"path": "/title"}, "variant": "h3"},
        *field("requester", "요청자", "/requester"),
        *field("amount", "금액", "/amount"),
        *field("status", "상태", "/statusLabel"),
        _actions(status if deciding else None),
        *button("approve", "승인", "primary"),
        *button("reject", "거절", "default"),
    ]


def _actions(status: str | None) -> dict[str, Any]:
    """The row of buttons: 승인 and 거절 while the request waits, none once decided (or for
    a user who may not decide: ``status`` None)."""
    buttons = ["approve", "reject"] if status == PENDING else []
    return {"id": "actions", "component": "Row", "children": buttons}


def _decided(request: WorkRequest, status: str) -> list[dict[str, Any]]:
    """What a decision changes on the request's card: its status, and the buttons go."""
    card = surface_id(request.request_id)
    return [
        a2ui.update_components(card, [_actions(status)]),
        a2ui.update_data_model(card, _data(request, status)),
    ]
