"""Snapshots rebuilt from the store repeat what was streamed live, id for id.

Every snapshot is validated against the official ``ag_ui.core`` models, and the operator
commands are checked on a real database file.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ag_ui.core import MessagesSnapshotEvent
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.apps import App
from google.adk.events import Event, EventActions
from google.adk.runners import Runner
from google.adk.sessions import Session
from google.adk.tools import LongRunningFunctionTool
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types
from pydantic import Field

from gateway import a2ui
from gateway import wire as p
from gateway.a2ui.catalogs import CAPABILITIES, client_catalogs
from gateway.a2ui.plugin import RunSurfaces, SurfacePlugin
from gateway.a2ui.surfaces import Surfaces
from gateway.cli.operator import ThreadNotFoundError, export_thread, list_threads
from gateway.context import Caller, asked_by
from gateway.examples.navigator.agent import APP_NAME
from gateway.examples.navigator.scripted import ScriptedLlm
from gateway.examples.navigator.work_requests import show_work_request
from gateway.store import SessionService
from gateway.store.cut_off import LEGACY_NOTE, NOTES, Ending, cut_off_reply
from gateway.translate.history import event_messages, messages_snapshot, state_snapshot
from gateway.translate.translator import CONFIRMATION_CALL, RunTranslator
from tests.support.adk_events import call, event, result, text
from tests.support.agui import new_id, user_input
from tests.support.servers import running_gateway
from tests.support.stores import session_store

pytestmark = pytest.mark.unit

APP = APP_NAME  # the demo App's, whose threads the gateway keeps
BASIC = a2ui.BASIC_CATALOG_ID


def valid(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    MessagesSnapshotEvent.model_validate({"type": "MESSAGES_SNAPSHOT", "messages": messages})
    return messages


# --- the shape of each message ----------------------------------------------------------


def test_a_conversation_with_server_and_client_tools() -> None:
    agui = {"runId": "r1", "messageId": "m-user"}
    events = [
        event("user", text("업무 요청 목록 화면 열어줘"), custom_metadata={"agui": agui}),
        event("agent", call("c1", "find_screen", query="업무 요청")),
        event("agent", result("c1", "find_screen", screens=[{"screenId": "MNU-3120"}])),
        event("agent", text("찾았어요. "), call("c2", "navigateToScreen", screenId="MNU-3120")),
        event(
            "user",
            result("c2", "navigateToScreen", status="navigated"),
            custom_metadata={"agui": {"runId": "r2", "toolMessageIds": {"c2": "m-tool"}}},
        ),
        event("agent", text("이동했습니다.")),
    ]
    assert valid(messages_snapshot(events)) == [
        {"id": "m-user", "role": "user", "content": "업무 요청 목록 화면 열어줘"},
        {
            "id": events[1].id,
            "role": "assistant",
            "name": "agent",
            "toolCalls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "find_screen", "arguments": '{"query":"업무 요청"}'},
                }
            ],
        },
        {
            "id": "tr-c1",
            "role": "tool",
            "toolCallId": "c1",
            "content": '{"screens":[{"screenId":"MNU-3120"}]}',
        },
        {
            "id": events[3].id,
            "role": "assistant",
            "name": "agent",
            "content": "찾았어요. ",
            "toolCalls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {
                        "name": "navigateToScreen",
                        "arguments": '{"screenId":"MNU-3120"}',
                    },
                }
            ],
        },
        {
            "id": "m-tool",
            "role": "tool",
            "toolCallId": "c2",
            "content": '{"status":"navigated"}',
        },
        {"id": events[5].id, "role": "assistant", "name": "agent", "content": "이동했습니다."},
    ]


def test_a_browsers_result_reads_as_it_sent_it_where_the_models_json_would_not() -> None:
    # The model read {"result": "navigated"}; the browser sent the word.
    agui = {"toolMessageIds": {"c2": "m-tool"}, "toolMessageContents": {"c2": "navigated"}}
    events = [
        event("agent", call("c2", "navigateToScreen", screenId="MNU-3120")),
        event(
            "user",
            result("c2", "navigateToScreen", result="navigated"),
            custom_metadata={"agui": agui},
        ),
    ]
    [_, answer] = valid(messages_snapshot(events))
    assert answer == {"id": "m-tool", "role": "tool", "toolCallId": "c2", "content": "navigated"}


def test_a_browsers_result_kept_in_its_own_words_is_not_written_as_json_too() -> None:
    """The store's projection shows the browser's words as it sent them, and does not dump
    the answer the model reads for nothing (a default to ``dict.get`` is made every time)."""
    written: list[object] = []

    class Counted:
        def __str__(self) -> str:
            written.append(self)
            return "counted"

    agui = {"toolMessageIds": {"c2": "m-tool"}, "toolMessageContents": {"c2": "navigated"}}
    answer = event(
        "user",
        result("c2", "navigateToScreen", result=Counted()),
        custom_metadata={"agui": agui},
    )
    [shown] = event_messages(answer)
    assert shown["content"] == "navigated"
    assert written == []
    # Without its own words, the answer is shown as the model read it.
    del agui["toolMessageContents"]
    [shown] = event_messages(answer)
    assert shown["content"] == '{"result":"counted"}'
    assert len(written) == 1


def test_what_a_snapshot_leaves_out_and_where_thoughts_go() -> None:
    first = event("user", text("hi"))  # no gateway metadata: the ADK event id stands in
    events = [
        first,
        event("agent", text("str"), partial=True),
        event("agent", text("thinking...", thought=True), text("streamed answer")),
        Event(invocation_id="inv", author="agent", actions=EventActions(state_delta={"x": 1})),
        event("agent", text("only a thought", thought=True)),
        event("agent", result("lost", "find_screen", ok=True)),  # its call is outside the window
    ]
    assert valid(messages_snapshot(events)) == [
        {"id": first.id, "role": "user", "content": "hi"},
        # Thoughts are a reasoning message before the reply, under the id they streamed with.
        {"id": "rs-" + events[2].id, "role": "reasoning", "content": "thinking..."},
        {"id": events[2].id, "role": "assistant", "name": "agent", "content": "streamed answer"},
        {"id": "rs-" + events[4].id, "role": "reasoning", "content": "only a thought"},
    ]


def test_an_interrupted_run_stored_with_the_old_note_shows_the_mark_not_the_note() -> None:
    mark = {"agui": {"interrupted": True, "runId": "r1"}}
    events = [
        event("user", text("열어줘"), custom_metadata={"agui": {"messageId": "m1"}}),
        event("agent", call("c1", "find_screen", query="x")),
        event("agent", result("c1", "find_screen", error="interrupted"), custom_metadata=mark),
        event("agent", text(LEGACY_NOTE), id="e-note", custom_metadata=mark),
    ]
    messages = valid(messages_snapshot(events))
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[2] == {
        "id": "tr-c1",
        "role": "tool",
        "toolCallId": "c1",
        "content": '{"error":"interrupted"}',
    }
    # Cut off before any text: a message with the mark and nothing to show.
    assert messages[3] == {
        "id": "e-note",
        "role": "assistant",
        "name": "agent",
        "metadata": {"ended": "interrupted"},
    }


def test_a_message_cut_off_mid_stream_with_the_old_note_shows_its_text_alone() -> None:
    mark = {"agui": {"interrupted": True, "runId": "r1"}}
    cut = event(
        "agent",
        text("안녕하세요, 저는 "),
        text("\n\n" + LEGACY_NOTE),
        id="e-streamed",
        custom_metadata=mark,
    )
    assert valid(event_messages(cut)) == [
        {
            "id": "e-streamed",
            "role": "assistant",
            "name": "agent",
            "content": "안녕하세요, 저는 ",
            "metadata": {"ended": "interrupted"},
        }
    ]


@pytest.mark.parametrize("ending", list(Ending))
def test_a_cut_off_reply_shows_the_streamed_text_and_how_it_ended(ending: Ending) -> None:
    reply = cut_off_reply(
        message_id="e-streamed",
        invocation_id="inv",
        author="agent",
        text="안녕하세요, 저는 ",
        ending=ending,
        metadata={"runId": "r1", "subagent": {"id": "agent/e1", "parent": None}},
    )
    # The model reads that it was cut off; the client sees only what it was streamed.
    assert reply.content is not None and len(reply.content.parts or []) == 2
    assert valid(event_messages(reply)) == [
        {
            "id": "e-streamed",
            "role": "assistant",
            "name": "agent",
            "content": "안녕하세요, 저는 ",
            "subagentRunId": "agent/e1",
            "metadata": {"ended": ending.value},
        }
    ]


def test_a_note_without_the_mark_is_text_like_any_other() -> None:
    # Only the gateway's mark makes a text part a note: a model that says it is shown.
    said = event("agent", text(NOTES[Ending.STOPPED]), id="e1")
    assert event_messages(said)[0]["content"] == NOTES[Ending.STOPPED]
    assert "metadata" not in event_messages(said)[0]


def approval_flow() -> list[Event]:
    """An approval as ADK stores it: call, placeholder, request, the user's yes, result."""
    confirmation = ToolConfirmation(hint="R-1042 승인?")
    request = call(
        "c6", CONFIRMATION_CALL, originalFunctionCall={"id": "c5", "name": "approveWorkRequest"}
    )
    return [
        event("user", text("R-1042 승인해 줘"), custom_metadata={"agui": {"messageId": "m1"}}),
        event("agent", call("c5", "approveWorkRequest", requestId="R-1042")),
        event(
            "agent",
            result("c5", "approveWorkRequest", error="needs confirmation"),
            actions=EventActions(requested_tool_confirmations={"c5": confirmation}),
        ),
        event("agent", request, long_running_tool_ids={"c6"}),
        event(
            "user",
            result("c6", CONFIRMATION_CALL, confirmed=True),
            custom_metadata={"agui": {"toolMessageIds": {"c6": "m-yes"}}},
        ),
        event("agent", result("c5", "approveWorkRequest", status="approved")),
        event("agent", text("승인했습니다.")),
    ]


def test_an_approval_shows_as_the_guarded_call_and_its_real_result() -> None:
    events = approval_flow()
    messages = valid(messages_snapshot(events))
    assert [(m["role"], m["id"]) for m in messages] == [
        ("user", "m1"),
        ("assistant", events[1].id),
        ("tool", "tr-c5"),
        ("assistant", events[6].id),
    ]
    assert messages[2]["content"] == '{"status":"approved"}'
    # The user's answer to the request is an event's message on its own, then left out
    # because no message of the snapshot makes the call it answers.
    assert event_messages(events[4]) == [
        {"id": "m-yes", "role": "tool", "toolCallId": "c6", "content": '{"confirmed":true}'}
    ]


def test_state_snapshot_hides_temp_state_only() -> None:
    session = Session(
        id="t",
        app_name=APP,
        user_id="u",
        state={"a": 1, "app:b": 2, "user:c": 3, "temp:d": 4},
    )
    assert state_snapshot(session) == {"a": 1, "app:b": 2, "user:c": 3}


# --- whole threads from the store ----------------------------------------------------


@contextlib.asynccontextmanager
async def approval_thread(
    db: str, **options: Any
) -> AsyncIterator[tuple[SessionService, list[Event]]]:
    """A store holding ``approval_flow`` as thread t1 of the demo user, and its events."""
    store = session_store(db, **options)
    await store.open()
    try:
        session = await store.create_session(app_name=APP, user_id="demo", session_id="t1")
        events = approval_flow()
        for stored in events:
            await store.append_event(session, stored)
        yield store, events
    finally:
        await store.close()


async def test_the_store_gives_a_whole_thread_past_its_window(db: str) -> None:
    async with approval_thread(db, history_window=2) as (store, events):
        messages, latest = await store.thread_messages(APP, "demo", "t1")
        assert messages == messages_snapshot(events) and len(messages) == 4
        assert latest == events[-1].id
        assert await store.thread_messages(APP, "someone-else", "t1") == ([], None)
        assert await store.thread_messages(APP, "demo", "unknown") == ([], None)


async def test_a_page_keeps_when_each_message_a_person_reads_was_stored(db: str) -> None:
    async with approval_thread(db) as (store, events):
        page = await store.thread_page(APP, "demo", "t1")
    stamps = {event.id: event.timestamp for event in events}
    said = [m for m in page.messages if m["role"] in ("user", "assistant")]
    assert said and set(page.times) == {m["id"] for m in said}
    for message in said:  # a user's message keeps its own id; the model's, its event's
        assert page.times[message["id"]] in stamps.values()
    assert page.times[events[-1].id] == stamps[events[-1].id]


@pytest.mark.server
async def test_reattach_shows_a_thread_longer_than_the_history_window() -> None:
    async with running_gateway(history_window=3) as gateway:
        thread = new_id("t")
        user_ids = [new_id("m") for _ in range(4)]
        async with gateway.socket() as ws:
            replies = []
            for user_id in user_ids:
                run = await ws.run(user_input(thread, "안녕", message_id=user_id))
                replies += [e["messageId"] for e in run if e["type"] == "TEXT_MESSAGE_START"]
        async with gateway.socket() as again:
            events = await again.run({"type": "reattach", "threadId": thread})
    [snapshot] = [e["messages"] for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    assert len(snapshot) == 8 > 3
    assert [m["id"] for m in snapshot] == [
        message_id for pair in zip(user_ids, replies, strict=True) for message_id in pair
    ]


# --- live stream and snapshot agree -----------------------------------------------------


def find_screen(query: str) -> dict[str, Any]:
    """Searches the screen catalog."""
    return {"screens": [{"screenId": "MNU-3120", "name": "업무 요청 목록", "query": query}]}


def navigateToScreen(screenId: str, screenName: str = "") -> None:
    """Opens a screen in the browser (the browser answers later)."""
    return None


class Live:
    """What a client saw during the runs: ids and contents of every message."""

    def __init__(self) -> None:
        self.messages: dict[str, str] = {}  # text message id -> text
        self.calls: dict[str, tuple[str, str, str | None]] = {}  # id -> (name, args, parent)
        self.results: dict[str, tuple[str, str]] = {}  # message id -> (call id, content)
        self.activities: dict[str, dict[str, Any]] = {}  # message id -> content

    def saw(self, frames: list[p.Event]) -> None:
        for frame in frames:
            if isinstance(frame, p.TextMessageStart):
                self.messages[frame.message_id] = ""
            elif isinstance(frame, p.TextMessageContent):
                self.messages[frame.message_id] += frame.delta
            elif isinstance(frame, p.ToolCallStart):
                self.calls[frame.tool_call_id] = (frame.tool_call_name, "", frame.parent_message_id)
            elif isinstance(frame, p.ToolCallArgs):
                name, args, parent = self.calls[frame.tool_call_id]
                self.calls[frame.tool_call_id] = (name, args + frame.delta, parent)
            elif isinstance(frame, p.ToolCallResult):
                self.results[frame.message_id] = (frame.tool_call_id, frame.content)
            elif isinstance(frame, p.ActivitySnapshot):
                self.activities[frame.message_id] = frame.content


async def _run(
    runner: Runner, live: Live, run_id: str, message: types.Content, agui: dict[str, Any]
) -> None:
    translator = RunTranslator("t1", run_id)
    live.saw(translator.start())
    asked_by(Caller("demo"))  # as the hub's run does: the demo's tools read who asks
    config = RunConfig(
        streaming_mode=StreamingMode.SSE, custom_metadata={"agui": {"runId": run_id, **agui}}
    )
    async for adk_event in runner.run_async(
        user_id="demo", session_id="t1", new_message=message, run_config=config
    ):
        live.saw(translator.translate(adk_event))
    live.saw(translator.finish())


async def test_snapshot_ids_equal_the_ids_streamed_live(store: SessionService) -> None:
    agent = LlmAgent(
        name="screen_navigator",
        model=ScriptedLlm(),
        tools=[find_screen, LongRunningFunctionTool(navigateToScreen)],
    )
    runner = Runner(app_name=APP, agent=agent, session_service=store, auto_create_session=True)
    live = Live()
    ask = types.Content(role="user", parts=[text("업무 요청 목록 화면 열어줘")])
    await _run(runner, live, "r1", ask, {"messageId": "m-user"})
    (navigate_id,) = [cid for cid, (name, _, _) in live.calls.items() if name == "navigateToScreen"]
    outcome = types.Content(
        role="user", parts=[result(navigate_id, "navigateToScreen", status="navigated")]
    )
    await _run(runner, live, "r2", outcome, {"toolMessageIds": {navigate_id: "m-result"}})
    await runner.close()

    session = await store.get_session(app_name=APP, user_id="demo", session_id="t1")
    assert session is not None
    snapshot = valid(messages_snapshot(session.events))
    assert await store.thread_messages(APP, "demo", "t1") == (snapshot, session.events[-1].id)

    users = [m for m in snapshot if m["role"] == "user"]
    assert users == [{"id": "m-user", "role": "user", "content": "업무 요청 목록 화면 열어줘"}]
    texts = {m["id"]: m["content"] for m in snapshot if m["role"] == "assistant" and "content" in m}
    assert texts == live.messages
    assert "이동했습니다" in " ".join(texts.values())
    calls = {
        c["id"]: (c["function"]["name"], c["function"]["arguments"], m["id"])
        for m in snapshot
        if m["role"] == "assistant"
        for c in m.get("toolCalls", [])
    }
    assert calls == live.calls
    results = {m["id"]: (m["toolCallId"], m["content"]) for m in snapshot if m["role"] == "tool"}
    assert results == {**live.results, "m-result": (navigate_id, '{"status":"navigated"}')}


class Surfaced(ScriptedLlm):
    """The demo's scripted model, keeping every function response it is shown."""

    read: list[dict[str, Any]] = Field(default_factory=list)

    def reply(self, llm_request: Any) -> Any:
        for content in llm_request.contents:
            for part in content.parts or ():
                if part.function_response is not None:
                    self.read.append(dict(part.function_response.response or {}))
        return super().reply(llm_request)


async def unread() -> Surfaces:
    raise AssertionError("a new thread's surfaces are not read")


async def test_a_surface_and_a_press_are_kept_as_they_were_streamed(store: SessionService) -> None:
    model = Surfaced()
    agent = LlmAgent(name="screen_navigator", model=model, tools=[show_work_request])
    plugin = SurfacePlugin()
    app = App(name=APP, root_agent=agent, plugins=[plugin])
    runner = Runner(app=app, session_service=store, auto_create_session=True)
    catalogs = client_catalogs(
        [p.Context(description=CAPABILITIES, value=json.dumps({"supportedCatalogIds": [BASIC]}))]
    )
    live = Live()
    with plugin.offered("r1", RunSurfaces(catalogs, unread, Surfaces())):
        ask = types.Content(role="user", parts=[text("R-1042 보여줘")])
        await _run(runner, live, "r1", ask, {"messageId": "m-user"})
    pressed = {"name": "approve", "surfaceId": "work-request-R-1042", "sourceComponentId": "x"}
    press = types.Content(role="user", parts=[text("User performed action ...")])
    await _run(runner, live, "r2", press, {"messageId": "a2ui-action-1", "a2uiAction": pressed})
    await runner.close()

    messages, _ = await store.thread_messages(APP, "demo", "t1")
    activities = [m for m in valid(messages) if m["role"] == "activity"]
    assert [(m["id"], m["activityType"]) for m in activities] == [
        (next(iter(live.activities)), "a2ui-surface"),
        ("a2ui-action-1", "a2ui-action"),
    ]
    assert activities[0]["content"] == next(iter(live.activities.values()))
    assert activities[1]["content"] == {"userAction": pressed}
    [call] = [m["toolCalls"][0]["id"] for m in messages if m.get("toolCalls")]
    assert activities[0]["id"] == f"a2ui-surface-work-request-R-1042-{call}"
    # The model read the note, never the operations; the client's result shows the same.
    assert model.read and not any(a2ui.OPERATIONS_KEY in read for read in model.read)
    shown = next(read for read in model.read if "request" in read)
    assert shown["a2ui"] == {"shown": ["work-request-R-1042"]}
    [(_, result)] = live.results.values()
    assert json.loads(result) == shown
    card = Surfaces.of_messages(messages).get("work-request-R-1042")
    assert card is not None and card.value_at("/status") == "pending"


# --- operator commands ------------------------------------------------------------------


async def test_operators_list_a_users_threads_and_export_one(db: str) -> None:
    path = db
    server = session_store(path)  # stays open, as a running gateway would
    await server.open()
    try:
        for thread in ("t1", "t2"):
            session = await server.create_session(app_name=APP, user_id="alice", session_id=thread)
            hello = event(
                "user", text(f"hello {thread}"), custom_metadata={"agui": {"messageId": thread}}
            )
            await server.append_event(session, hello)
        await server.create_session(app_name=APP, user_id="bob", session_id="t3")

        threads = await list_threads(path, "alice")
        assert [t["threadId"] for t in threads] == ["t1", "t2"]
        assert all(t["userId"] == "alice" and t["updatedAt"] > 0 for t in threads)
        json.dumps(threads)  # printable as is
        assert await list_threads(path, "nobody") == []

        exported = valid(await export_thread(path, "t2"))
        assert exported == [{"id": "t2", "role": "user", "content": "hello t2"}]
        with pytest.raises(ThreadNotFoundError, match="nope"):
            await export_thread(path, "nope")
    finally:
        await server.close()
    assert await export_thread(path, "t2") == exported  # with the gateway stopped too
