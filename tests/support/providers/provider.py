"""What both local providers share: a server on a loopback port, its faults and its counts.

A generation request is answered the way the demo's scripted model would answer the
conversation it carries (``plan``), streamed as the subclass's wire format, one frame
``pace`` seconds after the other. ``fail_next`` makes the next generation fail as a real
provider does; probes (the models list) never fail that way, only by the server being down.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import dataclasses
import enum
import json
import re
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import uvicorn
from google.genai import types

from gateway.examples.navigator.scripted import Call, read_turn, respond
from tests.support.ports import free_port

Scope = dict[str, Any]
# The frames a failing stream sends first: some of the reply has reached the client.
HEAD = 2
# Where the generation requests received so far can be read back.
RECORDED_PATH = "/_recorded"


class Fault(enum.Enum):
    """How a provider fails its next generation."""

    UNAUTHORIZED = "401 before the stream"
    RATE_LIMITED = "429 with retry-after before the stream"
    SERVER_ERROR = "500 before the stream"
    FAILS_MID_STREAM = "the first chunks, then the provider's error event for a 500"
    MALFORMED_CHUNK = "the first chunks, then a data line that is not JSON"
    STALLS = "the first chunks, then nothing, the connection held open"


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a reply streams, in order: thoughts, then text, then calls (pieces each)."""

    thoughts: list[str]
    text: list[str]
    calls: list[tuple[str, dict[str, Any]]]
    prompt_tokens: int

    @property
    def output_tokens(self) -> int:
        return len(self.text) + 3 * len(self.calls)

    @property
    def thought_tokens(self) -> int:
        return len(self.thoughts)


def pieces(text: str) -> list[str]:
    """Word-sized chunks, as a model streams them."""
    return re.findall(r"\S+\s*", text)


class Provider(abc.ABC):
    # The model name a gateway is configured with (GATEWAY_MODEL).
    model_name: str

    def __init__(self, *, pace: float = 0.0, retry_after: int = 7) -> None:
        self.port = free_port()
        self.pace = pace
        self.retry_after = retry_after
        self.faults: list[Fault] = []
        # Every generation request's body, in order; the client's address it came from (its
        # port tells one connection from another), and when its head arrived
        # (``time.perf_counter``, the system's monotonic clock: a bench in another process
        # reads it against its own).
        self.generations: list[dict[str, Any]] = []
        self.senders: list[tuple[str, int]] = []
        self.arrivals: list[float] = []
        # For each generation, when each of its frames was handed to the server to send
        # (``time.perf_counter`` too): a chunk's transit is its client's read less this.
        self.sent: list[list[float]] = []
        self.probes = 0
        # Streams the client closed before their end (a cancel, a timeout).
        self.abandoned = 0
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    # --- what a wire format defines --------------------------------------------------------

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """The base URL the provider's SDK is given."""

    @abc.abstractmethod
    def env(self) -> dict[str, str]:
        """The environment that points the provider's SDK here (a dummy key included)."""

    # Where a streamed generation is POSTed, and what a probe GETs.
    generation_path: str
    probe_path: str

    @abc.abstractmethod
    def listing(self) -> dict[str, Any]:
        """The probe's answer: the model as the provider describes it."""

    @abc.abstractmethod
    def conversation(self, request: dict[str, Any]) -> tuple[list[types.Content], frozenset[str]]:
        """The request's conversation as genai contents, and the names of its tools."""

    @abc.abstractmethod
    def wants_thoughts(self, request: dict[str, Any]) -> bool: ...

    @abc.abstractmethod
    def frames(self, plan: Plan, request: dict[str, Any]) -> list[bytes]:
        """The whole stream of an answer, one SSE frame each."""

    @abc.abstractmethod
    def error_body(self, status: int, message: str) -> dict[str, Any]: ...

    def retry_headers(self) -> list[tuple[bytes, bytes]]:
        """The headers of a 429 that say when to try again."""
        return [(b"retry-after", str(self.retry_after).encode())]

    @abc.abstractmethod
    def stream_error(self) -> bytes:
        """The frame a provider sends when it fails after the stream began."""

    # --- the server ----------------------------------------------------------------------

    def fail_next(self, *faults: Fault) -> None:
        self.faults.extend(faults)

    async def start(self) -> None:
        """Listens on ``self.port`` (the same port again after ``stop``)."""
        config = uvicorn.Config(
            self, host="127.0.0.1", port=self.port, lifespan="off", log_level="error"
        )
        config.timeout_graceful_shutdown = 1
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve())
        while not self._server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        """Stops listening: a connection now is refused."""
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        await asyncio.wait_for(self._task, 10)
        self._server = self._task = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Provider]:
        await self.start()
        try:
            yield self
        finally:
            await self.stop()

    def plan(self, request: dict[str, Any]) -> Plan:
        """What the demo's scripted model answers the request's conversation."""
        contents, tools = self.conversation(request)
        reply = respond(read_turn(contents, tools))
        prompt = sum(len((part.text or "").split()) for c in contents for part in c.parts or ())
        thoughts = (
            pieces("**Choosing the next step** The user asked for something; I decide what to do.")
            if self.wants_thoughts(request)
            else []
        )
        if isinstance(reply, Call):
            return Plan(thoughts, [], list(reply.calls), prompt)
        return Plan(thoughts, pieces(reply.text), [], prompt)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        arrived = time.perf_counter()
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        method, path = scope["method"], scope["path"]
        if (method, path) == ("GET", RECORDED_PATH):  # for a bench in another process
            recorded = {
                "generations": self.generations,
                "arrivals": self.arrivals,
                "sent": self.sent,
            }
            await _respond(send, 200, recorded)
        elif (method, path) == ("GET", self.probe_path):
            self.probes += 1
            await _respond(send, 200, self.listing())
        elif (method, path) == ("POST", self.generation_path):
            request = json.loads(body)
            self.generations.append(request)
            self.senders.append(tuple(scope["client"]))
            self.arrivals.append(arrived)
            sent: list[float] = []
            self.sent.append(sent)
            await self._generate(request, receive, send, sent)
        else:
            await _respond(send, 404, self.error_body(404, f"{method} {path} is not served here"))

    async def serve(self) -> None:
        """Serves until cancelled (``python -m tests.support.providers``)."""
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    async def _generate(
        self, request: dict[str, Any], receive: Any, send: Any, sent: list[float]
    ) -> None:
        fault = self.faults.pop(0) if self.faults else None
        if fault is Fault.UNAUTHORIZED:
            await _respond(send, 401, self.error_body(401, "Incorrect API key provided."))
            return
        if fault is Fault.SERVER_ERROR:
            await _respond(send, 500, self.error_body(500, "The server had an error."))
            return
        if fault is Fault.RATE_LIMITED:
            body = self.error_body(429, "Rate limit reached; try again later.")
            await _respond(send, 429, body, self.retry_headers())
            return
        frames = self.frames(self.plan(request), request)
        if fault is Fault.FAILS_MID_STREAM:
            frames = [*frames[:HEAD], self.stream_error()]
        elif fault is Fault.MALFORMED_CHUNK:
            frames = [*frames[:HEAD], b'data: {"candidates": [{"content": \n\n']
        elif fault is Fault.STALLS:
            frames = frames[:HEAD]
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            if not await self._send_frames(send, frames, gone, sent) or fault is Fault.STALLS:
                await gone  # a stall holds the connection until the client gives up
                self.abandoned += 1
                return
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            gone.cancel()

    async def _send_frames(
        self, send: Any, frames: Sequence[bytes], gone: asyncio.Future[None], sent: list[float]
    ) -> bool:
        """Sends the frames ``pace`` apart, noting in ``sent`` when each is handed over;
        False if the client left before the last."""
        for index, frame in enumerate(frames):
            if index and self.pace:
                await asyncio.wait({gone}, timeout=self.pace)
            if gone.done():
                return False
            sent.append(time.perf_counter())
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        return True


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _respond(
    send: Any, status: int, body: dict[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    encoded = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": encoded})


def sse(data: dict[str, Any], end: bytes = b"\n\n") -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + end
