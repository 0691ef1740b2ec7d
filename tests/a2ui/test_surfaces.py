"""Issue 17 over /ws: the demo's R-1042 card streamed, repainted, pressed, refused when stale.

Every stream goes through the suite's StreamChecker and the official ``ag_ui.core`` models;
the module runs on SQLite in memory and on PostgreSQL.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway import a2ui
from tests.support.agui import AgUiSocket, new_id, outcome, seq_of, text_of, tool_calls, user_input
from tests.support.servers import RunningGateway
from tests.support.surfaces import BASIC, CARD, renders

pytestmark = pytest.mark.server

SHOW = "R-1042 보여줘"
# What the demo's deciding tools decide, by name.
DECIDED_BY = {"approveWorkRequest": "approved", "rejectWorkRequest": "rejected"}


@pytest.fixture(scope="module")
def gateway(gateway_on_each_store: RunningGateway) -> RunningGateway:
    """Surfaces hold on either store: SQLite in memory, and a PostgreSQL database."""
    return gateway_on_each_store


def pressing(thread: str, name: str = "approve", **user_action: Any) -> dict[str, Any]:
    frame = user_input(thread, "", context=BASIC)
    frame["messages"] = []
    pressed = {
        "name": name,
        "surfaceId": CARD,
        "sourceComponentId": name,
        "timestamp": "2026-12-02T10:00:00Z",
        "context": {"requestId": "R-1042", "status": "pending"},
    }
    frame["forwardedProps"] = {"a2uiAction": {"userAction": pressed | user_action}}
    return frame


async def shown_then_pressed(
    ws: AgUiSocket, thread: str, name: str = "approve"
) -> list[dict[str, Any]]:
    """The card of R-1042, then a press on its button: the run its approval interrupts."""
    await ws.run(user_input(thread, SHOW, context=BASIC))
    return await ws.run(pressing(thread, name))


def answering(thread: str, interrupt_id: str, approved: bool = True) -> dict[str, Any]:
    frame = {**user_input(thread, "", context=BASIC), "messages": []}
    payload = {"approved": approved}
    frame["resume"] = [{"interruptId": interrupt_id, "status": "resolved", "payload": payload}]
    return frame


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def operations(event: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = event["content"]["operations"]
    return found


async def snapshot(gateway: RunningGateway, thread: str, user: str = "demo") -> list[Any]:
    async with gateway.socket(user) as ws:
        events = await ws.run({"type": "reattach", "threadId": thread})
    [messages] = [e["messages"] for e in of_type(events, "MESSAGES_SNAPSHOT")]
    return list(messages)


async def decisions(gateway: RunningGateway, thread: str) -> list[tuple[str, str]]:
    """Every time the demo's approve or reject tool really ran on the thread: (request,
    decision), read from the results the thread stored (a call a person has not approved
    yet has ADK's request for it as its result, without the request's id), whichever
    process ran it."""
    assert gateway.app.hub is not None
    session = await gateway.app.hub.engine.session("demo", thread)
    assert session is not None
    return [
        (str(result.response["requestId"]), DECIDED_BY[result.name])
        for event in session.events
        for result in event.get_function_responses()
        if result.name in DECIDED_BY and result.response and "requestId" in result.response
    ]


async def test_the_card_streams_after_its_result_and_every_reattach_repaints_it(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        events = await ws.run(user_input(thread, SHOW, context=BASIC))
    [call] = tool_calls(events, "show_work_request")
    kinds = [e["type"] for e in events]
    result = kinds.index("TOOL_CALL_RESULT")
    assert kinds[result + 1] == "ACTIVITY_SNAPSHOT"
    card = events[result + 1]
    assert card["messageId"] == f"a2ui-surface-{CARD}-{call['id']}"
    assert card["activityType"] == "a2ui-surface" and card["replace"] is True
    created, components, data = operations(card)
    assert created == {
        "version": "v0.9",
        "createSurface": {"surfaceId": CARD, "catalogId": a2ui.BASIC_CATALOG_ID},
    }
    drawn = {c["id"]: c for c in components["updateComponents"]["components"]}
    assert drawn["root"]["component"] == "Card" and drawn["actions"]["children"] == [
        "approve",
        "reject",
    ]
    assert data["updateDataModel"]["value"]["status"] == "pending"
    assert json.loads(events[result]["content"])["a2ui"] == {"shown": [CARD]}
    assert "카드에서 승인하거나 거절" in text_of(events)

    messages = await snapshot(gateway, thread)
    [tool] = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    assert messages[tool + 1] == {
        "id": card["messageId"],
        "role": "activity",
        "activityType": "a2ui-surface",
        "content": card["content"],
    }
    async with gateway.socket() as ws:
        # What the client saw up to its cursor: the run began (its RUN_STARTED went out
        # before it had its number, docs/first-event.md), and its first numbered event.
        ws.checker.feed(events[0])
        ws.checker.feed(events[1])
        replayed = await ws.run(
            {"type": "reattach", "threadId": thread, "after": seq_of(events[1])}
        )
    assert of_type(replayed, "ACTIVITY_SNAPSHOT") == [card]
    assert of_type(replayed, "MESSAGES_SNAPSHOT") == []  # ^ from the log, not a snapshot


async def test_approving_from_the_card_asks_a_person_first_then_runs_once_and_updates_it(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        asked = await shown_then_pressed(ws, thread)
        [pressed] = of_type(asked, "ACTIVITY_SNAPSHOT")
        assert asked[1] == pressed and pressed["activityType"] == "a2ui-action"
        assert pressed["content"]["userAction"]["sourceComponentId"] == "approve"
        [call] = tool_calls(asked, "approveWorkRequest")
        [interrupt] = outcome(asked)["interrupts"]
        assert interrupt["toolCallId"] == call["id"] and "R-1042" in interrupt["message"]
        assert await decisions(gateway, thread) == []  # nothing runs before a person approves
        approved = await ws.run(answering(thread, interrupt["id"]))
        assert await decisions(gateway, thread) == [("R-1042", "approved")]
        assert text_of(approved) == "R-1042 요청을 승인했습니다."
        [update] = of_type(approved, "ACTIVITY_SNAPSHOT")
        assert update["messageId"] == f"a2ui-surface-{CARD}-{call['id']}"
        actions, data = operations(update)
        assert actions["updateComponents"]["components"] == [
            {"id": "actions", "component": "Row", "children": []}
        ]
        assert data["updateDataModel"]["value"]["status"] == "approved"

        before = await snapshot(gateway, thread)
        stale = await ws.refused(pressing(thread))
        assert stale["code"] == "VALIDATION_ERROR"
        assert stale["message"].startswith(f"The card '{CARD}' has changed since it was drawn")
        assert 'status is now "approved", not "pending"' in stale["message"]
        gone = await ws.refused(
            pressing(thread, context={"requestId": "R-1042", "status": "approved"})
        )
        assert "no longer shows 'approve'" in gone["message"]
    assert await snapshot(gateway, thread) == before  # nothing of the refusals was stored
    assert await decisions(gateway, thread) == [("R-1042", "approved")]
    [kept] = [m for m in before if m["role"] == "activity" and m["activityType"] == "a2ui-action"]
    assert kept == {k: pressed[k] for k in ("activityType", "content")} | {
        "id": pressed["messageId"],
        "role": "activity",
    }


async def test_rejecting_from_the_card_meets_the_same_approval(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        asked = await shown_then_pressed(ws, thread, "reject")
        [interrupt] = outcome(asked)["interrupts"]
        assert "R-1042 건을 거절합니다" in interrupt["message"]
        refused = await ws.run(answering(thread, interrupt["id"], approved=False))
        assert "거절이 승인되지 않아" in text_of(refused)
        assert of_type(refused, "ACTIVITY_SNAPSHOT") == []
        assert await decisions(gateway, thread) == []
        # The card did not change: its buttons still work.
        again = await ws.run(pressing(thread, "reject"))
        [interrupt] = outcome(again)["interrupts"]
        rejected = await ws.run(answering(thread, interrupt["id"]))
    assert text_of(rejected) == "R-1042 요청을 거절했습니다."
    assert await decisions(gateway, thread) == [("R-1042", "rejected")]
    [update] = of_type(rejected, "ACTIVITY_SNAPSHOT")
    assert operations(update)[1]["updateDataModel"]["value"]["statusLabel"] == "거절됨"


@pytest.mark.parametrize(
    ("context", "missing"),
    [
        pytest.param([], "advertised no a2uiClientCapabilities", id="no catalog"),
        pytest.param(
            renders({"catalogId": "acme:plain", "components": {"Text": {}, "Button": {}}},
                    ids=("acme:plain",)),
            "does not render catalog",
            id="another catalog",
        ),
        pytest.param(
            renders({"catalogId": a2ui.BASIC_CATALOG_ID, "components": {"Text": {}, "Row": {}}}),
            "has no component 'Button', 'Card', 'Column'",
            id="a catalog without Card",
        ),
    ],
)  # fmt: skip
async def test_a_client_that_cannot_render_the_card_gets_words_and_the_model_is_told(
    gateway: RunningGateway, context: Any, missing: str
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        events = await ws.run(user_input(thread, SHOW, context=context))
    assert of_type(events, "ACTIVITY_SNAPSHOT") == []
    [result] = of_type(events, "TOOL_CALL_RESULT")
    note = json.loads(result["content"])["a2ui"]
    assert note["shown"] == [] and missing in note["notShown"]
    assert a2ui.OPERATIONS_KEY not in result["content"]
    assert "요청자 김민수, 금액 1,850,000원, 상태 대기 중" in text_of(events)
    messages = await snapshot(gateway, thread)
    assert [m for m in messages if m["role"] == "activity"] == []
    async with gateway.socket() as ws:
        nothing = await ws.refused(pressing(thread))
    assert f"shows no surface '{CARD}'" in nothing["message"]


async def test_hostile_presses_are_refused_and_leave_the_thread_as_it_was(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    deep: Any = "x"
    for _ in range(20):
        deep = {"d": deep}
    async with gateway.socket() as ws:
        await ws.run(user_input(thread, SHOW, context=BASIC))
        before = await snapshot(gateway, thread)
        for frame, said in [
            (pressing(thread, context={"requestId": "R-1042", "blob": "x" * 100_000}), "bytes"),
            (pressing(thread, context={"requestId": deep}), "levels deep"),
            (pressing(thread, context=json.loads("[" * 300 + "]" * 300)), "nested"),
            (pressing(thread, surfaceId=["a"]), "userAction.surfaceId"),
            (pressing(thread, name=None), "userAction.name"),
            (pressing(thread, surfaceId="work-request-R-1043"), "shows no surface"),
            (pressing(thread, sourceComponentId="root"), "does not send 'approve'"),
            (
                pressing(thread) | {"resume": [{"interruptId": "i", "status": "cancelled"}]},
                "not both",
            ),
        ]:
            refused = await ws.refused(frame)
            assert refused["code"] == "VALIDATION_ERROR" and said in refused["message"], refused
    async with gateway.socket("mallory") as ws:
        foreign = await ws.refused(pressing(thread))
        assert foreign["code"] == "ACCESS_DENIED"
    assert await snapshot(gateway, thread) == before
    async with gateway.socket() as ws:  # the thread goes on: the card's press works
        asked = await ws.run(pressing(thread))
    assert outcome(asked)["type"] == "interrupt"


async def test_a_press_is_a_new_turn_that_stops_a_reply_in_progress(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws, gateway.socket() as other:
        await ws.run(user_input(thread, SHOW, context=BASIC))
        await ws.send(user_input(thread, "자기소개를 길게 해 주세요", context=BASIC))
        while (await ws.next())["type"] != "TEXT_MESSAGE_CONTENT":
            pass
        asked = await other.run(pressing(thread))
        stopped = await ws.until_end()
    assert outcome(stopped) == {"type": "cancelled"}
    assert outcome(asked)["type"] == "interrupt"
