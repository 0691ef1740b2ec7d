"""Predictive state: PredictState before a mapped tool's first call, and the mappings read
from what a user writes (ag-ui-adk's PredictStateMapping, dicts, GATEWAY_PREDICT_STATE)."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest
from ag_ui_adk import PredictStateMapping

from gateway import wire as p
from gateway.translate.predictions import Prediction, PredictionError, parse, predictions
from gateway.translate.translator import RunTranslator
from tests.support.adk_events import call, event, result
from tests.support.agui import StreamChecker

pytestmark = pytest.mark.unit

DOCUMENT = Prediction("document", "write_document", "document")


def _types(events: list[p.Event]) -> list[str]:
    return [msgspec.to_builtins(e)["type"] for e in events]


def _run(translator: RunTranslator, *adk_events: object) -> list[p.Event]:
    out = translator.start()
    for adk_event in adk_events:
        out += translator.translate(adk_event)  # type: ignore[arg-type]
    out += translator.finish()
    checker = StreamChecker()
    for sent in out:
        checker.feed(msgspec.to_builtins(sent))
    return out


def test_predict_state_comes_before_the_first_call_of_a_mapped_tool_only() -> None:
    translator = RunTranslator("t", "r", predictions=[DOCUMENT])
    out = _run(
        translator,
        event("agent", call("c1", "look_up", q="x")),
        event("agent", result("c1", "look_up", found=True)),
        event("agent", call("c2", "write_document", document="# One")),
        event("agent", call("c3", "write_document", document="# Two")),
    )
    customs = [e for e in out if isinstance(e, p.Custom)]
    assert [(c.name, c.value) for c in customs] == [
        (
            "PredictState",
            [{"state_key": "document", "tool": "write_document", "tool_argument": "document"}],
        )
    ]
    index = out.index(customs[0])
    start = out[index + 1]
    assert isinstance(start, p.ToolCallStart) and start.tool_call_id == "c2"


def test_a_mapped_browser_tool_has_its_prediction_held_with_its_call() -> None:
    translator = RunTranslator("t", "r", predictions=[DOCUMENT])
    out = _run(
        translator,
        event(
            "agent", call("c1", "write_document", document="# Draft"), long_running_tool_ids={"c1"}
        ),
    )
    assert _types(out)[-5:] == [
        "CUSTOM",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]


def test_without_predictions_nothing_custom_is_sent() -> None:
    out = _run(RunTranslator("t", "r"), event("agent", call("c1", "write_document", document="x")))
    assert "CUSTOM" not in _types(out)


def test_mappings_are_read_from_ag_ui_adk_dicts_and_json() -> None:
    mapping = PredictStateMapping(
        state_key="document", tool="write_document", tool_argument="document"
    )
    assert predictions([mapping]) == predictions(mapping) == (DOCUMENT,)
    quiet = dataclasses.replace(DOCUMENT, confirm=False)
    assert predictions([{**DOCUMENT.payload(), "emit_confirm_tool": False}]) == (quiet,)
    text = '[{"state_key": "document", "tool": "write_document", "tool_argument": "document"}]'
    assert parse(text) == (DOCUMENT,)
    assert parse("  ") == ()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[{", "not JSON"),
        ('"document"', "a list of mappings"),
        ('[{"state_key": "document", "tool": "write_document"}]', "needs state_key, tool"),
        (
            '[{"state_key": "d", "tool": "w", "tool_argument": "a", "emit_confirm_tool": 1}]',
            "boolean",
        ),
    ],
)
def test_a_mapping_that_cannot_be_read_says_why(text: str, says: str) -> None:
    with pytest.raises(PredictionError, match=says):
        parse(text)
