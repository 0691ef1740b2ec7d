"""``python -m scripts._stream_probe <gateway flags>``: the gateway, with stamps on a
chunk's way through it, for ``scripts/probe_stream.py``.

Each stamp is a label and the machine's monotonic clock (``time.perf_counter``, which the
driver and the local provider read too), kept in memory and written as JSON to
``$STREAM_PROBE_OUT`` when the process exits, with the CPU time the stamping thread had
used by then (``time.thread_time``): a step whose CPU is its time ran all along, one whose
time is longer waited (for the socket, the other process, a core). The stamps wrap the
gateway's own functions and the HTTP client's reads and writes; nothing else changes.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from google.adk.flows.llm_flows._base_llm_processor import BaseLlmRequestProcessor

STAMPS: list[tuple[str, float, Any, float]] = []
now = time.perf_counter
cpu = time.thread_time


def stamp(label: str, extra: Any = None) -> None:
    STAMPS.append((label, now(), extra, cpu()))
    if START_ONLY and PROFILE is not None:  # each run's start alone: door to its request
        if label == "ws.in":
            INPUTS.append(None)
            if len(INPUTS) > WARM_UP_RUNS:
                PROFILE.enable()
        elif label == "net.write>":  # the model's request, its first byte
            PROFILE.disable()


PROFILE: Any = None
# STREAM_PROBE_PROFILE=start: the profile covers each run's start, not the whole process.
START_ONLY = os.environ.get("STREAM_PROBE_PROFILE") == "start"
# The driver's unmeasured runs first (``scripts.probe_stream``): not in the profile.
WARM_UP_RUNS = 5
INPUTS: list[None] = []


def _dump() -> None:
    path = os.environ.get("STREAM_PROBE_OUT")
    if PROFILE is not None and path:
        PROFILE.disable()
        PROFILE.dump_stats(path + ".prof")
    if path:
        with open(path, "w") as out:
            json.dump(STAMPS, out)


def on_entry(owner: Any, name: str, label: str, extra: Callable[..., Any] | None = None) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        stamp(label, extra(*args, **kwargs) if extra else None)
        return original(*args, **kwargs)

    # A coroutine function stays one: a caller may ask (tenacity does, to await or not).
    if inspect.iscoroutinefunction(original):
        wrapper = functools.wraps(original)(_awaited(wrapper))
    setattr(owner, name, wrapper)


def _awaited(call: Callable[..., Any]) -> Callable[..., Any]:
    async def awaited(*args: Any, **kwargs: Any) -> Any:
        return await call(*args, **kwargs)

    return awaited


def around(owner: Any, name: str, label: str) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        stamp(label + ">")
        try:
            return original(*args, **kwargs)
        finally:
            stamp(label + "<")

    setattr(owner, name, wrapper)


def around_async(owner: Any, name: str, label: str) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        stamp(label + ">")
        try:
            return await original(*args, **kwargs)
        finally:
            stamp(label + "<")

    setattr(owner, name, wrapper)


def on_yields(owner: Any, name: str, label: str, extra: Callable[[Any], Any] | None = None) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        stamp(label + ">")
        async for item in original(*args, **kwargs):
            stamp(label, extra(item) if extra else None)
            yield item

    setattr(owner, name, wrapper)


def _text_of(event: Any) -> Any:
    content = getattr(event, "content", None)
    parts = getattr(content, "parts", None) or []
    return [bool(getattr(event, "partial", False)), "".join(p.text or "" for p in parts)]


def install_adk() -> None:
    """Stamps ADK's way to the model's call, the model's call and its chunks, the HTTP
    client's reads and writes, and the garbage collector: what a plain Runner does too
    (``scripts.probe_stream --side adk``). With ``STREAM_PROBE_HTTPX`` set, google-genai
    sends through httpx as where aiohttp is not installed (the image)."""
    import gc

    if os.environ.get("STREAM_PROBE_HTTPX"):
        from google.genai import _api_client as sends

        sends.has_aiohttp = False  # read at each request (``_use_aiohttp``)

    import httpcore
    import httpcore._backends.anyio as anyio_backend
    import httpx
    from google.adk import runners
    from google.adk.flows.llm_flows import base_llm_flow
    from google.genai import _api_client

    from gateway.models import chat_completions, gemini

    read, write = anyio_backend.AnyIOStream.read, anyio_backend.AnyIOStream.write

    async def read_stamped(self: Any, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await read(self, max_bytes, timeout)
        stamp("net.read", len(data))
        return data

    async def write_stamped(self: Any, buffer: bytes, timeout: float | None = None) -> None:
        stamp("net.write>", len(buffer))
        await write(self, buffer, timeout)
        stamp("net.write<")

    anyio_backend.AnyIOStream.read = read_stamped  # type: ignore[method-assign]
    anyio_backend.AnyIOStream.write = write_stamped  # type: ignore[method-assign]
    try:
        import aiohttp.client_proto
        import aiohttp.http_writer

        on_entry(
            aiohttp.client_proto.ResponseHandler, "data_received", "net.read", lambda s, d: len(d)
        )
        for name in ("_write", "_writelines"):
            around(aiohttp.http_writer.StreamWriter, name, "net.write")
        # Gemini's request in aiohttp: the environment's proxy and netrc, the connection.
        on_entry(aiohttp.ClientSession, "_request", "aiohttp.request")
        on_entry(aiohttp.BaseConnector, "connect", "aiohttp.connect")
        on_entry(aiohttp.ClientRequest, "send", "aiohttp.send")
    except ImportError:
        pass
    # The model's call, from ADK's adapter to the request's write: the gateway's client, the
    # SDK's request built and sent, httpx's connection pool, the request's head and body.
    on_entry(chat_completions._Completions, "create", "sdk.create")
    on_entry(httpx.AsyncClient, "send", "httpx.send")
    on_entry(httpcore.AsyncConnectionPool, "handle_async_request", "httpcore.pool")
    on_entry(httpcore.AsyncHTTP11Connection, "handle_async_request", "httpcore.http11")
    around(gemini, "request", "gemini.request")
    on_entry(_api_client.BaseApiClient, "async_request_streamed", "genai.request_streamed")
    on_entry(_api_client.BaseApiClient, "_async_request_once", "genai.request_once")
    for name in (
        "run_async",
        "_get_or_create_session",
        "_setup_context_for_new_invocation",
        "_append_new_message_to_session",
        "_exec_with_plugin",
        "_run_node_async",
    ):
        on_entry(runners.Runner, name, f"adk.{name}")
    for name in ("_preprocess_async", "_call_llm_async", "_handle_before_model_callback"):
        on_entry(base_llm_flow.BaseLlmFlow, name, f"adk.{name}")
    if os.environ.get("STREAM_PROBE_FINE"):
        _install_fine()
    gc.callbacks.append(lambda phase, info: stamp("gc." + phase, info["generation"]))
    try:
        from google.adk.integrations.openai._openai_llm import OpenAILlm

        on_yields(OpenAILlm, "generate_content_async", "model", _text_of)
    except ImportError:
        pass
    on_yields(gemini.GeminiLlm, "generate_content_async", "model", _text_of)


# ``--fine``: more of ADK's way from its Runner to the model's call, in the order it goes.
def fine_steps() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The stamps ``_install_fine`` adds in ADK after its append of the input, in the order
    a start reaches them: its node runner, agent and flow, then each request processor (by
    its module's name)."""
    return FINE_AGENT_STEPS, tuple(dict.fromkeys(_processors().values()))


def _processors() -> dict[type[BaseLlmRequestProcessor], str]:
    """ADK's request processors' classes, in the order a flow runs them, each with its
    stamp's label (its module's name)."""
    from google.adk.flows.llm_flows import single_flow

    return {
        type(p): f"proc.{type(p).__module__.rsplit('.', 1)[-1]}"
        for p in single_flow.SingleFlow()._iter_request_processors()
    }


# ADK's way from its Runner's node to the flow's step (``fine_steps``).
FINE_AGENT_STEPS = (
    "fine.run",
    "fine.run_llm_agent_as_node",
    "fine._run_with_lifecycle",
    "fine._run_async_impl",
    "fine._run_one_step_async",
)


def _install_fine() -> None:
    """Stamps ``fine_steps`` (``STREAM_PROBE_FINE``)."""
    from google.adk import runners
    from google.adk.agents import base_agent, llm_agent
    from google.adk.flows.llm_flows import base_llm_flow
    from google.adk.workflow import _llm_agent_wrapper, _node_runner

    for owner, name in (
        (runners.Runner, "_run_node_async"),
        (_node_runner.NodeRunner, "run"),
        (_llm_agent_wrapper, "run_llm_agent_as_node"),
        (base_agent.BaseAgent, "_run_with_lifecycle"),
        (llm_agent.LlmAgent, "_run_async_impl"),
        (base_llm_flow.BaseLlmFlow, "_run_one_step_async"),
    ):
        on_entry(owner, name, f"fine.{name}")
    for kind, label in _processors().items():
        if not getattr(kind.run_async, "_stamped", False):
            on_entry(kind, "run_async", label)
            kind.run_async._stamped = True  # type: ignore[attr-defined]


def install() -> None:
    """``install_adk``, and the gateway's own steps: the door, the hub, the store, the way
    out to the client's socket."""
    install_adk()
    from gateway.adk import engine
    from gateway.doors import transport, websocket
    from gateway.hub import admission, driving, hub, outbox, text_bursts, threads
    from gateway.store import group_commit, service
    from gateway.translate import translator

    on_entry(websocket.WebSocketSession, "_take", "ws.in")
    on_entry(admission.Admission, "admit", "admit")
    around_async(hub.Hub, "claim", "claim")
    around_async(service.SessionService, "open_thread", "open_thread")
    on_entry(driving.Driver, "_drive", "drive")
    on_entry(driving.Driver, "_stream", "stream")
    on_entry(
        translator.RunTranslator, "translate", "translate", lambda self, event: _text_of(event)
    )
    on_entry(text_bursts.TextBurst, "flush", "burst.flush")
    on_entry(
        threads.Run,
        "emit",
        "emit",
        lambda self, events, **_: [type(e).__name__ for e in events],
    )
    on_entry(websocket.WebSocketSession, "deliver", "deliver", lambda self, e: type(e).__name__)
    on_entry(threads.Run, "_log", "run._log")
    on_entry(
        outbox.Outbox,
        "send",
        "outbox.send",
        lambda self, deliver, *after, unstored=0: (len(self._held), unstored, self.unstored),
    )
    on_entry(threads.Run, "_route", "run._route")
    on_entry(service.SessionService, "append_frames", "append_frames")
    on_entry(group_commit.GroupCommit, "submit", "submit")

    protocol = transport.WebSocketProtocol
    send_texts, send_now = protocol._send_texts, protocol._send_now

    async def send_texts_stamped(self: Any, texts: list[bytes]) -> None:
        await send_texts(self, texts)
        stamp("ws.out", [t.decode()[:200] for t in texts])

    def send_now_stamped(self: Any, take: Callable[[], list[bytes] | None]) -> bool:
        taken: list[bytes] = []

        def taking() -> list[bytes] | None:
            texts = take()
            taken.extend(texts or [])
            return texts

        sent = send_now(self, taking)
        if sent:
            stamp("ws.out", [t.decode()[:200] for t in taken])
        return sent

    transport.WebSocketProtocol._send_texts = send_texts_stamped  # type: ignore[method-assign]
    transport.WebSocketProtocol._send_now = send_now_stamped  # type: ignore[method-assign]
    around_async(service.SessionService, "append_event", "append_event")
    on_entry(engine.Engine, "run", "engine.run")
    if os.environ.get("STREAM_PROBE_FINE"):
        from gateway.adk import invocation
        from gateway.hub import planning

        on_entry(transport.WebSocketProtocol, "data_received", "fine.data_received")
        on_entry(websocket.WebSocketSession, "_acknowledge", "fine.acknowledge")
        on_entry(websocket.WebSocketSession, "_work", "fine.ws_work")
        on_entry(hub.Hub, "_start", "fine.hub_start")
        on_entry(planning.Planner, "plan", "fine.plan")
        on_entry(driving.Driver, "_consume", "fine.consume")
        on_entry(invocation.Invocation, "run", "fine.invocation")

    try_commit = group_commit.GroupCommit._try_commit

    async def try_commit_stamped(self: Any, writes: list[Any]) -> Any:
        kinds = [type(getattr(w, "write", w)).__name__ for w in writes]
        stamp("commit>", kinds)
        try:
            return await try_commit(self, writes)
        finally:
            stamp("commit<", kinds)

    group_commit.GroupCommit._try_commit = try_commit_stamped  # type: ignore[method-assign]


if __name__ == "__main__":
    # SIGUSR1 writes the stamps (the driver's cue); the server's own exit may not run atexit.
    signal.signal(signal.SIGUSR1, lambda *_: _dump())
    install()
    from gateway.__main__ import main

    if os.environ.get("STREAM_PROBE_PROFILE"):
        import cProfile

        PROFILE = cProfile.Profile()
        if not START_ONLY:
            PROFILE.enable()

    sys.argv[0] = "agent-gateway"
    main()
