"""What a run knows of who asks and of their screen, for the agent's tools and callbacks.

- ``caller``: who asked for the run, as the door authenticated them: user id, org, roles
  and the token's claims the operator maps (``GATEWAY_JWT_CLAIMS``). The run's task holds
  it in a context variable, so every tool, callback and instruction provider of the run
  (sub-agents and ADK's worker threads included) reads it, and nothing of it is stored
  with the thread's events. None in a run nobody asked for: one the gateway starts itself
  (a browser call that timed out, the reply a restart cut off); a tool refuses there what
  needs a person.
- ``run_context``: what a client says about its surface, current screen and selection in
  ``RunAgentInput.context``; only allow-listed entries are kept (``GATEWAY_CONTEXT_ALLOW``),
  and they travel with the run in ``RunConfig.custom_metadata``.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.events import Event

log = logging.getLogger(__name__)

# Where the gateway keeps a run's own metadata in RunConfig.custom_metadata.
RUN_METADATA_KEY = "agui"
# Where the run's context entries are, as {description: value}, under RUN_METADATA_KEY.
CONTEXT_KEY = "context"
DEFAULT_CONTEXT_ALLOW = frozenset({"surface", "currentScreen", "selectedIds"})
# Where ag-ui-adk puts them in RunConfig.custom_metadata, as a list of {description, value}:
# an agent written for it reads ``ctx.run_config.custom_metadata["ag_ui_context"]`` unchanged.
AGUI_ADK_CONTEXT_KEY = "ag_ui_context"


@dataclasses.dataclass(frozen=True, slots=True)
class Caller:
    """Who asked for a run: the user id the thread belongs to, their org and roles as the
    credential says (none in dev mode, where only the user id is named), and the token's
    claims the operator maps (``GATEWAY_JWT_CLAIMS``), by claim name."""

    user_id: str
    org: str | None = None
    roles: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = dataclasses.field(default_factory=dict)


_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "gateway_caller", default=None
)


def caller() -> Caller | None:
    """Who asked for the run this code runs in; None outside a run, or in a run the gateway
    started itself, which nobody asked for."""
    return _caller.get()


def asked_by(who: Caller | None) -> None:
    """Makes ``who`` the caller of the task this runs in: the hub calls it first thing in
    a run's own task, which every tool and callback of the run runs in or is copied from."""
    _caller.set(who)


def run_metadata(context: ReadonlyContext) -> dict[str, object]:
    """The gateway's metadata of the run ``context`` belongs to; empty outside a run."""
    run_config = context.run_config
    metadata = (run_config.custom_metadata if run_config else None) or {}
    found = metadata.get(RUN_METADATA_KEY)
    return found if isinstance(found, dict) else {}


def event_metadata(event: Event) -> dict[str, Any]:
    """The gateway's metadata as stored on one of a run's events (ADK copies the run's
    onto each), with the marks added since; empty on an event without any."""
    found = (event.custom_metadata or {}).get(RUN_METADATA_KEY)
    return found if isinstance(found, dict) else {}


def stamp(event: Event, key: str, value: Any) -> None:
    """Marks one event with ``value`` under the gateway's ``key``, for the stream and the
    store; the run's metadata dict is shared by all of its events, so it gets a copy."""
    metadata = dict(event.custom_metadata or {})
    ours = metadata.get(RUN_METADATA_KEY)
    metadata[RUN_METADATA_KEY] = {**(ours if isinstance(ours, dict) else {}), key: value}
    event.custom_metadata = metadata


def custom_metadata(run_metadata: dict[str, Any]) -> dict[str, Any]:
    """A run's RunConfig.custom_metadata: the gateway's own, and the allowed context entries
    where ag-ui-adk puts them, when there are any (as ag-ui-adk does)."""
    found: dict[str, Any] = {RUN_METADATA_KEY: run_metadata}
    if entries := run_metadata.get(CONTEXT_KEY):
        found[AGUI_ADK_CONTEXT_KEY] = [
            {"description": description, "value": value} for description, value in entries.items()
        ]
    return found


def run_context(context: ReadonlyContext) -> dict[str, str]:
    """The run's allowed context entries, as the hub put them in RunConfig.custom_metadata."""
    entries = run_metadata(context).get(CONTEXT_KEY) or {}
    assert isinstance(entries, dict)
    return {str(key): str(value) for key, value in entries.items()}


def allowed_context(
    entries: Mapping[str, str], allow: frozenset[str] = DEFAULT_CONTEXT_ALLOW
) -> dict[str, str]:
    """The context entries the model may see; the rest are dropped with a log line."""
    dropped = sorted(key for key in entries if key not in allow)
    if dropped:
        log.info("context entries dropped (not on the allow-list): %s", ", ".join(dropped))
    return {key: value for key, value in entries.items() if key in allow}
