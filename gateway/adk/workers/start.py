"""A run's ``Start``: what the hub handed the pool (``WorkerRun``), as the worker reads it.

ADK's objects go as ADK's JSON: the session built from the texts its events were read from
(``gateway.store.session_json``), less the events its worker kept (``kept``), the new
message dumped; the caller as its fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from google.adk.sessions import Session
from google.genai import types

from gateway import tracing
from gateway.a2ui.catalogs import ClientCatalogs
from gateway.a2ui.surfaces import Surfaces
from gateway.adk.workers.messages import Start, ToolDeclaration
from gateway.context import caller
from gateway.store.session_json import session_json
from gateway.tools.client import ClientTool

__all__ = ["WorkerRun", "start_of"]


@dataclasses.dataclass(frozen=True)
class WorkerRun:
    """One invocation to run in a worker: what ``Engine.run`` was given."""

    user_id: str
    thread_id: str
    session: Session
    message: types.Content | None
    invocation_id: str | None
    state_delta: dict[str, Any] | None
    metadata: dict[str, Any]
    client_tools: Mapping[str, ClientTool]
    # What the run's client renders of A2UI, and its thread's surfaces: as the hub read
    # them, or read here when the worker asks.
    catalogs: ClientCatalogs | None = None
    surfaces: Surfaces | None = None
    read_surfaces: Callable[[], Awaitable[Surfaces]] | None = None
    # The run's input is stored ahead of its commit here: the worker need not wait for it.
    input_ahead: bool = False


def start_of(number: int, order: WorkerRun, kept: int = 0) -> Start:
    """The ``Start`` of the run numbered ``number`` on its worker's pipe; ``kept``: the
    session's first events the worker holds already, left out (``gateway.adk.workers.kept``)."""
    who = caller()
    return Start(
        run=number,
        user_id=order.user_id,
        thread_id=order.thread_id,
        session=session_json(order.session, kept),
        kept=kept,
        kept_last=order.session.events[kept - 1].id if kept else None,
        message=order.message.model_dump_json(exclude_none=True).encode()
        if order.message is not None
        else None,
        invocation_id=order.invocation_id,
        state_delta=order.state_delta,
        metadata=order.metadata,
        client_tools=[
            ToolDeclaration(tool.name, tool.description, tool.parameters)
            for tool in order.client_tools.values()
        ],
        catalogs={
            id: sorted(c) if c is not None else None for id, c in order.catalogs.catalogs.items()
        }
        if order.catalogs is not None
        else None,
        surfaces=order.surfaces.live if order.surfaces is not None else None,
        input_ahead=order.input_ahead,
        # Its fields as they are (``asdict`` deep-copied the claims for the encoder to read).
        caller={
            "user_id": who.user_id,
            "org": who.org,
            "roles": list(who.roles),
            "claims": dict(who.claims),
        }
        if who is not None
        else None,
        traceparent=tracing.traceparent(),
    )
