"""The tool catalog: the server's source of truth for every tool the model may call.

A catalog is a folder of JSON files, one per tool (the demo's is
``gateway/examples/navigator/tools/``), or entries declared in Python: its name,
description, parameter schema, the result it returns, and its executor:
``"server:<module>:<function>"`` (the gateway runs it) or ``"client"`` (the browser runs
it and answers with a tool message).
Loading checks every entry, so a server tool whose function is missing, or a schema that
is not valid JSON Schema, fails start-up with a message naming the entry instead of
failing a user's run later (a model given a broken schema fails, or worse, guesses).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import string
from collections.abc import Callable, Iterable
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]
from jsonschema.validators import Draft202012Validator, validator_for  # type: ignore[import-untyped]


class CatalogError(Exception):
    """The catalog cannot be used; the message names the file and the entry."""


@dataclasses.dataclass(frozen=True)
class ToolEntry:
    name: str
    description: str
    parameters: dict[str, Any]
    executor: str
    result: dict[str, Any] | None = None
    requires_approval: bool = False
    # What approving does, for the person asked: "업무 요청 {requestId} 건을 승인합니다".
    approval_template: str | None = None

    @property
    def runs_on_client(self) -> bool:
        return self.executor == "client"

    def server_function(self) -> Callable[..., Any]:
        """Imports the executor of a server tool."""
        _, _, target = self.executor.partition(":")
        module_name, _, attribute = target.partition(":")
        try:
            function = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError, ValueError) as exc:
            raise CatalogError(
                f"Tool {self.name!r}: executor {self.executor!r} does not exist ({exc})"
            ) from None
        if not callable(function):
            raise CatalogError(f"Tool {self.name!r}: executor {self.executor!r} is not callable")
        return function  # type: ignore[no-any-return]

    def approval_message(self, args: dict[str, Any]) -> str:
        """The sentence an approval card shows: what will happen, with the arguments."""
        template = self.approval_template or f"{self.name} 실행"
        try:
            return template.format_map({key: args.get(key, "") for key in _fields(template)})
        except (ValueError, IndexError):
            return template

    def approval_names(self) -> frozenset[str]:
        """The arguments the approval sentence says itself."""
        return frozenset(_fields(self.approval_template or ""))

    def declaration(self) -> dict[str, Any]:
        """The AG-UI Tool a client declares for this entry."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclasses.dataclass(frozen=True)
class Catalog:
    entries: dict[str, ToolEntry]

    def client_entries(self) -> list[ToolEntry]:
        return [e for e in self.entries.values() if e.runs_on_client]

    def server_entries(self) -> list[ToolEntry]:
        return [e for e in self.entries.values() if not e.runs_on_client]

    def __getitem__(self, name: str) -> ToolEntry:
        return self.entries[name]


def _fields(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def load(directory: Traversable | Path | str) -> Catalog:
    """Reads and checks every ``*.json`` entry in ``directory`` (a folder, or package data
    from ``importlib.resources.files``)."""
    directory = Path(directory) if isinstance(directory, str) else directory
    if not directory.is_dir():
        raise CatalogError(f"The tool catalog {directory} is not a folder")
    files = sorted(
        (f for f in directory.iterdir() if f.name.endswith(".json")), key=lambda f: f.name
    )
    if not files:
        raise CatalogError(f"No tool declarations found in {directory}")
    return from_entries(_read(path) for path in files)


def from_entries(entries: Iterable[ToolEntry]) -> Catalog:
    catalog: dict[str, ToolEntry] = {}
    for entry in entries:
        if entry.name in catalog:
            raise CatalogError(f"Tool {entry.name!r} is declared twice")
        _check_schema(entry, "parameters", entry.parameters)
        if entry.result is not None:
            _check_schema(entry, "result", entry.result)
        if not entry.runs_on_client:
            entry.server_function()
        catalog[entry.name] = entry
    return Catalog(catalog)


def _check_schema(entry: ToolEntry, field: str, schema: dict[str, Any]) -> None:
    """Raises CatalogError naming the tool, the field and the bad keyword."""
    problem = schema_problem(schema)
    if problem:
        raise CatalogError(f"Tool {entry.name!r}: {field} is not a valid JSON Schema {problem}")


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Where and why ``schema`` is not a valid JSON Schema ("at properties/x: ..."), or None."""
    try:
        # Draft 2020-12 unless the schema names its own dialect with "$schema".
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.absolute_path) or "the top level"
        return f"at {where}: {exc.message}"
    return None


def _read(path: Traversable) -> ToolEntry:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CatalogError(f"{path}: not a readable JSON file ({exc})") from None
    try:
        entry = ToolEntry(
            name=raw["name"],
            description=raw["description"],
            parameters=raw["parameters"],
            executor=raw["executor"],
            result=raw.get("result"),
            requires_approval=bool(raw.get("requiresApproval", False)),
            approval_template=raw.get("approvalMessage"),
        )
    except (KeyError, TypeError) as exc:
        raise CatalogError(f"{path}: missing or malformed field {exc}") from None
    if entry.executor != "client" and not entry.executor.startswith("server:"):
        raise CatalogError(
            f"{path}: tool {entry.name!r} executor must be 'client' or 'server:<module>:<function>'"
        )
    if entry.parameters.get("type") != "object":
        raise CatalogError(f"{path}: tool {entry.name!r} parameters must be an object schema")
    return entry
