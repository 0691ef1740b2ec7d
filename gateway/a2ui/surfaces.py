"""A thread's A2UI surfaces as its user was shown them, folded from the stored operations.

Each ``a2ui-surface`` activity message of a thread holds what one tool call showed of one
surface. Applied in the thread's order they give every surface alive its catalog, its
components by id and its data model: the gateway's own account of what the user's screen
holds, against which a press on a surface is checked. Only operations that were sent are
stored, and only after ``gateway.a2ui.operations`` checked them, so applying one never
meets a shape it does not know.

A component is drawn when ``root`` reaches it: a component an update left out of the tree
(the buttons of a card whose request was decided) is gone for the user, though still
defined.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any

from gateway.a2ui import SURFACE_ACTIVITY
from gateway.wire.pointers import pointer, value_at

__all__ = ["Surface", "Surfaces"]

ROOT = "root"


@dataclasses.dataclass
class Surface:
    catalog_id: str
    components: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    data: Any = dataclasses.field(default_factory=dict)

    def drawn(self, component_id: str) -> dict[str, Any] | None:
        """The component, if ``root`` reaches it; None if it is undefined or left out."""
        seen = {ROOT} if ROOT in self.components else set()
        todo = list(seen)
        while todo:
            if todo[-1] == component_id:
                return self.components[component_id]
            component = self.components[todo.pop()]
            for child in _references(component):
                if child in self.components and child not in seen:
                    seen.add(child)
                    todo.append(child)
        return None

    def value_at(self, path: str) -> Any:
        """The data model's value at an absolute path, or ``pointers.MISSING``."""
        return value_at(self.data, pointer(path))

    def set_value(self, path: str, value: Any) -> None:
        keys = pointer(path)
        if not keys:
            self.data = value
            return
        parent = self.data if isinstance(self.data, dict | list) else {}
        self.data = parent
        for key in keys[:-1]:
            parent = _child(parent, key)
        _put(parent, keys[-1], value)

    def remove_value(self, path: str) -> None:
        keys = pointer(path)
        if not keys:
            self.data = {}
            return
        parent, last = value_at(self.data, keys[:-1]), keys[-1]
        if isinstance(parent, dict):
            parent.pop(last, None)
        elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
            del parent[int(last)]


class Surfaces:
    """The surfaces alive on a thread, by id."""

    def __init__(self) -> None:
        self.live: dict[str, Surface] = {}

    @classmethod
    def of_messages(cls, messages: Iterable[dict[str, Any]]) -> Surfaces:
        """The surfaces a thread's AG-UI messages (a snapshot's, oldest first) leave alive."""
        surfaces = cls()
        for message in messages:
            if (
                message.get("role") == "activity"
                and message.get("activityType") == SURFACE_ACTIVITY
            ):
                for operation in _operations(message.get("content")):
                    surfaces.apply(operation)
        return surfaces

    def get(self, surface_id: str) -> Surface | None:
        return self.live.get(surface_id)

    def apply(self, operation: dict[str, Any]) -> None:
        """Applies one checked A2UI v0.9 message."""
        if (create := operation.get("createSurface")) is not None:
            self.live[create["surfaceId"]] = Surface(create["catalogId"])
        elif (update := operation.get("updateComponents")) is not None:
            if (surface := self.live.get(update["surfaceId"])) is not None:
                surface.components.update((c["id"], c) for c in update["components"])
        elif (change := operation.get("updateDataModel")) is not None:
            if (surface := self.live.get(change["surfaceId"])) is not None:
                path = change.get("path") or "/"
                if "value" in change:
                    surface.set_value(path, change["value"])
                else:
                    surface.remove_value(path)
        elif (delete := operation.get("deleteSurface")) is not None:
            self.live.pop(delete["surfaceId"], None)


def _operations(content: Any) -> list[dict[str, Any]]:
    operations = content.get("operations") if isinstance(content, dict) else None
    return [op for op in operations if isinstance(op, dict)] if isinstance(operations, list) else []


def _references(component: dict[str, Any]) -> Iterator[str]:
    """Every string a component holds outside its own id, type and action: a child's id is
    one of them, wherever its catalog puts it (``child``, ``children``, a tab, a template)."""
    todo: list[Any] = [v for k, v in component.items() if k not in ("id", "component", "action")]
    while todo:
        value = todo.pop()
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)


def _child(parent: Any, key: str) -> Any:
    """The container under ``key``, made an object if it is missing or not a container."""
    if isinstance(parent, list) and key.isdigit() and int(key) < len(parent):
        index = int(key)
        if not isinstance(parent[index], dict | list):
            parent[index] = {}
        return parent[index]
    if isinstance(parent, dict):
        if not isinstance(parent.get(key), dict | list):
            parent[key] = {}
        return parent[key]
    return {}  # a path through a list by a name: nowhere to write


def _put(parent: Any, key: str, value: Any) -> None:
    if isinstance(parent, dict):
        parent[key] = value
    elif isinstance(parent, list) and key == "-":
        parent.append(value)
    elif isinstance(parent, list) and key.isdigit() and int(key) < len(parent):
        parent[int(key)] = value
