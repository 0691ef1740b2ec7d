"""Server tools built from catalog entries.

The model sees the catalog's declaration, never one inferred from a Python signature, so
the JSON of a catalog is what both the model and the clients are checked against. Client
tools are ``gateway.tools.client``'s.
"""

from __future__ import annotations

from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from gateway.tools.catalog import Catalog, ToolEntry


class ServerTool(FunctionTool):
    """A server function, declared to the model as its catalog entry says."""

    def __init__(self, entry: ToolEntry) -> None:
        # ADK's tool confirmation pauses the call until a person approves it.
        super().__init__(entry.server_function(), require_confirmation=entry.requires_approval)
        self.name = entry.name
        self.entry = entry
        # Built once: ADK asks for it at every model call, before the request can leave,
        # and genai's validators made each one ~30 µs (four tools: 0.1 ms a call).
        self._declaration = types.FunctionDeclaration(
            name=entry.name,
            description=entry.description,
            parameters_json_schema=entry.parameters,
        )

    def _get_declaration(self) -> types.FunctionDeclaration:
        # A copy (~7 µs) goes into each request, so that nothing one call sets on it (a
        # live session marks its behaviour) reaches the next; its schema is the entry's
        # own dict, as it always was.
        return self._declaration.model_copy()


def server_tools(catalog: Catalog) -> list[FunctionTool]:
    """The catalog's server tools, for an agent's ``tools``."""
    return [ServerTool(entry) for entry in catalog.server_entries()]
