"""The flagship story and the run rules over /ws, with a real websockets client."""

from __future__ import annotations

import asyncio

import pytest

from gateway.examples.navigator.agent import APP_NAME
from tests.support.agui import new_id, outcome, text_of, tool_answer, tool_calls, user_input
from tests.support.backends import record_reads
from tests.support.flagship import (
    FLAGSHIP,
    flagship_navigated_then_honest_reply,
    parallel_calls_answered_in_reverse_order_pair_by_id,
)
from tests.support.servers import RunningGateway, post_run, running_gateway

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def gateway(gateway_on_each_store: RunningGateway) -> RunningGateway:
    """The run rules hold on either store: SQLite in memory, and a PostgreSQL database."""
    return gateway_on_each_store


async def test_flagship_navigated_then_honest_reply(gateway: RunningGateway) -> None:
    await flagship_navigated_then_honest_reply(gateway)


async def test_denied_result_is_not_reported_as_success(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        first = await ws.run(user_input(thread, "open the work request list"))
        [navigate] = tool_calls(first, "navigateToScreen")
        second = await ws.run(
            tool_answer(thread, [(navigate["id"], {"status": "denied", "message": "no access"})])
        )
        reply = text_of(second)
        assert "opened" not in reply.lower() or "could not" in reply.lower()
        assert "do not have access" in reply


async def test_english_intent_and_greeting(gateway: RunningGateway) -> None:
    async with gateway.socket() as ws:
        hello = await ws.run(user_input(new_id("t"), "hello"))
        assert text_of(hello).startswith("Hello!")
        assert outcome(hello) == {"type": "success"}


async def test_streamed_text_is_not_sent_twice(gateway: RunningGateway) -> None:
    async with gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), "자기소개를 길게 해 주세요"))
        contents = [e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
        assert len(contents) >= 24, "a long introduction streams in dozens of chunks"
        text = text_of(events)
        assert text.count("안녕하세요, 저는") == 1
        starts = [e for e in events if e["type"] == "TEXT_MESSAGE_START"]
        assert len(starts) == 1


async def test_runs_on_one_connection_are_processed_in_order(gateway: RunningGateway) -> None:
    async with gateway.socket() as ws:
        inputs = [user_input(new_id("t"), "안녕"), user_input(new_id("t"), "고마워")]
        for frame in inputs:
            await ws.send(frame)
        first = await ws.until_end()
        second = await ws.until_end()
        assert first[0]["runId"] == inputs[0]["runId"]
        assert second[0]["runId"] == inputs[1]["runId"]


async def test_parallel_calls_answered_in_reverse_order_pair_by_id(
    gateway: RunningGateway,
) -> None:
    await parallel_calls_answered_in_reverse_order_pair_by_id(gateway)


async def test_one_of_two_answers_keeps_the_run_paused(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        first = await ws.run(user_input(thread, "MNU-3120 화면하고 MNU-2010 화면 열어줘"))
        one, two = (c["id"] for c in tool_calls(first, "navigateToScreen"))
        partial = await ws.run(tool_answer(thread, [(two, {"status": "navigated"})]))
        assert outcome(partial) == {"type": "success", "pendingToolCallIds": [one]}
        assert not text_of(partial)
        rest = await ws.run(tool_answer(thread, [(one, {"status": "navigated"})]))
        reply = text_of(rest)
        assert reply.count("이동했습니다") == 2


async def test_live_ids_are_the_stored_ids(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket(user="demo") as ws:
        first = await ws.run(user_input(thread, FLAGSHIP))
    session = await gateway.app.hub.engine.session("demo", thread)  # type: ignore[union-attr]
    assert session is not None
    stored = {call.id for event in session.events for call in event.get_function_calls()}
    assert {c["id"] for c in tool_calls(first)} <= stored
    parents = {e["parentMessageId"] for e in first if e["type"] == "TOOL_CALL_START"}
    assert parents <= {event.id for event in session.events}


async def test_second_run_on_a_busy_thread_gets_session_busy(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as owner, gateway.socket() as other:
        await owner.send(user_input(thread, "자기소개를 길게 해 주세요"))
        assert (await owner.next())["type"] == "RUN_STARTED"
        rejecting = user_input(thread, "안녕") | {"forwardedProps": {"gateway": {"busy": "reject"}}}
        busy = await other.refused(rejecting)
        assert busy["type"] == "RUN_ERROR" and busy["code"] == "SESSION_BUSY"
        assert thread in busy["message"]
        finished = await owner.until_end()
        assert outcome(finished) == {"type": "success"}
        # The refused connection is still usable, and so is the thread.
        again = await other.run(user_input(thread, "안녕"))
        assert outcome(again) == {"type": "success"}
        # The first connection watches the thread, so it sees that run live too.
        watched = await owner.until_end()
        assert watched[0]["runId"] == again[0]["runId"]
        assert text_of(watched) == text_of(again)


async def test_a_frame_refused_after_a_run_is_told_in_a_run_of_its_own(
    gateway: RunningGateway,
) -> None:
    async with gateway.socket() as ws:
        [first] = await ws.run("{nope")  # the stream's first event may be a lone RUN_ERROR
        assert first["type"] == "RUN_ERROR"
        thread = new_id("t")
        assert outcome(await ws.run(user_input(thread, "안녕"))) == {"type": "success"}
        # Alone here, it would tell the client that the run above failed.
        answer = tool_answer(thread, [("call-nope", {"status": "navigated"})])
        started, refused = await ws.run(answer)
    assert started["type"] == "RUN_STARTED" and refused["type"] == "RUN_ERROR"
    assert (started["threadId"], started["runId"]) == (thread, answer["runId"])


async def test_malformed_frames_get_validation_errors_and_the_socket_survives(
    gateway: RunningGateway,
) -> None:
    async with gateway.socket() as ws:
        not_json = await ws.refused("{nope")
        assert not_json["code"] == "VALIDATION_ERROR"
        bad = user_input(new_id("t"), "안녕")
        bad["threadId"] = 42
        wrong_type = await ws.refused(bad)
        assert wrong_type["code"] == "VALIDATION_ERROR"
        assert "$.threadId" in wrong_type["message"]
        missing = user_input(new_id("t"), "안녕")
        del missing["messages"][0]["content"]
        no_content = await ws.refused(missing)
        assert "content" in no_content["message"]
        unknown_control = await ws.refused({"type": "explode", "threadId": "x"})
        assert unknown_control["code"] == "VALIDATION_ERROR"
        ok = await ws.run(user_input(new_id("t"), "안녕"))
        assert outcome(ok) == {"type": "success"}


async def test_tool_message_for_an_unknown_thread_or_call(gateway: RunningGateway) -> None:
    unknown = new_id("nothread")
    async with gateway.socket() as ws:
        error = await ws.refused(tool_answer(unknown, [("call-x", {"status": "navigated"})]))
        assert error["code"] == "VALIDATION_ERROR"
        assert "call-x" in error["message"]
        # The refused request left no thread behind for anyone to own.
        assert await gateway.app.hub.engine.thread_owner(unknown) is None
        thread = new_id("t")
        await ws.run(user_input(thread, "안녕"))
        error = await ws.refused(tool_answer(thread, [("call-y", {"status": "navigated"})]))
        assert error["code"] == "VALIDATION_ERROR" and "call-y" in error["message"]
        ok = await ws.run(user_input(thread, "안녕"))
        assert outcome(ok) == {"type": "success"}


async def test_a_run_reads_its_thread_once_and_hands_it_to_adk(
    gateway: RunningGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = gateway.app.hub.engine.sessions
    reads = record_reads(monkeypatch, store)
    thread = new_id("t")
    async with gateway.socket() as ws:
        for _ in range(2):  # a new thread, then the next turn on it
            assert outcome(await ws.run(user_input(thread, "안녕"))) == {"type": "success"}
    # Opening the thread was the only read: the new thread through the writer (a write,
    # ordered with the others), the next turn's, a thread the hub had in hand, beside it
    # (``open_thread(known=True)``). ADK's own read of the session was answered with the
    # opened one.
    assert [read.args[0].func for read in reads] == [store._reads.read_thread]
    session = await store.get_session(app_name=APP_NAME, user_id="demo", session_id=thread)
    assert session is not None and len(session.events) == 6


async def test_answer_to_an_answered_call_is_ignored_with_a_notice(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        [navigate] = tool_calls(await ws.run(user_input(thread, FLAGSHIP)), "navigateToScreen")
        answer = tool_answer(thread, [(navigate["id"], {"status": "navigated"})])
        first = await ws.run(answer)
        assert "이동했습니다" in text_of(first)
        answer["runId"] = new_id("run")
        again = await ws.run(answer)
        notices = [e for e in again if e["type"] == "CUSTOM"]
        assert notices and notices[0]["value"]["code"] == "TOOL_RESULT_IGNORED"
        assert not text_of(again), "the model must not run twice for one answer"


async def test_new_message_supersedes_unanswered_calls(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        await ws.run(user_input(thread, FLAGSHIP))
        follow_up = await ws.run(user_input(thread, "안녕"))
        assert outcome(follow_up) == {"type": "success"}
    session = await gateway.app.hub.engine.session("demo", thread)  # type: ignore[union-attr]
    assert session is not None
    responses = [r.response for e in session.events for r in e.get_function_responses()]
    assert {"status": "no_result", "reason": "superseded"} in responses


async def test_without_the_client_tool_the_model_asks_for_the_menu(
    gateway: RunningGateway,
) -> None:
    async with gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), FLAGSHIP, tools=[]))
        assert not tool_calls(events, "navigateToScreen")
        assert "메뉴" in text_of(events)
        assert outcome(events) == {"type": "success"}


async def test_cancel_on_an_idle_thread_is_a_notice(gateway: RunningGateway) -> None:
    async with gateway.socket() as ws:
        events = await ws.run({"type": "cancel", "threadId": new_id("t")})
        assert [e["type"] for e in events] == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"]
        assert events[1]["value"]["code"] == "NOTHING_TO_CANCEL"


async def test_another_users_cancel_is_access_denied_and_audited(
    gateway: RunningGateway,
) -> None:
    """README: another user cannot cancel a thread's runs (ACCESS_DENIED), running or idle,
    on /ws or the SSE door; the run goes on, and the audit says who tried."""
    running, idle = new_id("t"), new_id("t")
    async with gateway.socket() as owner, gateway.socket("intruder") as intruder:
        await owner.run(user_input(idle, "안녕"))
        await owner.send(user_input(running, "자기소개를 길게 해 주세요"))
        while (await owner.next())["type"] != "TEXT_MESSAGE_CONTENT":
            pass
        for thread in (running, idle):
            refused = await intruder.refused({"type": "cancel", "threadId": thread})
            assert refused["code"] == "ACCESS_DENIED", refused
        assert outcome(await owner.until_end()) == {"type": "success"}
    frame = user_input(idle, "")
    frame["forwardedProps"] = {"gateway": {"cancel": True}}
    status, _, events, _ = await post_run(gateway, frame, user="intruder")
    assert (status, events[-1]["code"]) == (403, "ACCESS_DENIED")
    assert gateway.app.hub.audit is not None
    rows = await gateway.app.hub.audit.query_access(user="intruder")
    denied = [(r.action, r.thread_id, r.door) for r in rows if r.outcome == "ACCESS_DENIED"]
    assert sorted(denied) == sorted(
        [("cancel", running, "ws"), ("cancel", idle, "ws"), ("cancel", idle, "sse")]
    )


async def test_concurrent_threads_run_side_by_side(gateway: RunningGateway) -> None:
    async def one() -> str:
        async with gateway.socket() as ws:
            return text_of(await ws.run(user_input(new_id("t"), "안녕")))

    replies = await asyncio.gather(*(one() for _ in range(8)))
    assert all(reply.startswith("안녕하세요") for reply in replies)


async def test_an_oversized_frame_is_refused_and_the_socket_survives() -> None:
    async with running_gateway(max_frame_bytes=4096) as gateway, gateway.socket() as ws:
        big = user_input(new_id("t"), "안녕" * 1000)  # over 4096, under 4 times that
        error = await ws.refused(big)
        assert error["code"] == "VALIDATION_ERROR" and "limit is 4096" in error["message"]
        ok = await ws.run(user_input(new_id("t"), "안녕"))
        assert outcome(ok) == {"type": "success"}
