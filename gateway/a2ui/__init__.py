"""A2UI surfaces through the gateway: how a tool shows real interface, and the wire's names.

A server tool shows a surface by returning its A2UI v0.9 messages under ``a2ui_operations``
(the AG-UI A2UI middleware's convention), beside what the model is to read::

    from gateway import a2ui

    def show_order(order_id: str) -> dict:
        surface = f"order-{order_id}"
        return {
            "orderId": order_id,
            a2ui.OPERATIONS_KEY: [
                a2ui.create_surface(surface),
                a2ui.update_components(surface, [
                    {"id": "root", "component": "Card", "child": "title"},
                    {"id": "title", "component": "Text", "text": {"path": "/title"}},
                ]),
                a2ui.update_data_model(surface, {"title": f"Order {order_id}"}),
            ],
        }

The gateway takes the operations out of what the model reads, checks them against the
catalogs the client advertised, streams those it can show as ``ACTIVITY_SNAPSHOT`` events
and keeps them with the thread; the model reads a note instead (``NOTE_KEY``). A press on a
surface's button comes back as the next turn. docs/a2ui.md is the wire contract; the parts:

    gateway.a2ui.catalogs    what a client says it renders (``a2uiClientCapabilities``)
    gateway.a2ui.surfaces    a thread's surfaces, folded from the operations it was shown
    gateway.a2ui.operations  a tool's operations checked: what is shown, the model's note
    gateway.a2ui.actions     a press on a surface checked against the surface the thread holds
    gateway.a2ui.plugin      the ADK plugin that does it to every server tool's result
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ACTION_ACTIVITY",
    "BASIC_CATALOG_ID",
    "NOTE_KEY",
    "OPERATIONS_KEY",
    "SURFACE_ACTIVITY",
    "VERSION",
    "create_surface",
    "delete_surface",
    "surface_message_id",
    "update_components",
    "update_data_model",
]

# Where a tool's result carries its operations, and where the model reads what became of them.
OPERATIONS_KEY = "a2ui_operations"
NOTE_KEY = "a2ui"
VERSION = "v0.9"
# The A2UI v0.9 basic catalog, under the id docs/a2ui.md names (``catalogs`` knows both).
BASIC_CATALOG_ID = "https://a2ui.org/specification/v0_9/basic_catalog.json"
# The activity types of AG-UI activity messages: a surface's operations, a press on one.
SURFACE_ACTIVITY = "a2ui-surface"
ACTION_ACTIVITY = "a2ui-action"


def surface_message_id(surface_id: str, tool_call_id: str) -> str:
    """The activity message of one tool call's operations for one surface, as the
    middleware names it: live and in every snapshot."""
    return f"a2ui-surface-{surface_id}-{tool_call_id}"


def create_surface(surface_id: str, catalog_id: str = BASIC_CATALOG_ID) -> dict[str, Any]:
    return {"version": VERSION, "createSurface": {"surfaceId": surface_id, "catalogId": catalog_id}}


def update_components(surface_id: str, components: list[dict[str, Any]]) -> dict[str, Any]:
    """Adds or replaces components by ``id``; the one with id ``root`` is drawn."""
    return {
        "version": VERSION,
        "updateComponents": {"surfaceId": surface_id, "components": components},
    }


def update_data_model(surface_id: str, value: Any, path: str = "/") -> dict[str, Any]:
    """Sets the data model at ``path`` (a JSON Pointer; "/" is the whole model)."""
    return {
        "version": VERSION,
        "updateDataModel": {"surfaceId": surface_id, "path": path, "value": value},
    }


def delete_surface(surface_id: str) -> dict[str, Any]:
    return {"version": VERSION, "deleteSurface": {"surfaceId": surface_id}}
