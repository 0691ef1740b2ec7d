"""A local Gemini Live server: BidiGenerateContent over WebSocket, scripted per test.

Theory of operation. google-genai's ``client.aio.live.connect`` dials
``{base_url}/ws/google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContent``
with the scheme made ``wss``, sends one ``setup`` message and waits for ``setupComplete``;
then the client streams ``realtimeInput`` (audio chunks), ``clientContent`` (turns) and
``toolResponse``, and the server streams ``serverContent`` (model turns with ``inlineData``
audio, ``inputTranscription``, ``outputTranscription``, ``interrupted``, ``turnComplete``),
``toolCall``, ``sessionResumptionUpdate`` and ``goAway``. This server speaks that protocol
(the Gemini API's JSON, camelCase) on loopback with TLS, under a certificate it makes at
start; a client trusts it through ``client_options()``, so ADK's own ``Gemini.connect`` and
``Runner.run_live`` run unchanged against it (``live_model()``).

What the server does is a script per connection: the n-th connection plays ``scripts[n]``
(the last one again for any later connection), a list of steps run in order:

- ``WaitAudio(n)``: until ``n`` bytes of audio in all arrived on this connection;
- ``WaitToolResponse()``: until the next ``toolResponse`` arrives;
- ``WaitClientContent()``: until the next ``clientContent`` arrives;
- ``Send(*messages)``: sends messages, built with ``heard``, ``said``, ``audio_out``,
  ``interrupted``, ``turn_complete``, ``tool_call``, ``resumption``, ``go_away``;
- ``Pause(seconds)``: waits (for benchmarks, which pace the model's speech);
- ``Speak(chunk, pace, chunks, until_heard)``: the model's speech as it is generated,
  ``chunk`` after ``chunk`` ``pace`` seconds apart, stopping early once ``until_heard``
  bytes of audio in arrived (the person spoke over it, as Gemini's voice detection hears
  it; the benchmark's barge-in);
- ``Until(signal)``: until the test sets the ``asyncio.Event`` (a moment the test picks,
  such as after its client dropped);
- ``Close()``: closes the connection, as the provider does after a ``goAway``.

A handle the server sent (``resumption``) resumes its session: a connection whose setup
names it continues that session (``Connection.session``, numbered from 0 by the connection
that began it), as Gemini's does. A setup naming a handle the server never gave, or one
``forget`` made it lose (Gemini's expire), is refused as Gemini refuses a setup it cannot
serve: the connection closes with an error before ``setupComplete``; it plays no script and
is counted in ``refused``.

Everything a connection received is kept on its ``Connection`` (setup, audio, tool
responses, client contents), for the test to assert on. A wait that is never met fails
the connection's script, and ``LiveServer.failures`` says which step waited.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import datetime
import functools
import ipaddress
import json
import ssl
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence, Sized
from http import HTTPStatus
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from google.adk.models.google_llm import Gemini
from google.genai import types
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from tests.support.budgets import scaled

# A Live model name ADK treats as Gemini 2.5 native audio (not 3.x): audio goes up as
# ``realtimeInput.mediaChunks``, tool calls are answered at turn end.
MODEL = "gemini-2.5-flash-native-audio-preview-09-2025"

INPUT_RATE, OUTPUT_RATE = 16_000, 24_000

# Where a process of its own finds the server: its URL and its certificate (PEM).
URL_VARIABLE, CA_VARIABLE = "GEMINI_LIVE_TEST_URL", "GEMINI_LIVE_TEST_CA"

# How Gemini closes a setup it cannot serve (1007: "Request contains an invalid argument").
CLOSE_INVALID_ARGUMENT = 1007

# How long a scripted wait lasts before the script fails, on a quiet machine.
WAIT_SECONDS = 5.0


# --- the steps of a script ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WaitAudio:
    """Until this many bytes of audio in arrived on the connection, in all."""

    total_bytes: int


@dataclasses.dataclass(frozen=True)
class WaitToolResponse:
    """Until the next ``toolResponse``."""


@dataclasses.dataclass(frozen=True)
class WaitClientContent:
    """Until the next ``clientContent``."""


@dataclasses.dataclass(frozen=True)
class Send:
    messages: tuple[dict[str, Any], ...]

    def __init__(self, *messages: dict[str, Any]) -> None:
        object.__setattr__(self, "messages", messages)


@dataclasses.dataclass(frozen=True)
class Pause:
    """Waits this long before the next step (benchmarks pace the model's speech so)."""

    seconds: float


@dataclasses.dataclass(frozen=True)
class Speak:
    """Sends ``chunks`` chunks of speech ``pace`` seconds apart, or fewer: it stops at once
    when ``until_heard`` bytes of audio in (in all) have arrived."""

    chunk: bytes
    pace: float
    chunks: int
    until_heard: int | None = None


@dataclasses.dataclass(frozen=True)
class Until:
    """Until the test sets ``signal``."""

    signal: asyncio.Event


@dataclasses.dataclass(frozen=True)
class Close:
    """Closes the connection (the provider's side of a ``goAway``)."""


Step = WaitAudio | WaitToolResponse | WaitClientContent | Send | Pause | Speak | Until | Close


# --- the messages a script sends ------------------------------------------------------------


def heard(text: str, *, finished: bool = False) -> dict[str, Any]:
    """What the model transcribed of the person's speech."""
    transcription: dict[str, Any] = {"text": text}
    if finished:
        transcription["finished"] = True
    return {"serverContent": {"inputTranscription": transcription}}


def said(text: str, *, finished: bool = False) -> dict[str, Any]:
    """What the model transcribed of its own speech."""
    transcription: dict[str, Any] = {"text": text}
    if finished:
        transcription["finished"] = True
    return {"serverContent": {"outputTranscription": transcription}}


def audio_out(pcm: bytes) -> dict[str, Any]:
    """A chunk of the model's speech: 24 kHz s16le PCM."""
    blob = {"mimeType": f"audio/pcm;rate={OUTPUT_RATE}", "data": base64.b64encode(pcm).decode()}
    return {"serverContent": {"modelTurn": {"parts": [{"inlineData": blob}]}}}


def interrupted() -> dict[str, Any]:
    """The person spoke over the model: it stops its turn."""
    return {"serverContent": {"interrupted": True}}


def turn_complete() -> dict[str, Any]:
    return {"serverContent": {"turnComplete": True}}


def tool_call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"toolCall": {"functionCalls": [{"id": call_id, "name": name, "args": args}]}}


def resumption(handle: str) -> dict[str, Any]:
    return {"sessionResumptionUpdate": {"newHandle": handle, "resumable": True}}


def go_away(seconds: int = 10) -> dict[str, Any]:
    return {"goAway": {"timeLeft": f"{seconds}s"}}


def tone(seconds: float, rate: int = INPUT_RATE) -> bytes:
    """``seconds`` of s16le PCM that is not silence (a ramp), at ``rate``."""
    samples = int(seconds * rate)
    return b"".join(
        ((i * 97) % 20_000 - 10_000).to_bytes(2, "little", signed=True) for i in range(samples)
    )


def live_model_from(environ: Mapping[str, str]) -> Gemini:
    """ADK's Gemini model reaching the server whose ``LiveServer.environ`` is in ``environ``:
    for an agent hosted by a gateway in another process."""
    options = _client_options(environ[URL_VARIABLE], environ[CA_VARIABLE])
    return Gemini(model=MODEL, client_kwargs=options)


def _client_options(url: str, certificate: str) -> dict[str, Any]:
    context = ssl.create_default_context(cadata=certificate)
    options = types.HttpOptions(
        base_url=url, api_version="v1alpha", async_client_args={"ssl": context}
    )
    return {"api_key": "offline-live-key", "http_options": options}


# --- the server ---------------------------------------------------------------------------


@dataclasses.dataclass
class Connection:
    """What one client connection sent, as the server received it."""

    setup: dict[str, Any] = dataclasses.field(default_factory=dict)
    audio: bytearray = dataclasses.field(default_factory=bytearray, repr=False)
    audio_mime_types: set[str] = dataclasses.field(default_factory=set)
    tool_responses: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    client_contents: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    audio_stream_ended: bool = False
    # When each audio-in chunk arrived (``time.perf_counter``) and its first 4 bytes, and
    # when each scripted message was sent: what ``scripts/bench_voice.py`` times.
    chunk_arrivals: list[tuple[float, bytes]] = dataclasses.field(default_factory=list, repr=False)
    sent_at: list[float] = dataclasses.field(default_factory=list, repr=False)
    closed: bool = False
    # The provider's session it belongs to: the number of the connection that began it.
    session: int = 0
    changed: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    @property
    def resumed_from(self) -> str | None:
        """The session-resumption handle the client's setup asked for, if any."""
        handle = self.setup.get("sessionResumption", {}).get("handle")
        return handle if isinstance(handle, str) else None

    def take(self, message: dict[str, Any]) -> None:
        if "realtimeInput" in message:
            realtime = message["realtimeInput"]
            chunks = list(realtime.get("mediaChunks") or [])
            if "audio" in realtime:
                chunks.append(realtime["audio"])
            for chunk in chunks:
                self.audio_mime_types.add(chunk.get("mimeType", ""))
                pcm = _bytes(chunk.get("data", ""))
                self.chunk_arrivals.append((time.perf_counter(), pcm[:4]))
                self.audio.extend(pcm)
            if realtime.get("audioStreamEnd"):
                self.audio_stream_ended = True
        elif "toolResponse" in message:
            self.tool_responses.extend(message["toolResponse"].get("functionResponses", []))
        elif "clientContent" in message:
            self.client_contents.append(message["clientContent"])
        self.changed.set()


class LiveServer:
    """The local Live server; ``async with LiveServer(scripts) as live``."""

    def __init__(self, scripts: Sequence[Sequence[Step]]) -> None:
        assert scripts, "a Live server needs at least one connection's script"
        self.scripts = [list(script) for script in scripts]
        self.connections: list[Connection] = []
        self.failures: list[str] = []
        # The handles sent, each to the session it resumes; setups refused for their handle.
        self.handles: dict[str, int] = {}
        self.refused: list[str] = []
        self._certificate, self._server_context = _certificate()
        self._server: Any = None
        self.port = 0

    @property
    def url(self) -> str:
        """The base URL a google-genai client is given (it dials ``wss://`` there)."""
        return f"https://127.0.0.1:{self.port}"

    def client_context(self) -> ssl.SSLContext:
        """A TLS context that trusts this server's certificate."""
        return ssl.create_default_context(cadata=self._certificate)

    def client_options(self) -> dict[str, Any]:
        """``genai.Client(**options)`` (or ADK's ``Gemini(client_kwargs=...)``) reaches here."""
        return _client_options(self.url, self._certificate)

    def live_model(self) -> Gemini:
        """ADK's own Gemini model, its live connection made to this server."""
        return Gemini(model=MODEL, client_kwargs=self.client_options())

    def environ(self) -> dict[str, str]:
        """What a process of its own needs to reach this server (``live_model_from``)."""
        return {URL_VARIABLE: self.url, CA_VARIABLE: self._certificate}

    def forget(self, handle: str) -> None:
        """Loses a session's handle, as Gemini does once it expired."""
        self.handles.pop(handle, None)

    async def __aenter__(self) -> LiveServer:
        self._server = await serve(
            self._serve,
            "127.0.0.1",
            0,
            ssl=self._server_context,
            max_size=None,
            process_request=_model_info,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, websocket: ServerConnection) -> None:
        connection = Connection()
        try:
            connection.setup = _camel(json.loads(await websocket.recv()))["setup"]
        except (ConnectionClosed, KeyError, ValueError) as error:
            self.failures.append(f"connection {len(self.connections)}: no setup ({error!r})")
            return
        handle = connection.resumed_from
        if handle is not None and handle not in self.handles:
            self.refused.append(handle)
            await websocket.close(CLOSE_INVALID_ARGUMENT, "Invalid session resumption handle.")
            return
        index = len(self.connections)
        connection.session = self.handles[handle] if handle is not None else index
        self.connections.append(connection)
        script = self.scripts[min(index, len(self.scripts) - 1)]
        try:
            await websocket.send(json.dumps({"setupComplete": {}}).encode())
        except ConnectionClosed:
            return
        reader = asyncio.create_task(self._read(websocket, connection))
        try:
            await self._play(index, script, websocket, connection)
            await reader  # the script is done: the client decides when it ends
        except ConnectionClosed:
            pass
        finally:
            reader.cancel()
            connection.closed = True
            connection.changed.set()

    async def _read(self, websocket: ServerConnection, connection: Connection) -> None:
        try:
            async for raw in websocket:
                connection.take(_camel(json.loads(raw)))
        except ConnectionClosed:
            pass
        finally:
            connection.closed = True
            connection.changed.set()

    async def _play(
        self, index: int, script: list[Step], websocket: ServerConnection, connection: Connection
    ) -> None:
        tool_responses = client_contents = 0
        for number, step in enumerate(script):
            if isinstance(step, Send):
                for message in step.messages:
                    given = message.get("sessionResumptionUpdate", {}).get("newHandle")
                    if given:
                        self.handles[given] = connection.session
                    await websocket.send(json.dumps(message).encode())
                    connection.sent_at.append(time.perf_counter())
                continue
            if isinstance(step, Pause):
                await asyncio.sleep(step.seconds)
                continue
            if isinstance(step, Until):
                await step.signal.wait()
                continue
            if isinstance(step, Speak):
                await _speak(step, websocket, connection)
                continue
            if isinstance(step, Close):
                await websocket.close()
                return
            met: Callable[[], bool]
            if isinstance(step, WaitToolResponse):
                tool_responses += 1
                met = functools.partial(_at_least, connection.tool_responses, tool_responses)
            elif isinstance(step, WaitClientContent):
                client_contents += 1
                met = functools.partial(_at_least, connection.client_contents, client_contents)
            else:
                met = functools.partial(_at_least, connection.audio, step.total_bytes)
            if not await _until(met, connection):
                self.failures.append(f"connection {index}: step {number} ({step}) never met")
                await websocket.close()
                return


async def _speak(step: Speak, websocket: ServerConnection, connection: Connection) -> None:
    message = json.dumps(audio_out(step.chunk)).encode()
    loop = asyncio.get_running_loop()
    due = loop.time()
    sent = 0
    heard = step.until_heard if step.until_heard is not None else float("inf")
    while sent < step.chunks and len(connection.audio) < heard and not connection.closed:
        if loop.time() >= due:
            await websocket.send(message)
            connection.sent_at.append(time.perf_counter())
            sent += 1
            due += step.pace
            continue
        # Woken by audio in as well as by the clock: the person is heard at once.
        connection.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(connection.changed.wait(), due - loop.time())


def _model_info(connection: ServerConnection, request: Request) -> Response | None:
    """A plain GET (the gateway's readiness probe of the model) gets the model's info, as
    Gemini answers ``GET /v1beta/models/{model}``; a WebSocket upgrade goes on."""
    if request.headers.get("Upgrade", "").lower() == "websocket":
        return None
    response = connection.respond(HTTPStatus.OK, json.dumps({"name": f"models/{MODEL}"}))
    response.headers["Content-Type"] = "application/json"
    return response


def _at_least(received: Sized, count: int) -> bool:
    return len(received) >= count


async def _until(met: Callable[[], bool], connection: Connection) -> bool:
    """Waits until ``met()``; False when the budget ran out or the client left first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + scaled(WAIT_SECONDS)
    while not met():
        if connection.closed:
            return False
        connection.changed.clear()
        try:
            await asyncio.wait_for(connection.changed.wait(), deadline - loop.time())
        except TimeoutError:
            return met()
    return True


def _camel(value: Any, key: str = "") -> Any:
    """A client message with protobuf JSON's camelCase keys: google-genai sends snake_case,
    which Gemini accepts too. What a function returns or is called with stays as it is."""
    if isinstance(value, dict) and key not in _FREE_FORM:
        return {_camel_key(k): _camel(v, _camel_key(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(item, key) for item in value]
    return value


_FREE_FORM = {"response", "args", "parameters", "parametersJsonSchema"}


def _camel_key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word.title() for word in rest)


def _bytes(data: str) -> bytes:
    """Base64, standard or URL-safe (google-genai sends the latter)."""
    return base64.b64decode(data.replace("-", "+").replace("_", "/") + "=" * (-len(data) % 4))


def _certificate() -> tuple[str, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1: its PEM, and a server context holding it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gemini-live.test")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM).decode()
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory(prefix="gemini-live-cert-") as folder:
        cert_file, key_file = Path(folder, "cert.pem"), Path(folder, "key.pem")
        cert_file.write_text(pem)
        key_file.write_text(key_pem)
        context.load_cert_chain(cert_file, key_file)
    return pem, context
