"""A run's ``Start``: what the hub handed the pool (``WorkerRun``), as the worker reads it.

ADK's objects go as ADK's JSON: the session built from the texts its events were read from
(``gateway.store.session_json``), less the events its worker kept (``kept``), the new
message dumped; the caller as its fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway import tracing
from gateway.adk.workers.messages import Start, ToolDeclaration
from gateway.context import caller
from gateway.store.session_json import session_json

if TYPE_CHECKING:
    from gateway.adk.workers.pool import WorkerRun

__all__ = ["start_of"]


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
