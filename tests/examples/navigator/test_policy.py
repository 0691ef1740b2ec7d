"""The navigateToScreen policy and the screen-context allow-list.

The rules are tested as a pure function; the callback is tested inside a real ADK Runner
with the scripted model, the way the gateway runs it, to pin down what ADK does with a
refusal of a long-running (client) tool: the model gets it and answers in the same run,
and no call is left waiting for a browser.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any, cast

import pytest
from google.adk.agents.run_config import RunConfig
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from gateway.adk.hosting import Hosted, runnable_app
from gateway.context import DEFAULT_CONTEXT_ALLOW, RUN_METADATA_KEY, allowed_context, run_context
from gateway.examples.navigator.agent import APP_NAME, build_agent, load_catalog
from gateway.examples.navigator.policy import build_before_tool_callback, navigation_policy
from gateway.examples.navigator.screens import catalog as screen_catalog
from gateway.examples.navigator.screens.catalog import ScreenCatalog
from gateway.examples.navigator.scripted import ScriptedLlm
from gateway.tools.client import CLIENT_TOOLS_KEY

pytestmark = pytest.mark.unit

SIDE_PANEL = {"surface": "side-panel"}


@pytest.fixture(scope="module")
def screens() -> ScreenCatalog:
    return screen_catalog.load()


def refusal(screens: ScreenCatalog, user: str, context: dict[str, str], **args: Any) -> Any:
    return navigation_policy(screens, user, args, context)


# --- the rules -----------------------------------------------------------------------------


def test_a_permitted_screen_from_the_side_panel_may_be_opened(screens: ScreenCatalog) -> None:
    assert refusal(screens, "demo", SIDE_PANEL, screenId="MNU-3120") is None
    # No surface entry means the side panel.
    assert refusal(screens, "demo", {}, screenId="MNU-3120", orgScope="ORG-01") is None


@pytest.mark.parametrize("screen_id", [None, "", "   ", 3120])
def test_screen_id_is_required(screens: ScreenCatalog, screen_id: Any) -> None:
    args = {} if screen_id is None else {"screenId": screen_id}
    found = navigation_policy(screens, "demo", {**args, "routeHint": "/work/requests/list"}, {})
    assert found is not None
    assert (found.status, found.reason) == ("error", "screen_id_required")


def test_route_hint_is_never_a_destination(screens: ScreenCatalog) -> None:
    # A forbidden screen stays forbidden whatever route the call names...
    found = refusal(screens, "guest", {}, screenId="MNU-3120", routeHint="/work/requests/new")
    assert found is not None and found.status == "denied"
    # ...and a wrong route does not stop a permitted screen: the browser uses screenId only.
    assert refusal(screens, "demo", {}, screenId="MNU-3120", routeHint="/admin") is None


def test_a_screen_that_does_not_exist_is_not_found_and_a_forbidden_one_denied(
    screens: ScreenCatalog,
) -> None:
    forbidden = refusal(screens, "guest", {}, screenId="MNU-3120")
    unknown = refusal(screens, "demo", {}, screenId="MNU-9999")
    assert forbidden is not None and unknown is not None
    assert (forbidden.status, forbidden.reason) == ("denied", "screen_not_available")
    assert (unknown.status, unknown.reason) == ("not_found", "screen_not_found")
    assert "권한" not in unknown.message
    # The refusal never names a screen the user may not see.
    assert "업무 요청 목록" not in forbidden.message


def test_an_unknown_user_may_open_nothing(screens: ScreenCatalog) -> None:
    found = refusal(screens, "nobody", {}, screenId="MNU-2010")
    assert found is not None and (found.status, found.reason) == ("denied", "unknown_user")


def test_org_scope_must_be_the_users_own_org(screens: ScreenCatalog) -> None:
    found = refusal(screens, "demo", {}, screenId="MNU-2010", orgScope="ORG-02")
    assert found is not None and (found.status, found.reason) == ("denied", "org_scope_mismatch")
    assert refusal(screens, "other-org", {}, screenId="MNU-2010", orgScope="ORG-02") is None


@pytest.mark.parametrize("surface", ["full-screen", "modal", "popup"])
def test_only_the_side_panel_may_navigate(screens: ScreenCatalog, surface: str) -> None:
    found = refusal(screens, "demo", {"surface": surface}, screenId="MNU-3120")
    assert found is not None and found.status == "not_allowed_here"
    # The model is told to send the user to the menu, with the screen's name.
    assert "메뉴" in found.message and "업무 요청 목록" in found.message
    assert found.as_result() == {
        "status": "not_allowed_here",
        "reason": "surface",
        "message": found.message,
    }


def test_the_surface_is_read_from_the_runs_metadata() -> None:
    config = RunConfig(custom_metadata={RUN_METADATA_KEY: {"context": {"surface": "modal"}}})
    assert run_context(cast(ToolContext, SimpleNamespace(run_config=config))) == {
        "surface": "modal"
    }
    assert run_context(cast(ToolContext, SimpleNamespace(run_config=RunConfig()))) == {}
    assert run_context(cast(ToolContext, SimpleNamespace(run_config=None))) == {}


def test_the_callback_leaves_other_tools_alone(screens: ScreenCatalog) -> None:
    callback = build_before_tool_callback(screens)
    tool = BaseTool(name="find_screen", description="search")
    context = cast(ToolContext, SimpleNamespace(user_id="nobody", run_config=None))
    assert callback(tool, {"query": "요청"}, context) is None


# --- the context allow-list ----------------------------------------------------------------


def test_context_keys_off_the_allow_list_are_dropped_with_a_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    entries = {"surface": "modal", "currentScreen": "MNU-3120", "apiToken": "x", "note": "y"}
    with caplog.at_level(logging.INFO, logger="gateway.context"):
        kept = allowed_context(entries)
    assert kept == {"surface": "modal", "currentScreen": "MNU-3120"}
    assert "apiToken, note" in caplog.text
    assert {"surface", "currentScreen", "selectedIds"} == DEFAULT_CONTEXT_ALLOW
    assert allowed_context(entries, frozenset({"note"})) == {"note": "y"}


def test_nothing_is_logged_when_nothing_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="gateway.context"):
        assert allowed_context({"selectedIds": "R-1042"}) == {"selectedIds": "R-1042"}
    assert caplog.text == ""


# --- inside a real ADK run -----------------------------------------------------------------


def make_runner(screens: ScreenCatalog) -> Runner:
    """The gateway's agent and app, as runner.Engine builds them, with the policy on."""
    catalog = load_catalog()
    agent = build_agent(ScriptedLlm(), catalog)
    agent.before_tool_callback = build_before_tool_callback(screens)
    return Runner(
        app=runnable_app(Hosted(agent, catalog=catalog)),
        session_service=InMemorySessionService(),
        auto_create_session=True,
    )


async def turn(
    runner: Runner, user: str, thread: str, words: str, context: dict[str, str]
) -> list[Event]:
    metadata = {"runId": "run-1", "context": context, CLIENT_TOOLS_KEY: ["navigateToScreen"]}
    message = types.Content(role="user", parts=[types.Part(text=words)])
    return [
        event
        async for event in runner.run_async(
            user_id=user,
            session_id=thread,
            new_message=message,
            run_config=RunConfig(custom_metadata={RUN_METADATA_KEY: metadata}),
        )
    ]


def navigate_calls(events: Iterable[Event]) -> list[tuple[Event, types.FunctionCall]]:
    return [
        (event, call)
        for event in events
        for call in event.get_function_calls()
        if call.name == "navigateToScreen"
    ]


def responses(events: Iterable[Event]) -> dict[str, dict[str, Any]]:
    return {
        response.id or "": dict(response.response or {})
        for event in events
        for response in event.get_function_responses()
    }


def reply(events: list[Event]) -> str:
    """The model's last words in the run, with no call after them (ADK state events may follow)."""
    spoken = [
        index
        for index, event in enumerate(events)
        if not event.partial and event.content and any(p.text for p in event.content.parts or [])
    ]
    assert spoken, "the run ended without a reply"
    assert not any(event.get_function_calls() for event in events[spoken[-1] :])
    content = events[spoken[-1]].content
    assert content is not None
    return "".join(part.text or "" for part in content.parts or [])


async def open_client_calls(runner: Runner, user: str, thread: str) -> list[str]:
    session = await runner.session_service.get_session(
        app_name=APP_NAME, user_id=user, session_id=thread
    )
    assert session is not None
    answered = set(responses(session.events))
    return [
        call.id or ""
        for event in session.events
        for call in event.get_function_calls()
        if call.id in (event.long_running_tool_ids or ()) and call.id not in answered
    ]


async def test_a_refusal_reaches_the_model_and_no_browser_is_asked(
    screens: ScreenCatalog,
) -> None:
    runner = make_runner(screens)
    events = await turn(
        runner, "demo", "t-modal", "업무 요청 목록 화면 열어줘", {"surface": "modal"}
    )

    [(call_event, call)] = navigate_calls(events)
    assert call.args == {
        "screenId": "MNU-3120",
        "screenName": "업무 요청 목록",
        "routeHint": "/work/requests/list",
    }
    # ADK still marks the call long-running: it decides from the tool, before callbacks.
    assert call.id in (call_event.long_running_tool_ids or ())
    # The refusal is the call's response, so nothing is left for a browser to execute...
    assert responses(events)[call.id or ""]["status"] == "not_allowed_here"
    assert await open_client_calls(runner, "demo", "t-modal") == []
    # ...and the run did not pause: the model answered from the refusal.
    answer = reply(events)
    assert "이동했습니다" not in answer
    assert "메뉴에서 업무 요청 목록 화면을 직접 열 수도 있습니다" in answer
    # The menu is hidden behind a full-screen or modal chat: the reply says how to reach it.
    assert "'패널' 보기로 바꾸면" in answer


async def test_a_forbidden_screen_is_refused_and_the_model_says_so(screens: ScreenCatalog) -> None:
    runner = make_runner(screens)
    events = await turn(runner, "guest", "t-guest", "MNU-3120 열어줘", SIDE_PANEL)

    [(_, call)] = navigate_calls(events)
    assert responses(events)[call.id or ""]["status"] == "denied"
    assert await open_client_calls(runner, "guest", "t-guest") == []
    answer = reply(events)
    assert "권한이 없어 이동하지 못했습니다" in answer and "이동했습니다" not in answer


async def test_a_permitted_call_from_the_side_panel_goes_to_the_browser(
    screens: ScreenCatalog,
) -> None:
    runner = make_runner(screens)
    events = await turn(runner, "demo", "t-panel", "업무 요청 목록 화면 열어줘", SIDE_PANEL)

    [(_, call)] = navigate_calls(events)
    assert call.id not in responses(events)
    # The run pauses on the call: the browser's answer, not the gateway, ends the turn.
    assert await open_client_calls(runner, "demo", "t-panel") == [call.id]
    assert not any(part.text for e in events if e.content for part in e.content.parts or [])


async def test_a_thread_goes_on_normally_after_a_refusal(screens: ScreenCatalog) -> None:
    runner = make_runner(screens)
    await turn(runner, "demo", "t-after", "업무 요청 목록 화면 열어줘", {"surface": "full-screen"})
    thanks = await turn(runner, "demo", "t-after", "고마워", {"surface": "full-screen"})
    assert "천만에요" in reply(thanks)
    again = await turn(runner, "demo", "t-after", "업무 요청 목록 화면 열어줘", SIDE_PANEL)
    [(_, call)] = navigate_calls(again)
    assert await open_client_calls(runner, "demo", "t-after") == [call.id]
