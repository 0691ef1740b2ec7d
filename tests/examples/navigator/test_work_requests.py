"""The demo's work requests know who asks (issue 27, item 6): `guest`, denied screen MNU-3140
(업무 요청 승인), is not asked to approve R-1042 and cannot decide it by a press either;
`other-org` (ORG-02) neither sees nor decides ORG-01's R-1042; the card offers 승인 / 거절
only to a user who may decide. Over /ws with the demo's scripted model, as the demo runs."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.context import Caller
from gateway.examples.navigator import work_requests
from tests.support.agui import new_id, outcome, text_of, tool_calls, tool_result, user_input
from tests.support.servers import RunningGateway
from tests.support.surfaces import BASIC, CARD

pytestmark = pytest.mark.server


def buttons(events: list[dict[str, Any]]) -> list[str]:
    """The children of the card's row of buttons, as the stream painted it."""
    [card] = [e for e in events if e["type"] == "ACTIVITY_SNAPSHOT"]
    for operation in card["content"]["operations"]:
        for component in operation.get("updateComponents", {}).get("components", []):
            if component["id"] == "actions":
                children: list[str] = component["children"]
                return children
    raise AssertionError("the card has no row of buttons")


async def test_guest_is_not_asked_to_approve_r1042(gateway: RunningGateway) -> None:
    async with gateway.socket("guest") as ws:
        events = await ws.run(user_input(new_id("t"), "R-1042 승인해줘"))
    # Refused before any approval: the run ends without an interrupt, and says why.
    assert outcome(events)["type"] == "success"
    assert "MNU-3140" in tool_result(events, "approveWorkRequest")["error"]
    assert "처리하지 못했습니다" in text_of(events)


async def test_guest_sees_r1042_without_buttons_and_a_forged_press_decides_nothing(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket("guest") as ws:
        shown = await ws.run(user_input(thread, "R-1042 보여줘", context=BASIC))
        assert tool_result(shown, "show_work_request")["request"]["status"] == "pending"
        assert buttons(shown) == []
        # A client that sends the press anyway (the card's button exists, unshown).
        frame = user_input(thread, "", context=BASIC)
        frame["messages"] = []
        pressed = {
            "name": "approve",
            "surfaceId": CARD,
            "sourceComponentId": "approve",
            "timestamp": "2026-12-04T10:00:00Z",
            "context": {"requestId": "R-1042", "status": "pending"},
        }
        frame["forwardedProps"] = {"a2uiAction": {"userAction": pressed}}
        refused = await ws.refused(frame)
    # The gateway takes no press on a button the card does not show.
    assert (
        refused["code"] == "VALIDATION_ERROR" and "no longer shows 'approve'" in refused["message"]
    )


async def test_the_card_offers_buttons_to_who_may_decide(gateway: RunningGateway) -> None:
    async with gateway.socket("demo") as ws:
        events = await ws.run(user_input(new_id("t"), "R-1042 보여줘", context=BASIC))
    assert buttons(events) == ["approve", "reject"]


@pytest.mark.parametrize("asks", ["R-1042 보여줘", "R-1042 승인해줘", "R-1042 거절해줘"])
async def test_another_organisation_neither_sees_nor_decides_r1042(
    gateway: RunningGateway, asks: str
) -> None:
    async with gateway.socket("other-org") as ws:
        events = await ws.run(user_input(new_id("t"), asks, context=BASIC))
    assert outcome(events)["type"] == "success"  # no approval asked
    assert not [e for e in events if e["type"] == "ACTIVITY_SNAPSHOT"]
    [call] = tool_calls(events)
    error = tool_result(events, call["name"])
    # The answer an unknown request gets: nothing of ORG-01 is named.
    assert error == {"error": "R-1042 is not a work request the demo knows (it knows R-2010)"}
    assert "노트북" not in text_of(events) and "김민수" not in text_of(events)


async def test_another_organisation_sees_its_own_request(gateway: RunningGateway) -> None:
    async with gateway.socket("other-org") as ws:
        events = await ws.run(user_input(new_id("t"), "R-2010 보여줘", context=BASIC))
    assert tool_result(events, "show_work_request")["request"]["requestId"] == "R-2010"
    assert buttons(events) == []  # other-org may not open MNU-3140


@pytest.mark.unit
def test_the_rules() -> None:
    refusal = work_requests.refusal
    assert refusal("R-1042", Caller("demo"), deciding=True) is None
    assert refusal("R-1042", Caller("guest"), deciding=False) is None
    assert "MNU-3140" in str(refusal("R-1042", Caller("guest"), deciding=True))
    # The token's org wins over the directory's.
    assert refusal("R-2010", Caller("demo", org="ORG-02"), deciding=False) is None
    assert "not a work request" in str(
        refusal("R-1042", Caller("demo", org="ORG-02"), deciding=False)
    )
    # A user the directory does not know sees nothing and decides nothing.
    assert "not a work request" in str(refusal("R-1042", Caller("mallory"), deciding=False))
    # A run nobody asked for (one the gateway starts itself) decides nothing.
    assert "Nobody asked" in str(refusal("R-1042", None, deciding=True))
    assert "not a work request id" in str(refusal({"id": 1}, Caller("demo"), deciding=True))
