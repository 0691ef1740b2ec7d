"""Start-up warm-up: throwaway runs through the server's own socket, before it says Healthy.

The first run after start-up pays first-call costs all along its path: uvicorn's WebSocket
protocol, frame decoding, the connection's worker and writer, the hub, the translator, ADK,
the store and the encoder. A warm-up that skipped the socket left the first user's run 15-20%
slower than the tenth; a few greetings over a real loopback connection pay all of it. Until
they are done /ping answers 503, so nothing that waits for Healthy sends a user the cold run.

The warm-up signs in with a credential only this process knows (``Authenticator``'s), good
only as WARM_UP_USER and only until the warm-up is over, so it works in every auth mode
without a door any client could use.

By default (``GATEWAY_WARM_UP=gateway``) the greetings meet a stand-in agent on an offline
model (``gateway.adk.stand_in``), never the hosted agent's callbacks, tools or plugins: a
user's agent runs for users only. With ``GATEWAY_WARM_UP=agent`` they run through the hosted
agent, as user ``__warmup__``, and ``WarmUpPlugin`` answers its model calls itself, so a
paid model spends nothing and needs no network to start; only the gateway's own offline
models (``gateway.models.offline``: the demo's scripted model, ``script:FILE``) answer for
themselves, so their streaming path is warm too. ``GATEWAY_WARM_UP_RUNS=0`` turns it off.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
import uuid
from typing import TYPE_CHECKING

import msgspec
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types
from websockets.asyncio.client import ClientConnection, connect

from gateway import wire as p
from gateway.auth import WARM_UP_USER
from gateway.config import Settings
from gateway.models.offline import OfflineLlm

if TYPE_CHECKING:
    # Only named: a worker process imports this module for its plugin, and needs no hub.
    from gateway.hub.hub import Hub

log = logging.getLogger(__name__)

__all__ = ["WARM_UP_USER", "WarmUpPlugin", "loopback_host", "skip_absent_a2a", "warm_up"]
# uvicorn listens only once start-up is over; the warm-up waits for it this long at most.
LISTEN_TIMEOUT_SECONDS = 30.0
RUN_TIMEOUT_SECONDS = 30.0


class WarmUpPlugin(BasePlugin):
    """Answers the warm-up's model calls with a greeting: no model is ever called for it."""

    def __init__(self) -> None:
        super().__init__(name="gateway_warm_up")

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        if callback_context.user_id != WARM_UP_USER or _offline(callback_context):
            return None
        return LlmResponse(content=types.Content(role="model", parts=[types.Part(text="안녕")]))


def _offline(context: CallbackContext) -> bool:
    """Whether the agent's model is one of the gateway's offline models: free to call."""
    agent = context._invocation_context.agent
    if not isinstance(agent, LlmAgent):
        return False
    try:
        model = agent.canonical_model
    except Exception:  # no model of its own, or a name nothing resolves: not offline
        return False
    return isinstance(model, OfflineLlm)


def skip_absent_a2a() -> None:
    """ADK retries importing its optional A2A agent on every run (~0.5 ms) when the ``a2a``
    package is absent; recording the module as missing makes that a dictionary lookup."""
    try:
        import a2a  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        sys.modules.setdefault("google.adk.agents.remote_a2a_agent", None)  # type: ignore[arg-type]


def loopback_host(host: str) -> str:
    """Where this process reaches its own listener: a wildcard address means loopback."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


async def warm_up(hub: Hub, settings: Settings, credential: str) -> float:
    """Runs a few greetings on new threads over /ws, then deletes the threads.

    Each run starts a new thread, as most users' first runs do: creating a session has
    first-call costs of its own. ``credential`` is the warm-up's bearer credential.
    Returns the seconds it took.
    """
    started = time.perf_counter()
    url = f"ws://{loopback_host(settings.host)}:{settings.port}/ws"
    threads = [f"{WARM_UP_USER}{uuid.uuid4().hex}" for _ in range(settings.warm_up_runs)]
    # Declared as a browser declares them: offering client tools to the model has
    # first-call costs of its own.
    catalog = hub.engine.catalog
    entries = catalog.client_entries() if catalog else []
    tools = [msgspec.convert(entry.declaration(), p.Tool) for entry in entries]
    try:
        ws = await _connect(url, credential)
        async with ws:
            for thread_id in threads:
                await asyncio.wait_for(_greet(ws, thread_id, tools), RUN_TIMEOUT_SECONDS)
    finally:
        for thread_id in threads:
            await hub.engine.forget_thread(WARM_UP_USER, thread_id)
    return time.perf_counter() - started


async def _connect(url: str, credential: str) -> ClientConnection:
    deadline = time.monotonic() + LISTEN_TIMEOUT_SECONDS
    headers = {"Authorization": f"Bearer {credential}"}
    while True:
        try:
            return await connect(url, compression=None, max_size=None, additional_headers=headers)
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.01)


async def _greet(ws: ClientConnection, thread_id: str, tools: list[p.Tool]) -> None:
    frame = p.RunAgentInput(
        thread_id=thread_id,
        run_id=uuid.uuid4().hex,
        protocol_version=p.PROTOCOL_VERSION,
        messages=[p.UserMessage(id=uuid.uuid4().hex, content="안녕")],
        tools=tools,
    )
    await ws.send(msgspec.json.encode(frame).decode())
    while True:
        event = msgspec.json.decode(await ws.recv())
        if event["type"] == "RUN_ERROR":
            raise RuntimeError(f"a warm-up run failed: {event.get('message')}")
        if event["type"] == "RUN_FINISHED":
            return
