"""What a client says about its screen, and which of it reaches the agent.

A client describes its surface, current screen and selection in ``RunAgentInput.context``;
only allow-listed entries are kept (``GATEWAY_CONTEXT_ALLOW``), and they travel with the
run in ``RunConfig.custom_metadata``, where an agent's instruction provider, callbacks and
tools read them with ``run_context``.
"""

from __future__ import annotations

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
