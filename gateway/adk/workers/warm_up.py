"""A worker's warm-up: one invocation before it says it is ready.

A fresh worker's first invocation paid ~1 s of first-call costs (ADK's flows and the
pydantic models they build, the model adapter, the plugins' first callbacks) while a user
waited; the main process's warm-up (``gateway.doors.warmup``) warms only the main process.
So a worker runs one greeting before its ``Hello``, through the App the main process's
warm-up meets (the stand-in on an offline model, or the agent itself with
``GATEWAY_WARM_UP=agent``, whose ``WarmUpPlugin`` answers its model calls), as
``WARM_UP_USER``, with the catalog's client tools offered. Its session lives in an
in-memory service of its own: nothing is stored, and nothing is relayed (the worker's
relay is connected only after the warm-up, and the usage plugin skips the warm-up user).
A warm-up that fails is logged and the worker serves anyway, as cold as before.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping
from contextlib import aclosing

from google.adk.apps import App
from google.adk.sessions import InMemorySessionService
from google.genai import types

from gateway.adk.invocation import Invocation, runner_for
from gateway.adk.services import Services
from gateway.auth import WARM_UP_USER
from gateway.tools.client import ClientTool

__all__ = ["warm_up"]

log = logging.getLogger(__name__)

# The longest a worker's warm-up may hold back its Hello.
WARM_UP_SECONDS = 30.0


async def warm_up(
    app: App, invocation: Invocation, services: Services, client_tools: Mapping[str, ClientTool]
) -> None:
    """Runs one greeting through ``app`` (see the module's docstring)."""
    started = time.perf_counter()
    runner = runner_for(app, InMemorySessionService(), services)
    greeting = types.Content(role="user", parts=[types.Part(text="안녕하세요")])
    try:
        async with asyncio.timeout(WARM_UP_SECONDS):
            events = invocation.run(
                runner,
                user_id=WARM_UP_USER,
                thread_id=f"{WARM_UP_USER}{uuid.uuid4().hex}",
                message=greeting,
                metadata={"runId": f"warm-up-{uuid.uuid4().hex}"},
                client_tools=client_tools,
            )
            async with aclosing(events):
                async for _event in events:
                    pass
    except Exception:  # the worker serves cold rather than not at all
        log.warning("the warm-up failed: the first run here pays first calls", exc_info=True)
        return
    # Not closed: with GATEWAY_WARM_UP=agent its toolsets are the worker's Runner's own.
    log.info("warmed up in %.2f s", time.perf_counter() - started)
