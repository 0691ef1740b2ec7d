"""Client tools: the browser's tools, offered to the model for the runs that declare them.

AG-UI's way: a client lists its tools in ``RunAgentInput.tools``; the model may call them in
that run; the browser performs the call and its tool message is the result. Here each one is
an ADK long-running tool that returns nothing, so ADK pauses the invocation at the call and
the browser's answer resumes it.

One ``ClientToolset`` sits on every LlmAgent the gateway hosts (``gateway.adk.hosting``). A run
names its declared tools in its metadata (``CLIENT_TOOLS_KEY``) and the toolset offers
those: with the declaration the client sent, registered for the run by ``offered``, or else
the catalog's. An AgentTool's nested run cannot pause, so it is offered none.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping
from typing import Any

from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset, ToolPredicate
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from gateway.context import run_metadata
from gateway.tools.catalog import Catalog

# Where a run records the client tools its client declared, under the run's metadata.
CLIENT_TOOLS_KEY = "clientTools"


class ClientTool(BaseTool):
    """A tool the browser executes; the call pauses the run until the browser answers."""

    def __init__(self, name: str, description: str, parameters: dict[str, Any]) -> None:
        super().__init__(name=name, description=description, is_long_running=True)
        self.parameters = parameters

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters_json_schema=self.parameters
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        return None


class ClientToolset(BaseToolset):
    """The client tools of the run asking: what its client declared, and nothing else."""

    def __init__(self, catalog: Catalog | None = None) -> None:
        super().__init__()
        self._catalog: dict[str, ClientTool] = {
            entry.name: ClientTool(entry.name, entry.description, entry.parameters)
            for entry in (catalog.client_entries() if catalog else ())
        }
        self._runs: dict[str, dict[str, ClientTool]] = {}

    def in_catalog(self) -> dict[str, ClientTool]:
        """The catalog's client tools, as a client that declares them all would."""
        return dict(self._catalog)

    def narrowed(self, tool_filter: ToolPredicate | list[str]) -> ClientToolset:
        """The same client tools, of which one agent is offered only those ``tool_filter``
        lets through (ag-ui-adk's ``AGUIToolset(tool_filter=...)``); what the runs declare
        is shared with this toolset."""
        view = copy.copy(self)
        view.tool_filter = tool_filter
        return view

    @contextlib.contextmanager
    def offered(self, run_id: str, declared: Mapping[str, ClientTool]) -> Iterator[None]:
        """Offers ``declared`` to the run ``run_id`` while the block runs."""
        self._runs[run_id] = dict(declared)
        try:
            yield
        finally:
            self._runs.pop(run_id, None)

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        if readonly_context is None or not readonly_context._invocation_context.is_resumable:
            return []
        metadata = run_metadata(readonly_context)
        names = metadata.get(CLIENT_TOOLS_KEY) or ()
        run = self._runs.get(str(metadata.get("runId")), {})
        assert isinstance(names, list | tuple)
        found = (run.get(name) or self._catalog.get(name) for name in names)
        return [
            tool
            for tool in found
            if tool is not None and self._is_tool_selected(tool, readonly_context)
        ]
