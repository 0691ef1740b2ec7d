"""ADK tools built from catalog entries.

The model sees the catalog's declaration, never one inferred from a Python signature, so
the JSON under ``schemas/tools/`` is what both the model and the clients are checked
against. A client tool is an ADK long-running tool that returns nothing: ADK then pauses
the invocation, and the browser's answer resumes it.
"""

from __future__ import annotations

from typing import Any

from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from gateway.tools.catalog import Catalog, ToolEntry

# Where a run records the client tools its client declared (RunConfig.custom_metadata).
RUN_METADATA_KEY = "agui"
CLIENT_TOOLS_KEY = "clientTools"


def _declaration(entry: ToolEntry) -> types.FunctionDeclaration:
    return types.FunctionDeclaration(
        name=entry.name,
        description=entry.description,
        parameters_json_schema=entry.parameters,
    )


class ServerTool(FunctionTool):
    """A server function, declared to the model as its catalog entry says."""

    def __init__(self, entry: ToolEntry) -> None:
        # ADK's tool confirmation pauses the call until a person approves it.
        super().__init__(entry.server_function(), require_confirmation=entry.requires_approval)
        self.name = entry.name
        self.entry = entry

    def _get_declaration(self) -> types.FunctionDeclaration:
        return _declaration(self.entry)


class ClientTool(BaseTool):
    """A tool the browser executes; the call pauses the run until the browser answers."""

    def __init__(self, entry: ToolEntry) -> None:
        super().__init__(name=entry.name, description=entry.description, is_long_running=True)
        self.entry = entry

    def _get_declaration(self) -> types.FunctionDeclaration:
        return _declaration(self.entry)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        return None


class CatalogToolset(BaseToolset):
    """Server tools always; a client tool only in runs whose client declared it."""

    def __init__(self, catalog: Catalog) -> None:
        super().__init__()
        self._server: list[BaseTool] = [ServerTool(e) for e in catalog.server_entries()]
        self._client: dict[str, BaseTool] = {
            e.name: ClientTool(e) for e in catalog.client_entries()
        }

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        declared = _declared_client_tools(readonly_context)
        client = [tool for name, tool in self._client.items() if name in declared]
        return [*self._server, *client]


def _declared_client_tools(context: ReadonlyContext | None) -> frozenset[str]:
    if context is None or context.run_config is None:
        return frozenset()
    metadata = context.run_config.custom_metadata or {}
    return frozenset(metadata.get(RUN_METADATA_KEY, {}).get(CLIENT_TOOLS_KEY, ()))
