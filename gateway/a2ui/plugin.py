"""The ADK plugin that takes A2UI operations out of server tools' results, and where the
operations a client was shown are kept.

ADK hands every event to the plugins' ``on_event_callback`` before it stores it, and the
model reads the thread from the store. So a function response that carries
``a2ui_operations`` is rewritten there, once, for everyone downstream: the model, the
``TOOL_CALL_RESULT`` and the snapshots read the rest of the result and a note
(``gateway.a2ui.operations``); what the run's client can be shown rides on the same event,
under the gateway's metadata (``shown_surfaces``), into the stream
(``gateway.translate.translator``) and the store (``gateway.translate.history``), so a reload
repaints it with the ids it streamed.

A run's client and the thread it runs on are registered for the run (``offered``): the
catalogs its input advertised, and a way to read the thread's surfaces, read once per run
and only when a tool returns operations.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.events import Event
from google.adk.plugins.base_plugin import BasePlugin

from gateway.a2ui import NOTE_KEY, OPERATIONS_KEY, surface_message_id
from gateway.a2ui.catalogs import ClientCatalogs
from gateway.a2ui.operations import Checked, check_operations
from gateway.a2ui.surfaces import Surfaces
from gateway.context import event_metadata, run_metadata, stamp

__all__ = ["RunSurfaces", "ShownSurface", "SurfacePlugin", "shown_surfaces"]

# Where an event keeps what its tool calls showed, under the gateway's metadata.
SHOWN_KEY = "a2ui"


@dataclasses.dataclass(frozen=True)
class ShownSurface:
    """One tool call's operations for one surface: one activity message."""

    tool_call_id: str
    surface_id: str
    operations: list[dict[str, Any]]

    @property
    def message_id(self) -> str:
        return surface_message_id(self.surface_id, self.tool_call_id)

    @property
    def content(self) -> dict[str, Any]:
        return {"operations": self.operations}


def shown_surfaces(event: Event) -> list[ShownSurface]:
    """What the tool calls answered by ``event`` showed, in the order they were sent."""
    found = event_metadata(event).get(SHOWN_KEY)
    return (
        [
            ShownSurface(entry["toolCallId"], entry["surfaceId"], entry["operations"])
            for entry in found
            if isinstance(entry, dict)
        ]
        if isinstance(found, list)
        else []
    )


@dataclasses.dataclass
class RunSurfaces:
    """What one run's client renders (None: it advertised nothing), and its thread's
    surfaces, read when a tool of the run first returns operations."""

    catalogs: ClientCatalogs | None
    read: Callable[[], Awaitable[Surfaces]]
    surfaces: Surfaces | None = None

    async def check(self, raw: Any) -> Checked:
        if self.catalogs is None:
            return check_operations(raw, None, Surfaces())
        if self.surfaces is None:
            self.surfaces = await self.read()
        checked = check_operations(raw, self.catalogs, self.surfaces)
        for _, operations in checked.shown:
            for operation in operations:
                self.surfaces.apply(operation)
        return checked


class SurfacePlugin(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="gateway_a2ui")
        self._runs: dict[str, RunSurfaces] = {}

    @contextlib.contextmanager
    def offered(self, run_id: str, run: RunSurfaces) -> Iterator[None]:
        """Registers the run's client and thread while the block runs."""
        self._runs[run_id] = run
        try:
            yield
        finally:
            self._runs.pop(run_id, None)

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        answers = [
            response
            for response in event.get_function_responses()
            if isinstance(response.response, dict) and OPERATIONS_KEY in response.response
        ]
        if not answers:
            return None
        run_id = str(run_metadata(ReadonlyContext(invocation_context)).get("runId"))
        run = self._runs.get(run_id) or RunSurfaces(None, _nothing)
        shown: list[dict[str, Any]] = []
        for response in answers:
            result = dict(response.response or {})
            checked = await run.check(result.pop(OPERATIONS_KEY))
            response.response = {**result, NOTE_KEY: checked.note}
            shown += [
                {"toolCallId": response.id, "surfaceId": surface_id, "operations": operations}
                for surface_id, operations in checked.shown
                if response.id
            ]
        if shown:
            stamp(event, SHOWN_KEY, shown)
        return None  # changed in place: later plugins still see the event


async def _nothing() -> Surfaces:
    return Surfaces()
