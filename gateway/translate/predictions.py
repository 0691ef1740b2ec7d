"""Predictive state: a tool's arguments shown as the state they will become, before it runs.

What a client expects (AG-UI's dojo, "predictive state updates", CopilotKit): a run sends
``CUSTOM`` ``PredictState`` with ``[{"state_key", "tool", "tool_argument"}, ...]`` before the
first call of a mapped tool, and the client then reads that argument of the call, as it
streams, into its state under ``state_key`` (a document editor shows the draft as it is
written). When the mapping asks for a confirmation (``confirm``, the default), the run ends
with a ``confirm_changes`` call the browser answers from its confirm dialog
(``{"accepted": true|false}``); ``gateway.adk.confirm_changes`` makes that call.

A ``Prediction`` is ag-ui-adk's ``PredictStateMapping`` under the gateway's roof: one is
read from a ``PredictStateMapping`` (or any object with its fields), a dict with the same
keys, or ``GATEWAY_PREDICT_STATE``'s JSON list of such dicts. Nothing here imports
ag-ui-adk.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence

from gateway import wire as p

__all__ = [
    "CONFIRM_CHANGES",
    "PREDICT_STATE",
    "Prediction",
    "PredictionError",
    "by_tool",
    "parse",
    "predict_state_event",
    "predictions",
]

# The CUSTOM event's name, and the call a client's confirm dialog answers (the dojo's).
PREDICT_STATE = "PredictState"
CONFIRM_CHANGES = "confirm_changes"


class PredictionError(ValueError):
    """A predictive-state mapping cannot be read; the message says which and why."""


@dataclasses.dataclass(frozen=True)
class Prediction:
    """``tool``'s argument ``tool_argument`` becomes the state's ``state_key``; ``confirm``:
    the run ends with a ``confirm_changes`` call for the client's confirm dialog."""

    state_key: str
    tool: str
    tool_argument: str
    confirm: bool = True

    def payload(self) -> dict[str, str]:
        """As ``PredictState`` lists it (the keys are the client's, snake case)."""
        return {"state_key": self.state_key, "tool": self.tool, "tool_argument": self.tool_argument}


def predictions(items: Iterable[object] | object | None) -> tuple[Prediction, ...]:
    """Each item as a ``Prediction``: one already, a dict, or an object with the fields of
    ag-ui-adk's ``PredictStateMapping``; a single one stands for a list of one."""
    if items is None:
        return ()
    if isinstance(items, Prediction | Mapping) or hasattr(items, "state_key"):
        items = [items]
    if isinstance(items, str | bytes) or not isinstance(items, Iterable):
        raise PredictionError(f"predictive state is a list of mappings, not {items!r}.")
    return tuple(_prediction(item, index) for index, item in enumerate(items))


def parse(text: str) -> tuple[Prediction, ...]:
    """``GATEWAY_PREDICT_STATE``: a JSON list of ``{"state_key", "tool", "tool_argument",
    "emit_confirm_tool"?}``; empty text is none."""
    if not text.strip():
        return ()
    try:
        value = json.loads(text)
    except ValueError as error:
        raise PredictionError(f"GATEWAY_PREDICT_STATE is not JSON ({error}).") from None
    return predictions(value)


def by_tool(found: Sequence[Prediction]) -> dict[str, list[Prediction]]:
    """The predictions of each tool, in the order given."""
    tools: dict[str, list[Prediction]] = {}
    for prediction in found:
        tools.setdefault(prediction.tool, []).append(prediction)
    return tools


def predict_state_event(found: Sequence[Prediction]) -> p.Custom:
    return p.Custom(name=PREDICT_STATE, value=[prediction.payload() for prediction in found])


def _prediction(item: object, index: int) -> Prediction:
    if isinstance(item, Prediction):
        return item

    def read(key: str) -> object:
        return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)

    fields = [read(key) for key in ("state_key", "tool", "tool_argument")]
    if not all(isinstance(value, str) and value for value in fields):
        raise PredictionError(
            f"predictive state mapping {index} needs state_key, tool and tool_argument, "
            "each a non-empty string."
        )
    state_key, tool, argument = (str(value) for value in fields)
    confirm = read("emit_confirm_tool")
    if confirm is None:
        confirm = read("confirm")
    if confirm is not None and not isinstance(confirm, bool):
        raise PredictionError(f"predictive state mapping {index}: emit_confirm_tool is a boolean.")
    return Prediction(state_key, tool, argument, confirm=True if confirm is None else confirm)
