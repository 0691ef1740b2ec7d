"""A tool's A2UI operations, checked before anything of them is sent or stored.

What a tool returns under ``a2ui_operations`` goes to a browser and into the thread, where
a reload repaints it and a press on it is checked against it. So the whole list is held to
bounds first (``MAX_OPERATIONS`` messages, ``MAX_BYTES`` of JSON, ``gateway.wire.bounds``' depth
and entries) and each message must be one of A2UI v0.9's four, or nothing is shown. Then,
surface by surface (one call's operations for one surface become one activity message):

- a client that advertised no catalog is shown nothing;
- ``createSurface`` needs a catalog the client renders; for a surface the thread shows
  already it replaces that one: a ``deleteSurface`` goes first, as A2UI requires;
- every other operation needs the surface (created in this call or an earlier one) and
  its catalog among the client's; ``updateComponents`` only components that catalog has,
  when the gateway knows them (``gateway.a2ui.catalogs``).

A surface that fails a rule is not shown at all. Every operation sent carries
``"version": "v0.9"``, which A2UI requires and a tool may leave out. What the model reads
instead of the operations (``Checked.note``) says which surfaces the user sees, and why the
others are not shown, so that it can say in words what the card would have shown.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

import msgspec

from gateway import wire as p
from gateway.a2ui import OPERATIONS_KEY, VERSION, delete_surface
from gateway.a2ui.catalogs import CAPABILITIES, ClientCatalogs
from gateway.a2ui.surfaces import Surfaces
from gateway.wire import bounds

__all__ = ["MAX_BYTES", "MAX_OPERATIONS", "Checked", "check_operations"]

# Far more than a card needs; a tool that sends more is sending data, not interface.
MAX_OPERATIONS = 100
MAX_BYTES = 256 << 10
_SAY_IT = "say in words what it would have shown."


class _Component(msgspec.Struct):
    id: p.Id
    component: p.Name


class _CreateSurface(msgspec.Struct, rename="camel"):
    surface_id: p.Id
    catalog_id: Annotated[str, msgspec.Meta(min_length=1, max_length=1024)]


class _UpdateComponents(msgspec.Struct, rename="camel"):
    surface_id: p.Id
    components: Annotated[list[_Component], msgspec.Meta(min_length=1)]


class _UpdateDataModel(msgspec.Struct, rename="camel"):
    surface_id: p.Id
    path: str = "/"


class _DeleteSurface(msgspec.Struct, rename="camel"):
    surface_id: p.Id


class _Operation(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    version: Literal["v0.9"] | None = None
    create_surface: _CreateSurface | None = None
    update_components: _UpdateComponents | None = None
    update_data_model: _UpdateDataModel | None = None
    delete_surface: _DeleteSurface | None = None


Body = _CreateSurface | _UpdateComponents | _UpdateDataModel | _DeleteSurface


@dataclasses.dataclass(frozen=True)
class Checked:
    """What is shown, as (surface id, its operations) in the order the tool named them,
    and the note the model reads in place of the operations."""

    shown: list[tuple[str, list[dict[str, Any]]]]
    note: dict[str, Any]


class _NotShown(Exception):
    """Why a surface (or every one of them) is not shown, as the model is told;
    ``unseen``: the user misses what it shows, so the model is to say it in words."""

    def __init__(self, why: str, *, unseen: bool = True) -> None:
        super().__init__(why)
        self.unseen = unseen


def check_operations(raw: Any, catalogs: ClientCatalogs | None, surfaces: Surfaces) -> Checked:
    """Checks a tool's ``a2ui_operations`` against the client's catalogs and the thread's
    surfaces (as the user sees them); nothing is changed."""
    try:
        operations = _read(raw)
    except _NotShown as why:
        return Checked([], {"shown": [], "notShown": f"{why} Nothing was shown; {_SAY_IT}"})
    grouped: dict[str, list[tuple[dict[str, Any], Body]]] = {}
    for operation, body in operations:
        grouped.setdefault(body.surface_id, []).append((operation, body))
    if catalogs is None:
        unseen = (
            f"This client renders no A2UI surfaces (its input advertised no {CAPABILITIES})."
            f" Nothing was shown; {_SAY_IT}"
        )
        return Checked([], {"shown": [], "notShown": unseen})
    shown: list[tuple[str, list[dict[str, Any]]]] = []
    refused: dict[str, _NotShown] = {}
    for surface_id, group in grouped.items():
        try:
            shown.append((surface_id, _checked_group(surface_id, group, catalogs, surfaces)))
        except _NotShown as why:
            refused[surface_id] = why
    note: dict[str, Any] = {"shown": [surface_id for surface_id, _ in shown]}
    if refused:
        said = (
            f"Surface {surface_id!r} was not shown: {why}" for surface_id, why in refused.items()
        )
        advice = f" For those, {_SAY_IT}" if any(w.unseen for w in refused.values()) else ""
        note["notShown"] = " ".join(said) + advice
    return Checked(shown, note)


def _read(raw: Any) -> list[tuple[dict[str, Any], Body]]:
    """Each operation with the body of its one kind, within the bounds; _NotShown if not."""
    operations = [raw] if isinstance(raw, dict) else raw
    if not isinstance(operations, list) or not operations:
        raise _NotShown(f"{OPERATIONS_KEY} must be a list of A2UI {VERSION} messages.")
    if len(operations) > MAX_OPERATIONS:
        raise _NotShown(
            f"{OPERATIONS_KEY} held {len(operations)} messages; at most {MAX_OPERATIONS}."
        )
    try:
        bounds.check(operations)
        size = len(msgspec.json.encode(operations))
    except bounds.OutOfBounds as bad:
        raise _NotShown(f"{bad.at(OPERATIONS_KEY)}.") from None
    except (TypeError, ValueError):  # a value JSON cannot hold, or a key that is not text
        raise _NotShown(f"{OPERATIONS_KEY} held a value that is not JSON.") from None
    if size > MAX_BYTES:
        raise _NotShown(f"{OPERATIONS_KEY} held {size} bytes of JSON; at most {MAX_BYTES}.")
    read = []
    for index, operation in enumerate(operations):
        try:
            parsed = msgspec.convert(operation, _Operation)
        except msgspec.ValidationError as exc:
            where = str(exc).replace("`$", f"`{OPERATIONS_KEY}[{index}]")
            raise _NotShown(f"Not an A2UI {VERSION} message: {where}.") from None
        bodies = [
            body
            for body in (
                parsed.create_surface,
                parsed.update_components,
                parsed.update_data_model,
                parsed.delete_surface,
            )
            if body is not None
        ]
        if len(bodies) != 1:
            raise _NotShown(
                f"{OPERATIONS_KEY}[{index}] must hold exactly one of createSurface,"
                " updateComponents, updateDataModel or deleteSurface."
            )
        read.append(({"version": VERSION, **operation}, bodies[0]))
    return read


def _checked_group(
    surface_id: str,
    group: list[tuple[dict[str, Any], Body]],
    catalogs: ClientCatalogs,
    surfaces: Surfaces,
) -> list[dict[str, Any]]:
    """One surface's operations as they are to be sent; _NotShown if a rule fails."""
    known = surfaces.get(surface_id)
    catalog: str | None = known.catalog_id if known else None  # None: not alive
    sent: list[dict[str, Any]] = []
    for operation, body in group:
        if isinstance(body, _CreateSurface):
            if not catalogs.supports(body.catalog_id):
                raise _NotShown(f"the client does not render catalog {body.catalog_id!r}.")
            if catalog is not None:
                sent.append(delete_surface(surface_id))  # A2UI's way to draw it anew
            catalog = body.catalog_id
        elif catalog is None:
            raise _NotShown("this thread shows no such surface to change.", unseen=False)
        elif not catalogs.supports(catalog):
            raise _NotShown(f"the client does not render its catalog {catalog!r}.")
        elif isinstance(body, _UpdateComponents):
            names = catalogs.components(catalog)
            used = {c.component for c in body.components}
            missing = sorted(used - names) if names is not None else []
            if missing:
                listed = ", ".join(repr(name) for name in missing)
                raise _NotShown(f"the client's catalog {catalog!r} has no component {listed}.")
        elif isinstance(body, _DeleteSurface):
            catalog = None
        sent.append(operation)
    return sent
