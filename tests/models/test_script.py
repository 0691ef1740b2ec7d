"""The script model: a user's JSON rules, played on what each model call shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.llm_request import LlmRequest
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from gateway import models
from gateway.adk import loading
from gateway.adk.hosting import HostingError
from gateway.config import Settings
from gateway.models import names
from gateway.models.offline import Call, Say
from gateway.models.script import (
    FALLBACK,
    Script,
    ScriptLlm,
    Seen,
    ToolResponse,
    load,
    read,
    respond,
)
from gateway.store.cut_off import RESTARTED

pytestmark = pytest.mark.unit

ORDER_TOOLS: dict[str, Any] = {
    "track_order": None,
    "transfer_to_agent": {
        "type": "object",
        "properties": {"agent_name": {"type": "string", "enum": ["order_desk"]}},
        "required": ["agent_name"],
    },
}


def write(tmp_path: Path, rules: Any, name: str = "turns.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    return path


def script(tmp_path: Path, *rules: dict[str, Any]) -> Script:
    return load(write(tmp_path, list(rules)))


def said(words: str, response: ToolResponse | None = None, **tools: Any) -> Seen:
    return Seen(words, response, tools or dict(ORDER_TOOLS))


def test_the_first_matching_rule_speaks_with_the_users_words(tmp_path: Path) -> None:
    played = script(
        tmp_path,
        {"user": "order (?P<order>O-\\d+)", "say": "Looking at {order} ({1})."},
        {"user": "order", "say": "Which order?"},
    )
    assert respond(played, said("Where is ORDER O-1042?")) == Say("Looking at O-1042 (O-1042).")
    assert respond(played, said("my order")) == Say("Which order?")


def test_nothing_matching_is_the_honest_fallback_naming_the_script(tmp_path: Path) -> None:
    played = script(tmp_path, {"user": "order", "say": "Which order?"})
    reply = respond(played, said("what is the weather"))
    assert reply == Say(FALLBACK.format(script="turns.json"))
    assert "turns.json" in FALLBACK.format(script="turns.json")


def test_after_rules_follow_their_tool_and_first_rules_never_repeat(tmp_path: Path) -> None:
    played = script(
        tmp_path,
        {"user": "order", "call": {"name": "track_order", "args": {"order_id": "O-1"}}},
        {"after": "track_order", "say": "It is {status}."},
    )
    assert respond(played, said("my order")) == Call([("track_order", {"order_id": "O-1"})])
    answered = ToolResponse("track_order", {"status": "shipped"}, {"order_id": "O-1"})
    # The user's words still match rule 1, but the turn has moved past it.
    assert respond(played, said("my order", answered)) == Say("It is shipped.")
    other = ToolResponse("refund", {"status": "done"}, {})
    assert respond(played, said("my order", other)) == Say(FALLBACK.format(script="turns.json"))


def test_result_conditions_and_placeholders_from_result_args_and_groups(
    tmp_path: Path,
) -> None:
    played = script(
        tmp_path,
        {
            "after": "track_order",
            "result": {"status": "shipped", "parcel.carrier": "DHL"},
            "say": "{order_id} is with {parcel.carrier}, item {items.0} ({n}, {who}).",
            "user": "for (?P<who>\\w+)",
        },
        {"after": "track_order", "say": "{order_id}: {status}"},
    )
    result = {"status": "shipped", "parcel": {"carrier": "DHL"}, "items": ["mug"], "n": 2}
    shipped = ToolResponse("track_order", result, {"order_id": "O-1"})
    assert respond(played, said("order for Ann", shipped)) == Say(
        "O-1 is with DHL, item mug (2, Ann)."
    )
    packing = ToolResponse("track_order", {"status": "packing"}, {"order_id": "O-1"})
    assert respond(played, said("order for Ann", packing)) == Say("O-1: packing")


def test_a_rule_whose_placeholders_cannot_be_filled_gives_way(tmp_path: Path) -> None:
    played = script(
        tmp_path,
        {"after": "submit", "say": "Not submitted: {reason}"},
        {"after": "submit", "say": "Not submitted ({error})."},
    )
    rejected = ToolResponse("submit", {"error": "rejected"}, {})
    assert respond(played, said("", rejected)) == Say("Not submitted (rejected).")


def test_an_argument_that_is_one_placeholder_keeps_its_type(tmp_path: Path) -> None:
    played = script(
        tmp_path,
        {
            "after": "quote",
            "call": [
                {"name": "pay", "args": {"amount": "{total}", "memo": "for {total} {{EUR}}"}},
                {"name": "notify", "args": {"lines": ["{items}"]}},
            ],
        },
    )
    quoted = ToolResponse("quote", {"total": 12.5, "items": ["a", "b"]}, {})
    reply = respond(played, said("", quoted, pay=None, notify=None))
    assert reply == Call(
        [("pay", {"amount": 12.5, "memo": "for 12.5 {EUR}"}), ("notify", {"lines": [["a", "b"]]})]
    )


def test_calls_only_offered_tools_with_arguments_their_declaration_takes(
    tmp_path: Path,
) -> None:
    played = script(
        tmp_path,
        {
            "user": "(?P<order>O-\\d+)",
            "call": {"name": "track_order", "args": {"order_id": "{order}"}},
        },
        {
            "user": "order",
            "call": {"name": "transfer_to_agent", "args": {"agent_name": "order_desk"}},
        },
        {"user": ".", "call": {"name": "transfer_to_agent", "args": {"agent_name": "help_desk"}}},
        {"user": "hi", "say": "Hello."},
    )
    # The help desk: no track_order, and it may hand off only to the order desk.
    help_desk = {"transfer_to_agent": ORDER_TOOLS["transfer_to_agent"]}
    assert respond(played, said("order O-1042", **help_desk)) == Call(
        [("transfer_to_agent", {"agent_name": "order_desk"})]
    )
    assert respond(played, said("hi", **help_desk)) == Say("Hello.")
    # The order desk: its own tool first.
    assert respond(played, said("order O-1042")) == Call([("track_order", {"order_id": "O-1042"})])
    nothing: dict[str, Any] = {}
    reply = respond(played, Seen("order O-1042", None, nothing))
    assert reply == Say(FALLBACK.format(script="turns.json"))


def request(*contents: types.Content) -> LlmRequest:
    return LlmRequest(contents=list(contents))


def user(*texts: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text) for text in texts])


def tracked() -> tuple[types.Content, types.Content]:
    """A model's call of ``track`` and the response it got."""
    call = types.Content(
        role="model",
        parts=[types.Part(function_call=types.FunctionCall(name="track", args={"id": "O-1"}))],
    )
    response = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(name="track", response={"ok": True})
            )
        ],
    )
    return call, response


def test_read_finds_the_users_words_past_what_adk_relays_from_another_agent() -> None:
    relayed = user(
        "For context: below is a transcript of what another agent did, quoted between "
        "<<<BEGIN_QUOTED_AGENT_CONTENT>>> and <<<END_QUOTED_AGENT_CONTENT>>>.",
        "[help_desk] called tool `transfer_to_agent` with parameters:\n"
        "<<<BEGIN_QUOTED_AGENT_CONTENT>>>\n{'agent_name': 'order_desk'}\n"
        "<<<END_QUOTED_AGENT_CONTENT>>>",
    )
    seen = read(request(user("where is O-1042"), relayed))
    assert seen.words == "where is O-1042"
    assert seen.response is None


def test_read_pairs_the_last_response_with_the_call_it_answers() -> None:
    call, response = tracked()
    seen = read(request(user("track O-1"), call, response))
    assert seen.words == "track O-1"
    assert seen.response == ToolResponse("track", {"ok": True}, {"id": "O-1"})


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ([{"user": "x"}], "rule 1 has neither 'say' nor 'call'"),
        ([{"say": "a"}, {"user": "x", "say": "a", "call": {"name": "t"}}], "rule 2 has both"),
        ([{"result": {"a": 1}, "say": "a"}], "rule 1 has 'result' but no 'after'"),
        ([{"user": "(", "say": "a"}], "rule 1 'user' is not a valid regular expression"),
        ([{"say": "a"}, {"usr": "x", "say": "a"}], "rule 2: Object contains unknown field `usr`"),
        ([{"user": 3, "say": "a"}], "rule 1 (user): Expected `str | null`, got `int`"),
        ([{"say": "total {amount"}], "rule 1 'say' has a lone '{'"),
        ([{"say": "{a b}"}], "rule 1 'say' has '{a b}', which is not a field name"),
        ([{"call": []}], "rule 1 has an empty 'call' list"),
        ([{"call": {"name": "t", "args": {"x": "}"}}}], "rule 1 'args' has a lone '}'"),
        ([], "has no rules"),
    ],
)
def test_a_bad_script_names_the_file_and_the_rule(
    tmp_path: Path, rules: Any, expected: str
) -> None:
    with pytest.raises(models.ModelError) as raised:
        load(write(tmp_path, rules))
    assert str(raised.value).startswith(f"Script file {tmp_path / 'turns.json'}")
    assert expected in str(raised.value)


def test_an_unreadable_or_non_json_script_says_so(tmp_path: Path) -> None:
    with pytest.raises(models.ModelError, match="cannot be read"):
        load(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{rules: [", encoding="utf-8")
    with pytest.raises(models.ModelError, match=r"broken\.json is not valid JSON"):
        load(broken)


def test_gateway_model_script_builds_it_with_the_pace_and_bad_ones_stop_start_up(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, [{"say": "hi"}])
    model = names.build(f"script:{path}", pace_ms=7)
    assert (
        isinstance(model, ScriptLlm) and model.pace_ms == 7 and model.model == "script:turns.json"
    )
    with pytest.raises(models.ModelError, match="needs a file"):
        names.build("script:")
    bad = write(tmp_path, [{"user": "("}], name="bad.json")
    settings = Settings(model=f"script:{bad}")
    with pytest.raises(HostingError, match=r"bad\.json: rule 1 has neither"):
        loading.load("gateway.examples.expenses.agent:root_agent", settings)


async def test_an_adk_agent_plays_the_script_through_a_tool_and_streams_the_answer(
    tmp_path: Path,
) -> None:
    def track_order(order_id: str) -> dict[str, Any]:
        """Where an order is."""
        return {"status": "shipped" if order_id == "O-1" else "unknown"}

    path = write(
        tmp_path,
        [
            {
                "user": "(?P<id>O-\\d+)",
                "call": {"name": "track_order", "args": {"order_id": "{id}"}},
            },
            {"after": "track_order", "say": "Order {order_id} is {status}."},
        ],
    )
    agent = LlmAgent(name="orders", model=ScriptLlm.from_file(path), tools=[track_order])
    runner = Runner(
        agent=agent,
        app_name="orders",
        session_service=InMemorySessionService(),
        auto_create_session=True,
    )
    from google.adk.agents.run_config import RunConfig, StreamingMode

    events = [
        event
        async for event in runner.run_async(
            user_id="u",
            session_id="s",
            new_message=user("where is O-1?"),
            run_config=RunConfig(streaming_mode=StreamingMode.SSE),
        )
    ]
    chunks = [
        e.content.parts[0].text for e in events if e.partial and e.content and e.content.parts
    ]
    assert "".join(str(chunk) for chunk in chunks) == "Order O-1 is shipped."
    assert len(chunks) == 4
    final = [e for e in events if not e.partial and e.content and e.content.parts]
    assert final[-1].content is not None and final[-1].content.parts is not None
    assert final[-1].content.parts[0].text == "Order O-1 is shipped."


def test_read_after_a_restart_cut_the_reply_off_replies_to_the_response_again() -> None:
    call, response = tracked()
    cut = types.Content(role="model", parts=[types.Part(text="Your order is")])
    seen = read(request(user("track O-1"), call, response, cut, user(RESTARTED)))
    assert seen.words == "track O-1"
    assert seen.response == ToolResponse("track", {"ok": True}, {"id": "O-1"})
