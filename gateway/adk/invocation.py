"""Starting one run's ADK invocation on a runner, the same way wherever it runs.

The run's ``RunConfig`` (streamed, the gateway's metadata, ADK's telemetry as the gateway
keeps it) and what the plugins look up by run id while it runs (the client tools it
offers, the A2UI it may show) are set here, for the in-process engine and for a worker
process alike (``gateway.adk.workers``), so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing, nullcontext
from functools import partial
from typing import Any

from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.run_config import RunConfig
from google.adk.apps import App
from google.adk.events import Event as AdkEvent
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types

from gateway.a2ui.catalogs import ClientCatalogs
from gateway.a2ui.plugin import RunSurfaces, SurfacePlugin
from gateway.a2ui.surfaces import Surfaces
from gateway.adk import telemetry
from gateway.adk.private_reads import spare_private_lookups
from gateway.adk.services import Services
from gateway.context import custom_metadata
from gateway.tools.client import CLIENT_TOOLS_KEY, ClientTool, ClientToolset

__all__ = ["Invocation", "runner_for"]

# Reads a thread's A2UI surfaces: (user id, thread id).
SurfaceReader = Callable[[str, str], Awaitable[Surfaces]]


def runner_for(app: App, sessions: BaseSessionService, services: Services) -> Runner:
    """The Runner of ``app`` over ``sessions`` with the gateway's other services; ADK's
    telemetry in this process builds its attributes only for spans that record (in a
    worker too, where the model calls are: there it was a ninth of the CPU at 200 users),
    and its models' private attributes are read directly (``private_reads``). Its
    telemetry's scopes let go of their contexts as they end: a run leaves no cycle."""
    telemetry.spare_unrecorded()
    telemetry.let_go_of_scopes()
    spare_private_lookups()
    return Runner(
        app=app,
        session_service=sessions,
        memory_service=services.memory,
        artifact_service=services.artifacts,
        credential_service=services.credentials,
        auto_create_session=True,
    )


class Invocation:
    """Streams runs' invocations on a runner with the App's client toolset and surfaces."""

    def __init__(
        self,
        client_tools: ClientToolset,
        surface_plugin: SurfacePlugin | None,
        read_surfaces: SurfaceReader,
    ) -> None:
        self.client_tools = client_tools
        self.surface_plugin = surface_plugin
        self.read_surfaces = read_surfaces

    async def run(
        self,
        runner: Runner,
        *,
        user_id: str,
        thread_id: str,
        message: types.Content | None,
        metadata: dict[str, Any],
        client_tools: Mapping[str, ClientTool],
        state_delta: dict[str, Any] | None = None,
        catalogs: ClientCatalogs | None = None,
        surfaces: Surfaces | None = None,
        abort_signal: Any = None,
        invocation_id: str | None = None,
    ) -> AsyncGenerator[AdkEvent, None]:
        """The invocation's events as ``runner`` yields them (see ``Engine.run``)."""
        run_id = str(metadata.get("runId"))
        run_metadata = {**metadata, CLIENT_TOOLS_KEY: sorted(client_tools)}
        config = RunConfig(
            streaming_mode=StreamingMode.SSE,
            custom_metadata=custom_metadata(run_metadata),
            telemetry=telemetry.RUN_TELEMETRY,
        )
        offered = self.client_tools.offered(run_id, client_tools)
        shown = (
            self.surface_plugin.offered(
                run_id,
                RunSurfaces(catalogs, partial(self.read_surfaces, user_id, thread_id), surfaces),
            )
            if self.surface_plugin is not None
            else nullcontext()
        )
        with offered, shown:
            async with aclosing(
                runner.run_async(
                    user_id=user_id,
                    session_id=thread_id,
                    new_message=message,
                    invocation_id=invocation_id,
                    state_delta=state_delta or None,
                    run_config=config,
                    abort_signal=abort_signal,
                )
            ) as events:
                async for event in events:
                    yield event
