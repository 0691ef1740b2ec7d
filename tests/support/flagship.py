"""The demo's flagship story, which many test modules tell again.

A user asks "업무 요청 목록 화면 열어줘" (``FLAGSHIP``); the model searches the screen catalog
(``find_screen``), finds MNU-3120 and asks the browser to open it (``navigateToScreen``);
only once the browser says it navigated does it answer ``MOVED``. The two stories here are
the ones told through more than one door or model: the flagship itself, and two screens
asked for at once whose answers come back in reverse order and still pair by id.
"""

from __future__ import annotations

from tests.support.agui import new_id, outcome, text_of, tool_answer, tool_calls, user_input
from tests.support.servers import RunningGateway

FLAGSHIP = "업무 요청 목록 화면 열어줘"
MOVED = "업무 요청 목록 화면으로 이동했습니다."


async def flagship_navigated_then_honest_reply(gateway: RunningGateway) -> str:
    """The run pauses on navigateToScreen; the answer comes after the browser's own
    "navigated", as the paused invocation resumed. The thread's id."""
    thread = new_id("t")
    async with gateway.socket() as ws:
        first = await ws.run(user_input(thread, FLAGSHIP))
        search = tool_calls(first, "find_screen")
        assert search and "요청" in search[0]["args"]["query"]
        results = [e for e in first if e["type"] == "TOOL_CALL_RESULT"]
        assert results[0]["toolCallId"] == search[0]["id"]
        assert "MNU-3120" in results[0]["content"]
        [navigate] = tool_calls(first, "navigateToScreen")
        assert navigate["args"]["screenId"] == "MNU-3120"
        # The run pauses on the browser: success with the call listed as pending.
        assert outcome(first) == {"type": "success", "pendingToolCallIds": [navigate["id"]]}
        assert "이동" not in text_of(first)

        second = await ws.run(
            tool_answer(thread, [(navigate["id"], {"status": "navigated", "message": "ok"})])
        )
        assert text_of(second) == "업무 요청 목록 화면으로 이동했습니다."
        assert outcome(second) == {"type": "success"}
        # The continuation is the paused invocation resumed, not a new model call on a new turn.
        assert not tool_calls(second)
    return thread


async def parallel_calls_answered_in_reverse_order_pair_by_id(
    gateway: RunningGateway,
) -> None:
    """Two screens at once, answered in reverse order: each answer pairs with its call by id."""
    thread = new_id("t")
    async with gateway.socket() as ws:
        first = await ws.run(user_input(thread, "MNU-3120 화면하고 MNU-2010 화면 열어줘"))
        calls = tool_calls(first, "navigateToScreen")
        assert [c["args"]["screenId"] for c in calls] == ["MNU-3120", "MNU-2010"]
        assert outcome(first)["pendingToolCallIds"] == [c["id"] for c in calls]
        by_screen = {c["args"]["screenId"]: c["id"] for c in calls}
        answers = [
            (by_screen["MNU-2010"], {"status": "denied"}),
            (by_screen["MNU-3120"], {"status": "navigated"}),
        ]
        reply = text_of(await ws.run(tool_answer(thread, answers)))
        assert "MNU-3120 화면으로 이동했습니다." in reply
        assert "MNU-2010 화면을 열 권한이 없어 이동하지 못했습니다." in reply
