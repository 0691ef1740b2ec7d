"""The JSON Schemas of the wire, generated from its types (``scripts/export_schemas.py``)."""

from __future__ import annotations

from typing import Any

import msgspec

from gateway.wire.events import AnyEvent
from gateway.wire.upstream import ControlFrame, RunAgentInput


def json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schemas of what the gateway accepts and emits, keyed by file name."""

    def one(kind: Any) -> dict[str, Any]:
        return msgspec.json.schema(kind)

    return {
        "run_agent_input.json": one(RunAgentInput),
        "control_frame.json": one(ControlFrame),
        "event.json": one(AnyEvent),
    }
