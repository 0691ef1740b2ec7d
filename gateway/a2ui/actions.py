"""A press on a surface, checked against the surface as the thread holds it, then told.

The gateway, not the card, decides what a press means. Before anything runs, an action
(``protocol.UserAction``, already within its bounds) must match the surface as the thread
holds it (``gateway.a2ui.surfaces``); otherwise the run is refused with VALIDATION_ERROR
and a sentence a person can act on, and nothing is stored:

- the surface is alive on the thread (shown here, not deleted);
- ``sourceComponentId`` is a component of the surface whose action is an event called
  ``name``;
- the context is the one that action defines: each literal as written, and each value
  bound to the data model (``{"path": "/status"}``) equal to the model's value now. One
  that differs means the card changed since it was drawn: the press is stale, and the
  sentence says what changed. A value bound by a relative path (inside a template) or
  computed by a function call is the client's to resolve, and taken as sent;
- the surface still draws the component (an update may have left it out of the tree).

An accepted press is the run's turn: the model reads it (``told``) as the AG-UI A2UI
middleware words it, so an agent written for the middleware reads the same.
"""

from __future__ import annotations

from typing import Any

from gateway import wire as p
from gateway.a2ui.surfaces import Surfaces
from gateway.translate.tool_results import dump_json
from gateway.wire.pointers import MISSING

__all__ = ["ACTION_KEY", "action_content", "check_action", "told"]

# Where a run's metadata keeps the press that began it, as the client sent it.
ACTION_KEY = "a2uiAction"


def action_content(user_action: dict[str, Any]) -> dict[str, Any]:
    """The content of an ``a2ui-action`` activity message: live and in snapshots."""
    return {"userAction": user_action}


def check_action(action: p.UserAction, surfaces: Surfaces) -> None:
    """Raises VALIDATION_ERROR with a sentence unless the press matches the surface."""
    surface = surfaces.get(action.surface_id)
    if surface is None:
        raise _refused(
            f"This thread shows no surface {action.surface_id!r} (it was never shown here, or"
            " it was closed), so the press was not taken. Ask the assistant again."
        )
    component = surface.components.get(action.source_component_id)
    if component is None:
        raise _refused(
            f"Surface {action.surface_id!r} has no {action.source_component_id!r}, so the"
            " press was not taken."
        )
    defines = component.get("action")
    event = defines.get("event") if isinstance(defines, dict) else None
    if not isinstance(event, dict) or event.get("name") != action.name:
        raise _refused(
            f"{action.source_component_id!r} on surface {action.surface_id!r} does not send"
            f" {action.name!r}, so the press was not taken."
        )
    context = event.get("context")
    defined: dict[str, Any] = context if isinstance(context, dict) else {}
    if set(defined) != set(action.context):
        raise _refused(
            f"The press of {action.source_component_id!r} carries the context"
            f" {sorted(action.context)}, not the {sorted(defined)} its surface defines, so it"
            " was not taken."
        )
    for key, value in defined.items():
        sent = action.context[key]
        if _bound(value):
            now = surface.value_at(value["path"])
            if now is MISSING or not _same(now, sent):
                shown = "gone" if now is MISSING else dump_json(now)
                raise _refused(
                    f"The card {action.surface_id!r} has changed since it was drawn: {key} is"
                    f" now {shown}, not {dump_json(sent)}. Nothing was done; look at the card"
                    " again before you press it."
                )
        elif not _computed(value) and not _same(value, sent):
            raise _refused(
                f"The press of {action.source_component_id!r} sends {key} {dump_json(sent)}, but"
                f" its surface defines {dump_json(value)}, so it was not taken."
            )
    if surface.drawn(action.source_component_id) is None:
        raise _refused(
            f"Surface {action.surface_id!r} no longer shows {action.source_component_id!r},"
            " so the press was not taken. Look at the card as it is now."
        )


def told(action: p.UserAction) -> str:
    """The press as the model reads it, in the A2UI middleware's words."""
    return (
        f'User performed action "{action.name}" on surface "{action.surface_id}"'
        f" (component: {action.source_component_id}). Context: {dump_json(action.context)}"
    )


def _bound(value: Any) -> bool:
    """A binding to the data model by an absolute path; a relative one is a template's."""
    return (
        isinstance(value, dict)
        and set(value) == {"path"}
        and isinstance(value["path"], str)
        and value["path"].startswith("/")
    )


def _computed(value: Any) -> bool:
    """A relative binding or a function call: the client resolves it."""
    return isinstance(value, dict) and ("call" in value or "path" in value)


def _same(one: Any, other: Any) -> bool:
    """JSON equality: true is not 1, and 1 is 1.0."""
    if isinstance(one, bool) or isinstance(other, bool):
        return one is other
    if isinstance(one, int | float) and isinstance(other, int | float):
        return one == other
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(_same(v, other[k]) for k, v in one.items())
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(map(_same, one, other))
    return type(one) is type(other) and bool(one == other)


def _refused(sentence: str) -> p.GatewayError:
    return p.GatewayError(p.ErrorCode.VALIDATION_ERROR, sentence)
