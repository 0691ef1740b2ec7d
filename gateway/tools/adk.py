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

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.entry.name,
            description=self.entry.description,
            parameters_json_schema=self.entry.parameters,
        )


def server_tools(catalog: Catalog) -> list[FunctionTool]:
    """The catalog's server tools, for an agent's ``tools``."""
    return [ServerTool(entry) for entry in catalog.server_entries()]
