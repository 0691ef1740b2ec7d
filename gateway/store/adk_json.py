"""ADK objects from ADK's JSON, by ADK's own schema less the Python JSON never needs.

Parsing an ADK event ran more Python than Rust: every google-genai model in it (the
message's ``Content``, each ``Part``, a function call or response, usage metadata) runs a
"before" validator, ``google.genai._common.BaseModel._check_field_type_mismatches``, that
walks every field of the model to log a warning when one holds a pydantic object of
another class; ``Part`` has its own ``__init__``, which pydantic calls and which validates
again with the class's validator, hook and all; and ``Event``'s own "before" validator,
``_accept_convenience_kwargs``, rebuilds the set of its field names on every call to route
four keyword shortcuts (``message``, ``state``, ``route``, ``node_path``). Parsed from ADK's
JSON, none of it can do anything: a field holds dicts and lists, never a pydantic object;
JSON passes ``Part`` no positional value (all its ``__init__`` adds); and ADK's dump of an
event never has the shortcuts' keys. py-spy put parsing ADK events at a fifth of the main
process's thread at 200 paced users with workers (16 a flagship story: the worker's
appends and streamed chunks, and the events its reply's run reads back).

``parse_event``, ``parse_session`` and ``parse_content`` parse with a validator built once
from the class's own core schema (``__pydantic_core_schema__``: ADK's and genai's
description, nothing of ours) with genai's hook taken out and ``Part`` validated by its
fields; ``Event``'s router is left out too when the JSON cannot name a shortcut (then
pydantic validates straight from the JSON, where a "before" validator makes it build the
whole event as dicts and lists first), and called only when a shortcut is there otherwise.
The same classes, fields and defaults, ``model_post_init`` and every other validator as
they are, the same ``ValidationError`` on bad input. Should a new pydantic or genai change
the schema so that the hook is not found, the class's own validator parses, as before (a
test says so).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import pydantic
from google.adk.events import Event
from google.adk.sessions import Session
from google.genai import types
from pydantic_core import SchemaValidator

__all__ = ["HOOK", "parse_content", "parse_event", "parse_session", "validator_without_hook"]

log = logging.getLogger(__name__)

# The module and name of the hook left out (a function of genai's private ``_common``).
HOOK = ("google.genai._common", "_check_field_type_mismatches")
# Models whose own ``__init__`` the parse skips: ``Part``'s only folds in a positional
# value (a string, a file, an image), which JSON cannot pass, then validates its keywords
# with the class's validator (so, called, it would bring the hook back).
_PLAIN_INIT = (types.Part,)
# The keys ``Event._accept_convenience_kwargs`` routes; without one it returns its input.
_SHORTCUTS = frozenset({"message", "state", "route", "node_path"})


def _function_of(node: dict[str, Any]) -> Any:
    if node.get("type") != "function-before":
        return None
    function = node.get("function", {}).get("function")
    return getattr(function, "__func__", function)


def _is_hook(node: dict[str, Any]) -> bool:
    function = _function_of(node)
    return (getattr(function, "__module__", None), getattr(function, "__name__", None)) == HOOK


def _shortcuts_only(route: Any) -> Any:
    """ADK's router of an event's shortcuts, called only when one of its keys is there."""

    def routed(data: Any) -> Any:
        if isinstance(data, dict) and not _SHORTCUTS.isdisjoint(data):
            return route(data)
        return data

    return routed


def _without_hook(node: Any, found: list[int], *, router: bool) -> Any:
    """A copy of a core schema node with every hook replaced by the schema it wraps and
    ``Part``'s ``__init__`` not called; ``Event``'s router called only when needed, or
    (``router=False``) left out."""
    if isinstance(node, dict):
        while _is_hook(node) or (not router and _is_router(node)):
            found[0] += _is_hook(node)
            node = node["schema"]
        copied = {key: _without_hook(value, found, router=router) for key, value in node.items()}
        if copied.get("type") == "model" and copied.get("cls") in _PLAIN_INIT:
            copied["custom_init"] = False
        if _is_router(copied):
            routing = copied["function"]
            copied["function"] = {**routing, "function": _shortcuts_only(routing["function"])}
        return copied
    if isinstance(node, list):
        return [_without_hook(value, found, router=router) for value in node]
    return node


def _is_router(node: dict[str, Any]) -> bool:
    return _function_of(node) is Event._accept_convenience_kwargs.__func__


def validator_without_hook(
    model: type[pydantic.BaseModel], *, router: bool = True
) -> SchemaValidator | None:
    """A validator of ``model`` from its own schema without genai's hook (and, with
    ``router=False``, without ``Event``'s router); None if the schema has no such hook."""
    # ADK's models are built on first use (``gateway.deferred_schemas``): until then the
    # class holds a stand-in for its schema, with no hook to find in it.
    model.model_rebuild()
    found = [0]
    schema = _without_hook(model.__pydantic_core_schema__, found, router=router)
    if not found[0]:
        return None
    # Not prebuilt: each model in the schema is validated as written here, not by its
    # class's own validator (which keeps the hook).
    return SchemaValidator(schema, _use_prebuilt=False)


def _parser(model: type[pydantic.BaseModel], *, router: bool = True) -> Any:
    try:
        built = validator_without_hook(model, router=router)
    except Exception:  # a schema this pydantic cannot rebuild: the class's own, as before
        log.warning("%s is parsed with its own validator", model.__name__, exc_info=True)
        built = None
    return built if built is not None else model.__pydantic_validator__


# An event whose JSON names no shortcut is parsed without the router: pydantic then
# validates straight from the JSON, where a "before" validator makes it build every dict
# and list of the event first (twice the work). Any of these anywhere in the text, a key
# written with an escape included, and it is parsed with the router.
_NAMED = ('"message"', '"state"', '"route"', '"node_path"', "\\u")
_NAMED_BYTES = tuple(name.encode() for name in _NAMED)

_EVENT = _parser(Event, router=False)
_ROUTED_EVENT = _parser(Event)
_SESSION = _parser(Session)
# ADK's dump of an event writes its fields' names (by alias or not), never a shortcut's,
# unless a field takes a shortcut's name (then the router leaves that key alone anyway).
_DUMPS_NAME_NO_SHORTCUT = _SHORTCUTS.isdisjoint(
    {key for name, field in Event.model_fields.items() for key in (name, field.alias) if key}
)


def parse_event(data: str | bytes, *, dumped: bool = False) -> Event:
    """``Event.model_validate_json(data)``, without the Python above. ``dumped``: ``data``
    is ADK's own dump of an event (a worker's, just made), so it is not searched for a
    shortcut's name, which it cannot hold (py-spy, 200 paced users with workers: the
    search was a sixth of the main process's parsing of a worker's events)."""
    if dumped and _DUMPS_NAME_NO_SHORTCUT:
        routes = False
    elif isinstance(data, bytes):
        routes = any(name in data for name in _NAMED_BYTES)
    else:
        routes = any(name in data for name in _NAMED)
    parser = _ROUTED_EVENT if routes else _EVENT
    event = parser.validate_json(data)
    assert isinstance(event, Event)
    return event


@functools.cache
def _content_parser() -> Any:
    """Built where it is used, a worker: the main process never parses a bare message."""
    return _parser(types.Content)


def parse_content(data: str | bytes) -> types.Content:
    """``types.Content.model_validate_json(data)``, without the Python above (a run's new
    message, as a worker is handed it)."""
    content = _content_parser().validate_json(data)
    assert isinstance(content, types.Content)
    return content


def parse_session(data: str | bytes) -> Session:
    """``Session.model_validate_json(data)``, without the Python above."""
    session = _SESSION.validate_json(data)
    assert isinstance(session, Session)
    return session
