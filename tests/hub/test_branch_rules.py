"""The rules around a thread's branches (docs/branches.md): a regenerate while a reply is
going follows the busy policy (refused with ``reject``, the reply stopped with
``interrupt``), the model of a new version reads only its own path, the cap on branches is
a refusal with a code and a sentence, and every move leaves an audit row and a count."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.metrics import sample
from tests.support.agui import new_id, outcome, text_of, user_input
from tests.support.cancels import STORY, storyteller
from tests.support.servers import running_gateway
from tests.support.speakers import Speaker, say

pytestmark = pytest.mark.server


def _branch(frame: dict[str, Any], **props: Any) -> dict[str, Any]:
    return {**frame, "forwardedProps": props}


def _regenerate(thread: str, busy: str | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {"branch": {"before": "m1"}}
    if busy is not None:
        props["gateway"] = {"busy": busy}
    return _branch(user_input(thread, "tell me a story", tools=[], message_id="m1"), **props)


async def test_a_regenerate_mid_reply_follows_the_busy_policy_and_reads_its_own_path() -> None:
    model = Speaker(turns=[[say(STORY)], [say("a short one")]], pace=0.01)
    async with running_gateway(agent=storyteller(model)) as gateway:
        thread = new_id("t")
        async with gateway.socket() as ws, gateway.socket() as other:
            await ws.send(user_input(thread, "tell me a story", tools=[], message_id="m1"))
            while (await ws.next())["type"] != "TEXT_MESSAGE_CONTENT":
                pass
            refused = await other.refused(_regenerate(thread, busy="reject"))
            assert refused["code"] == "SESSION_BUSY"
            # The default policy, interrupt: the story stops, then the turn gets a new version.
            regenerated = await other.run(_regenerate(thread))
            stopped = await ws.until_end()
            assert outcome(stopped)["type"] == "cancelled"
            assert text_of(regenerated) == "a short one"
        # The model was asked the question once per version, and never saw the first reply.
        _story, short = model.requests
        assert [c.role for c in short] == ["user"]
        assert "word1" not in str(short)


async def test_the_cap_on_branches_is_refused_and_each_move_is_audited_and_counted() -> None:
    async with running_gateway(
        branches_per_thread=1, metrics="on", metrics_token="t" * 32
    ) as gateway:
        hub = gateway.app.hub
        assert hub is not None and hub.audit is not None
        thread = new_id("t")
        async with gateway.socket() as ws:
            first = user_input(thread, "hello", message_id="m1")
            await ws.run(first)
            fork = _branch(user_input(thread, "hi", message_id="m1"), branch={"before": "m1"})
            await ws.run(fork)
            capped = await ws.refused(
                _branch(user_input(thread, "hey", message_id="m1"), branch={"before": "m1"})
            )
            assert capped["code"] == "SERVICE_QUOTA_EXCEEDED"
            assert "GATEWAY_BRANCHES_PER_THREAD" in capped["message"]
            # A switch makes no branch: it is not capped.
            switched = _branch(
                user_input(thread, "") | {"messages": []}, branch={"switchTo": first["runId"]}
            )
            assert outcome(await ws.run(switched)) == {"type": "success"}
        rows = await hub.audit.query_access(thread=thread)
        moves = [(r.door, r.action, r.target, r.outcome) for r in rows if r.door == "branch"]
        assert moves == [
            ("branch", "branch.forked", fork["runId"], "ok"),
            ("branch", "branch.switched", first["runId"], "ok"),
        ]
        assert sample(hub.metrics, "gateway_branch_moves_total", move="fork") == 1
        assert sample(hub.metrics, "gateway_branch_moves_total", move="switch") == 1
