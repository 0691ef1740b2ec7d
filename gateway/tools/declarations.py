"""Reading the client tools a RunAgentInput declares.

With a catalog, the catalog is the source of truth: a client that declares a tool the server
does not know, or declares it with parameters the catalog would not accept, is told so at
once with the tool and the field, instead of the mismatch showing up later as a call nobody
can answer. Without one, every declared tool is offered as the client declared it, once its
parameters are a JSON Schema a model can be given. Either way a client tool may not take the
name of one of the agent's server tools: the model could not tell which one it calls.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from gateway import wire as p
from gateway.tools.catalog import Catalog, ToolEntry, schema_problem
from gateway.tools.client import ClientTool

log = logging.getLogger(__name__)

NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


class DeclarationLog:
    """Without a catalog, what a connection declares is what the model is offered: it is
    logged once per connection, and again only when it changes."""

    def __init__(self) -> None:
        self._last: weakref.WeakKeyDictionary[object, tuple[str, ...]] = weakref.WeakKeyDictionary()

    def note(self, connection: object | None, names: Iterable[str]) -> None:
        declared = tuple(sorted(names))
        if connection is not None:
            if self._last.get(connection) == declared:
                return
            self._last[connection] = declared
        log.info("client tools declared (no catalog): %s", ", ".join(declared) or "none")


def declared_client_tools(
    tools: list[p.Tool], catalog: Catalog | None, server_tools: Mapping[str, str]
) -> dict[str, ClientTool]:
    """The declared client tools by name, or VALIDATION_ERROR naming the first bad one.

    ``server_tools`` maps the agent's server tool names to the agent that has each.
    """
    declared: dict[str, ClientTool] = {}
    for index, tool in enumerate(tools):
        where = f"tools[{index}] {tool.name!r}"
        if tool.name in server_tools:
            raise _invalid(
                f"{where} has the name of a server tool of agent {server_tools[tool.name]!r}; "
                "rename the client tool."
            )
        if tool.name in declared:
            raise _invalid(f"{where} is declared twice.")
        if catalog is None:
            declared[tool.name] = _as_declared(tool, where)
            continue
        entry = catalog.entries.get(tool.name)
        if entry is None:
            known = ", ".join(e.name for e in catalog.client_entries())
            raise _invalid(f"{where} is not in the tool catalog; client tools are: {known}.")
        if not entry.runs_on_client:
            raise _invalid(f"{where} is a server tool; a client cannot declare it.")
        if tool.parameters is not None:
            mismatch = _mismatch(tool.parameters, entry)
            if mismatch:
                raise _invalid(f"{where}: {mismatch}. Use the declaration from GET /tools.")
        declared[tool.name] = ClientTool(entry.name, entry.description, entry.parameters)
    return declared


def _as_declared(tool: p.Tool, where: str) -> ClientTool:
    parameters = tool.parameters if tool.parameters is not None else NO_PARAMETERS
    if parameters.get("type", "object") != "object":
        raise _invalid(f"{where}: parameters.type must be 'object'.")
    problem = _checked(msgspec.json.encode(parameters))
    if problem:
        raise _invalid(f"{where}: parameters is not a valid JSON Schema {problem}.")
    return ClientTool(tool.name, tool.description, parameters)


# A browser declares the same tools on every run, and checking a schema against the
# metaschema costs ~0.8 ms: each distinct one is checked once (a bounded few are kept).
@functools.lru_cache(maxsize=256)
def _checked(parameters: bytes) -> str | None:
    return schema_problem(msgspec.json.decode(parameters))


def _mismatch(declared: dict[str, Any], entry: ToolEntry) -> str | None:
    """The first way ``declared`` disagrees with the catalog's parameter schema, if any."""
    expected = entry.parameters
    if declared.get("type", "object") != "object":
        return f"parameters.type is {declared.get('type')!r}, the catalog says 'object'"
    known: dict[str, Any] = expected.get("properties", {})
    given = declared.get("properties", {})
    required = declared.get("required", [])
    if not isinstance(given, dict):
        return "parameters.properties must be an object"
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        return "parameters.required must be a list of parameter names"
    for name, schema in given.items():
        if name not in known:
            return f"parameters.properties.{name} is not a parameter of {entry.name}"
        want, got = (
            known[name].get("type"),
            schema.get("type") if isinstance(schema, dict) else None,
        )
        if got is not None and want is not None and got != want:
            return f"parameters.properties.{name}.type is {got!r}, the catalog says {want!r}"
    for name in expected.get("required", []):
        if given and name not in given:
            return f"parameters.properties.{name} is missing; the catalog requires it"
    for name in required:
        if name not in known:
            return f"parameters.required names {name!r}, which {entry.name} does not have"
    return None


def _invalid(message: str) -> p.GatewayError:
    return p.GatewayError(p.ErrorCode.VALIDATION_ERROR, message)
