"""The reference client's half of A2UI (docs/a2ui.md) and its markdown, in Chromium, against
a stand-in for the gateway's /ws (surface_stub.py) that streams hand-written surfaces.

What the page must do whatever the agent: draw the basic catalog's components, an unknown
one as an error box; redraw surfaces from a reload's snapshot; send a press as the
contract's input and show what the gateway made of it; render markdown with a script tag
as text; keep long text inside the transcript; and leave a reader who scrolled up where
they are. The same stories against the real demo agent are in test_web_a2ui.py.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.async_api import BrowserContext, expect

from tests.e2e.surface_stub import (
    BASIC_CATALOG,
    SurfaceThread,
    reply_events,
    surface_delta,
    surface_event,
)
from tests.support.browser import NEEDS_CHROMIUM, WebApp, accessibility_problems
from tests.support.servers import RunningGateway

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]

CARD = "work-request-R-1042"


def card_operations(status: str = "승인 대기") -> list[dict[str, Any]]:
    """A work request as the demo's card shows one: title, requester, amount, status, buttons."""
    action = {"requestId": {"path": "/request/id"}, "status": {"path": "/request/status"}}
    return [
        {"version": "v0.9", "createSurface": {"surfaceId": CARD, "catalogId": BASIC_CATALOG}},
        {
            "version": "v0.9",
            "updateComponents": {
                "surfaceId": CARD,
                "components": [
                    {"id": "root", "component": "Card", "child": "body"},
                    {
                        "id": "body",
                        "component": "Column",
                        "children": ["title", "facts", "line", "actions"],
                    },
                    {
                        "id": "title",
                        "component": "Text",
                        "variant": "h3",
                        "text": {"path": "/request/title"},
                    },
                    {
                        "id": "facts",
                        "component": "Row",
                        "children": ["requester", "amount", "status"],
                    },
                    {
                        "id": "requester",
                        "component": "Text",
                        "text": {
                            "call": "formatString",
                            "args": {"value": "요청자 ${/request/requester}"},
                            "returnType": "string",
                        },
                    },
                    {
                        "id": "amount",
                        "component": "Text",
                        "text": {
                            "call": "formatCurrency",
                            "args": {"value": {"path": "/request/amount"}, "currency": "KRW"},
                            "returnType": "string",
                        },
                    },
                    {
                        "id": "status",
                        "component": "Text",
                        "variant": "caption",
                        "text": {"path": "/request/status"},
                    },
                    {"id": "line", "component": "Divider"},
                    {"id": "actions", "component": "Row", "children": ["approve", "reject"]},
                    {
                        "id": "approve",
                        "component": "Button",
                        "variant": "primary",
                        "child": "approve-label",
                        "action": {"event": {"name": "approve", "context": action}},
                    },
                    {"id": "approve-label", "component": "Text", "text": "승인"},
                    {
                        "id": "reject",
                        "component": "Button",
                        "child": "reject-label",
                        "action": {"event": {"name": "reject", "context": action}},
                    },
                    {"id": "reject-label", "component": "Text", "text": "거절"},
                ],
            },
        },
        {
            "version": "v0.9",
            "updateDataModel": {
                "surfaceId": CARD,
                "path": "/",
                "value": {
                    "request": {
                        "id": "R-1042",
                        "title": "노트북 교체 요청",
                        "requester": "김민수",
                        "amount": 1850000,
                        "status": status,
                    }
                },
            },
        },
    ]


async def test_a_card_is_drawn_survives_a_reload_and_its_buttons_send_the_contracts_input(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    stub = SurfaceThread()
    stub.answer("R-1042 보여줘", [surface_event("a2ui-surface-card-1", card_operations())])
    page = await context.new_page()
    await stub.serve(page)
    app = await WebApp.open(context, gateway, "demo", page=page)

    await app.say("R-1042 보여줘")

    card = app.surface(CARD)
    await expect(card).to_contain_text("노트북 교체 요청")
    await expect(card).to_contain_text("요청자 김민수")
    await expect(card).to_contain_text("₩1,850,000")
    await expect(card).to_contain_text("승인 대기")
    await expect(card.get_by_role("heading", name="노트북 교체 요청")).to_be_visible()
    await app.wait_idle()
    assert await accessibility_problems(page) == []
    # Every input says which catalogs the page draws, as the contract's context entry.
    capabilities = [
        e for e in stub.inputs[0]["context"] if e["description"] == "a2uiClientCapabilities"
    ]
    assert [json.loads(e["value"]) for e in capabilities] == [
        {"supportedCatalogIds": [BASIC_CATALOG]}
    ]

    await app.reload()
    card = app.surface(CARD)
    await expect(card).to_contain_text("₩1,850,000")
    await expect(app.user_messages).to_have_text(["R-1042 보여줘"])

    await card.get_by_role("button", name="승인").click()

    await expect(app.transcript.locator(".action-line")).to_have_text(
        ["▸ '승인' 버튼을 눌렀습니다"]
    )
    await app.last_reply_contains("요청을 받았습니다.")
    [pressed] = stub.actions
    assert pressed.pop("timestamp").endswith("Z")
    assert pressed == {
        "name": "approve",
        "surfaceId": CARD,
        "sourceComponentId": "approve",
        "context": {"requestId": "R-1042", "status": "승인 대기"},
    }
    action_input = stub.inputs[-1]
    assert action_input["messages"] == []
    assert any(e["description"] == "a2uiClientCapabilities" for e in action_input["context"])

    # The gateway finds the card stale: the page says so, with the gateway's sentence.
    await app.wait_idle()
    stub.refuse = "The card for R-1042 is out of date: its status changed. Ask to see it again."
    await card.get_by_role("button", name="거절").click()
    refusal = app.transcript.locator(".error-line").last
    await expect(refusal).to_contain_text("카드의 요청을 처리할 수 없습니다.")
    await refusal.get_by_text("자세히").click()
    await expect(refusal).to_contain_text("its status changed")
    await app.wait_idle()
    await app.reload()
    await expect(app.transcript.locator(".action-line")).to_have_count(1)
    await expect(app.surface(CARD)).to_contain_text("노트북 교체 요청")
    assert not stub.problems


async def test_the_basic_catalog_is_drawn_updates_apply_and_an_unknown_component_is_an_error_box(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    gallery = "gallery"
    dot = (
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
        "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    )
    components = [
        {
            "id": "root",
            "component": "Column",
            "children": ["heading", "body", "people", "icons", "picture", "chart", "later"],
        },
        {"id": "heading", "component": "Text", "variant": "h2", "text": "팀 **현황**"},
        {
            "id": "body",
            "component": "Text",
            "text": "**굵게**와 `code`, <script>window.__pwned = 1</script>",
        },
        {
            "id": "people",
            "component": "List",
            "children": {"componentId": "person", "path": "/people"},
        },
        {"id": "person", "component": "Row", "children": ["person-name", "person-count"]},
        {"id": "person-name", "component": "Text", "text": {"path": "name"}},
        {
            "id": "person-count",
            "component": "Text",
            "text": {
                "call": "formatString",
                "args": {"value": "${/unit} ${count}건"},
                "returnType": "string",
            },
        },
        {"id": "icons", "component": "Row", "children": ["mail", "custom"]},
        {"id": "mail", "component": "Icon", "name": "mail"},
        {"id": "custom", "component": "Icon", "name": {"svgPath": "M4 4h16v16H4z"}},
        {
            "id": "picture",
            "component": "Image",
            "url": dot,
            "description": "점 하나",
            "variant": "icon",
        },
        {"id": "chart", "component": "PieChart", "values": [1, 2]},
    ]
    first = [
        {"version": "v0.9", "createSurface": {"surfaceId": gallery, "catalogId": BASIC_CATALOG}},
        {"version": "v0.9", "updateComponents": {"surfaceId": gallery, "components": components}},
        {
            "version": "v0.9",
            "updateDataModel": {
                "surfaceId": gallery,
                "path": "/",
                "value": {
                    "unit": "요청",
                    "people": [{"name": "김민수", "count": 2}, {"name": "이서연", "count": 5}],
                },
            },
        },
    ]
    stub = SurfaceThread()
    stub.answer(
        "보여줘",
        [
            surface_event("a2ui-surface-gallery-1", first),
            surface_delta(
                "a2ui-surface-gallery-1",
                [
                    {
                        "version": "v0.9",
                        "updateDataModel": {
                            "surfaceId": gallery,
                            "path": "/people/1/count",
                            "value": 6,
                        },
                    }
                ],
            ),
            *reply_events("reply-gallery", "목록을 보여 드렸습니다."),
            # A later tool call's message updates the surface drawn above it.
            surface_event(
                "a2ui-surface-gallery-2",
                [
                    {
                        "version": "v0.9",
                        "updateComponents": {
                            "surfaceId": gallery,
                            "components": [
                                {"id": "later", "component": "Text", "text": "나중에 더한 줄"}
                            ],
                        },
                    }
                ],
            ),
        ],
    )
    stub.answer(
        "닫아줘",
        [
            surface_event(
                "a2ui-surface-gallery-3",
                [{"version": "v0.9", "deleteSurface": {"surfaceId": gallery}}],
            )
        ],
    )
    page = await context.new_page()
    await stub.serve(page)
    app = await WebApp.open(context, gateway, "demo", page=page)

    await app.say("보여줘")

    surface = app.surface(gallery)
    await expect(surface.get_by_role("heading", name="팀 현황")).to_be_visible()
    await expect(surface.locator("strong", has_text="굵게")).to_be_visible()
    await expect(surface).to_contain_text("<script>window.__pwned = 1</script>")
    people = surface.get_by_role("listitem")
    await expect(people).to_have_text(
        [re.compile(r"김민수\s*요청 2건"), re.compile(r"이서연\s*요청 6건")]
    )
    await expect(surface.locator('[data-a2ui-id="mail"]')).to_have_text("✉")
    await expect(surface.locator("svg path")).to_have_attribute("d", "M4 4h16v16H4z")
    await expect(surface.get_by_role("img", name="점 하나")).to_be_visible()
    await expect(surface.locator(".a2ui-error")).to_contain_text("알 수 없는 구성 요소 'PieChart'")
    await expect(surface).to_contain_text("나중에 더한 줄")
    # One surface, drawn where its createSurface came; the later message draws nothing itself.
    await expect(app.transcript.locator(".a2ui-surface")).to_have_count(1)
    assert await page.evaluate("window.__pwned") is None
    await app.wait_idle()
    assert await accessibility_problems(page) == []

    await app.say("닫아줘")
    await expect(app.transcript.locator(".a2ui-surface")).to_have_count(0)
    await app.wait_idle()
    await app.reload()
    await expect(app.user_messages).to_have_text(["보여줘", "닫아줘"])
    await expect(app.transcript.locator(".a2ui-surface")).to_have_count(0)
    assert not stub.problems


async def test_markdown_renders_a_script_tag_as_text_long_text_wraps_and_a_reader_scrolled_up_stays(
    context: BrowserContext, gateway: RunningGateway
) -> None:
    token = "R-1042/" + "x" * 300
    reply = (
        "**굵은 글씨**와 [링크](https://example.com)\n\n"
        '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">\n\n'
        "| 번호 | 상태 |\n|---|---|\n| R-1042 | 승인 대기 |\n\n"
        f"긴 토큰: {token}\n\n" + "\n\n".join(f"{n}번째 줄입니다." for n in range(1, 80))
    )
    long_call = [
        {"type": "TOOL_CALL_START", "toolCallId": "call-long", "toolCallName": "find_screen"},
        {
            "type": "TOOL_CALL_ARGS",
            "toolCallId": "call-long",
            "delta": json.dumps({"query": token}),
        },
        {"type": "TOOL_CALL_END", "toolCallId": "call-long"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "result-long",
            "toolCallId": "call-long",
            "content": json.dumps({"screens": [{"name": token}]}),
        },
    ]
    stub = SurfaceThread()
    stub.answer("길게", [*long_call, *reply_events("reply-long", reply, chunks=120)])
    stub.pace = 0.02
    page = await context.new_page()
    await stub.serve(page)
    app = await WebApp.open(context, gateway, "demo", page=page)
    transcript = page.locator("#transcript")

    await app.say("길게")
    await expect(app.replies.last).to_contain_text("10번째 줄입니다.")
    # The reader scrolls up to read while the reply goes on.
    await transcript.evaluate(
        "(el) => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); }"
    )
    await expect(app.replies.last).to_contain_text("50번째 줄입니다.")
    assert await transcript.evaluate("(el) => el.scrollTop") == 0, (
        "the transcript pulled the reader down"
    )
    jump = page.get_by_role("button", name="최근 메시지")
    await expect(jump).to_be_visible()
    await jump.click()
    await app.wait_idle()
    await expect(jump).to_be_hidden()
    at_end = "(el) => el.scrollHeight - el.scrollTop - el.clientHeight < 24"
    assert await transcript.evaluate(at_end), "the button brings the reader back to the end"

    text = app.replies.last
    await expect(text.locator("strong")).to_have_text("굵은 글씨")
    await expect(text.get_by_role("link", name="링크")).to_have_attribute(
        "rel", "noopener noreferrer"
    )
    await expect(text.get_by_role("table")).to_contain_text("승인 대기")
    await expect(text).to_contain_text("<script>window.__pwned = 1</script>")
    await expect(text.locator("script, img")).to_have_count(0)
    assert await page.evaluate("window.__pwned") is None
    # Long tokens wrap: neither the transcript nor a tool row scrolls sideways.
    assert await transcript.evaluate("(el) => el.scrollWidth <= el.clientWidth")
    row = app.activity("find_screen").last
    assert await row.evaluate("(el) => el.scrollWidth <= el.clientWidth")

    # Each message has its time and a copy button that copies what was said, as written.
    await context.grant_permissions(["clipboard-read", "clipboard-write"])
    reply_item = page.locator('#transcript .msg.assistant[data-message-id="reply-long"]')
    await expect(reply_item.locator("time")).to_have_count(1)
    await expect(reply_item).to_contain_text("업무 도우미")
    await reply_item.get_by_role("button", name="메시지 복사").click()
    assert await page.evaluate("navigator.clipboard.readText()") == reply
    await expect(page.locator("#transcript .msg.user time")).to_have_count(1)
    await app.reload()
    await expect(reply_item.locator("time")).to_have_count(1)
    assert not stub.problems
