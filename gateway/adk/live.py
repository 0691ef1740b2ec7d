"""The ADK side of a live turn: ``Runner.run_live`` fed by a ``LiveRequestQueue``.

Theory of operation. A live turn is one ADK live invocation on the thread's session: the
gateway puts the person's audio on the turn's ``LiveRequestQueue`` as it arrives
(``hear``), and reads the events ``run_live`` yields (``events``) until the queue is closed
(``close``) and ADK's stream ends. ADK stores what it stores of a live invocation itself:
finished transcriptions of both sides, tool calls and results; never the audio chunks.

A live invocation has several writers of the thread at once (ADK's runner stores the
events it yields, ADK's sender stores typed text as it goes out, ``answer`` stores the
browser's results): the turn's appends wait for each other (``SessionService.serialised``),
since two in flight at once would carry the same revision and the store would refuse one.

A transcript reaches the client in pieces and the store as one finished event, and ADK gives
each piece an event id of its own. ``Transcripts`` (a plugin on the App) stamps every piece
of one utterance, and its finished event, with one message id, minted from the first
piece's event id, so the messages a snapshot reads from the store carry the ids the client
was streamed. An interruption is stamped with the message id of the reply it cut off
(``wire.live.CUT_OFF_KEY``), which ADK stored, finished, just before it.

A live turn resumes the provider's session the thread keeps (``gateway.adk.resumption``),
so the model goes on with the context it had, and is not sent the history again; when the
provider refuses that handle before anything was said, the turn starts afresh with the
history. Within a turn ADK itself reconnects with the newest handle when the provider
ends a connection (its time limit, a ``goAway``). ADK forgets its handle when the provider
says the session cannot be resumed just then (while it speaks or runs a tool); a
connection ended at such a moment ends ADK's stream though nobody closed the turn, and the
turn then resumes with the newest handle it was given.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Mapping
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig
from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session
from google.genai import errors as genai_errors
from google.genai import types
from websockets.exceptions import ConnectionClosed

from gateway import wire as p
from gateway.adk import telemetry
from gateway.adk.hosting import first_line
from gateway.adk.live_approvals import Asking, asking_in
from gateway.adk.resumption import KeptHandle, kept_handle
from gateway.context import RUN_METADATA_KEY, stamp
from gateway.models.failures import classify
from gateway.store.shared_writes import SharedWrites
from gateway.tools.client import CLIENT_TOOLS_KEY, ClientTool
from gateway.tools.per_invocation import InvocationPlugin
from gateway.wire import live

if TYPE_CHECKING:
    from gateway.adk.engine import Engine

log = logging.getLogger(__name__)

MIC_MIME_TYPE = f"audio/pcm;rate={live.INPUT_RATE}"

# The prefix of a transcript's message id, by side.
HEARD, SAID = "heard-", "said-"
# The note of the agent's latest message of the turn, which an interruption cuts off.
REPLY = "reply"


class LiveTurn:
    """One live invocation: audio in through its queue, ADK's events out."""

    def __init__(
        self,
        engine: Engine,
        user_id: str,
        thread_id: str,
        run_id: str,
        client_tools: Mapping[str, ClientTool] | None = None,
    ) -> None:
        self.engine = engine
        self.user_id, self.thread_id, self.run_id = user_id, thread_id, run_id
        # The client tools the model may call in this turn, as the client declared them.
        self.client_tools = dict(client_tools or {})
        self.queue = LiveRequestQueue()
        self.closed = False
        # The thread as ADK holds it for the turn: what the turn stores itself goes
        # through the same object, so the store's staleness check sees one writer.
        self.session: Session | None = None
        self.invocation_id: str | None = None
        # The turn's appends, while ADK runs it (``gateway.store.shared_writes``).
        self.writes: SharedWrites | None = None
        # The turn's calls waiting for a person's approval (``gateway.adk.live_approvals``).
        self.asking = Asking()
        # The provider's session the turn resumed, if it resumed one.
        self.resumed: KeptHandle | None = None
        # The newest resumable handle the provider gave during the turn.
        self.latest: KeptHandle | None = None

    def config(self, handle: str | None = None) -> RunConfig:
        return RunConfig(
            streaming_mode=StreamingMode.BIDI,
            response_modalities=[types.Modality.AUDIO],
            input_audio_transcription=types.AudioTranscriptionConfig(),
            output_audio_transcription=types.AudioTranscriptionConfig(),
            # The provider ends a connection (its time limit, a goAway): ADK reconnects with
            # the latest handle it was given, and the conversation goes on where it was.
            # ``handle``: the session the thread keeps, resumed from the first connection.
            session_resumption=types.SessionResumptionConfig(handle=handle),
            custom_metadata={
                RUN_METADATA_KEY: {
                    "runId": self.run_id,
                    "live": True,
                    CLIENT_TOOLS_KEY: sorted(self.client_tools),
                }
            },
            telemetry=telemetry.RUN_TELEMETRY,
        )

    async def events(self) -> AsyncGenerator[AdkEvent, None]:
        """ADK's live stream, until the queue is closed and ADK has let go."""
        engine = self.engine
        asking_in(self.asking)  # ADK's tasks for the turn start below, and inherit it
        self.session = session = await engine.session(self.user_id, self.thread_id)
        kept = kept_handle(session, time.time()) if session else None
        sessions = engine.sessions
        handed = sessions.handed_over(session) if session else nullcontext()
        # ADK's runner and its queue's sender both append, and so does ``answer``.
        serialised = sessions.serialised(session) if session else nullcontext()
        with engine.client_tools.offered(self.run_id, self.client_tools), handed, serialised as w:
            self.writes = w
            resume = kept
            while True:
                try:
                    async for event in self._run_live(resume):
                        yield event
                except genai_errors.APIError as refused:
                    if resume is None or resume is not kept or self.invocation_id is not None:
                        raise
                    # Expired, or lost by the provider: the thread's history will do instead.
                    log.warning(
                        "live run %s: the provider refused the thread's kept session (%s);"
                        " starting a new one with the history",
                        self.run_id,
                        first_line(refused),
                    )
                    resume = self.resumed = None
                    continue
                if self.closed or self.latest is None or self.latest is resume:
                    return
                # Nobody ended the turn: the provider ended its connection at a moment ADK
                # had no handle for (it forgets the one it had when told the session
                # cannot be resumed just now). The newest the turn was given will do.
                log.warning(
                    "live run %s: the provider's connection ended with nothing for ADK to"
                    " resume with; resuming with the newest handle of the turn",
                    self.run_id,
                )
                resume = self.latest

    async def _run_live(self, kept: KeptHandle | None) -> AsyncGenerator[AdkEvent, None]:
        if kept is not None:
            self.resumed = kept
            log.info(
                "live run %s resumes the provider's session (given %.0f s ago, event %s)",
                self.run_id,
                time.time() - kept.given_at,
                kept.event_id,
            )
        async for event in self.engine.runner.run_live(
            user_id=self.user_id,
            session_id=self.thread_id,
            live_request_queue=self.queue,
            run_config=self.config(kept.handle if kept else None),
        ):
            self.invocation_id = event.invocation_id
            update = event.live_session_resumption_update
            if update is not None and update.resumable and update.new_handle:
                self.latest = KeptHandle(update.new_handle, event.id, event.timestamp)
            yield event

    async def answer(self, call_id: str, name: str, response: dict[str, Any]) -> None:
        """Gives the model a client tool's result: stored first (ADK stores no function
        response sent to a live model), then sent."""
        part = types.Part(
            function_response=types.FunctionResponse(id=call_id, name=name, response=response)
        )
        content = types.Content(role="user", parts=[part])
        if self.session is not None:
            event = AdkEvent(invocation_id=self.invocation_id or "", author="user", content=content)
            await self.engine.append(self.session, event)
        if not self.closed:
            self.queue.send_content(content)

    def say(self, message_id: str, text: str) -> None:
        """Gives the model what the person typed, as a user turn: ADK stores it as it goes
        out, stamped with the message id the client sent it under."""
        content = types.Content(role="user", parts=[types.Part(text=text)])
        if self.writes is not None:
            self.writes.stamp(content, {"messageId": message_id, "runId": self.run_id})
        self.queue.send_content(content)

    def decide(self, request_id: str, response: dict[str, Any]) -> bool:
        """Gives a call waiting for approval the person's answer (a ``ToolConfirmation``
        as a dict); False if no call of this turn waits for it."""
        return self.asking.answer(request_id, response)

    def hear(self, pcm: bytes | memoryview) -> None:
        """Passes a chunk of the person's speech (16 kHz s16le PCM) on to the model."""
        if not self.closed:
            self.queue.send_realtime(types.Blob(data=bytes(pcm), mime_type=MIC_MIME_TYPE))

    def close(self) -> None:
        """No more audio: ADK closes the model's connection and its stream ends."""
        if not self.closed:
            self.closed = True
            self.queue.close()
            self.asking.end()


def stored(event: AdkEvent) -> bool:
    """Whether ADK stores a live event: not a partial one, and no chunk of media (speech is
    streamed, never stored: ``Runner._should_append_event``)."""
    if event.partial:
        return False
    parts = event.content.parts if event.content and event.content.parts else []
    return not any(
        part.inline_data is not None
        and (part.inline_data.mime_type or "").lower().startswith(("audio/", "video/", "image/"))
        for part in parts
    )


def live_failure(error: BaseException) -> p.GatewayError | None:
    """What a client is told when a live turn's model fails, as a code and a sentence;
    None for a failure nobody expected (an error id, and the traceback in the log)."""
    if isinstance(error, NotImplementedError):  # BaseLlm.connect: no live connection
        return p.GatewayError(
            p.ErrorCode.AGENT_ERROR,
            "This agent's model cannot hold a live (voice) conversation; talk to it in text,"
            " or host the agent on a Gemini Live model (docs/voice.md).",
        )
    if (failure := classify(error)) is not None:
        log.warning("a live turn's model failed: %s", failure.detail)
        return p.GatewayError(failure.code, failure.sentence)
    if isinstance(error, OSError | ConnectionClosed | genai_errors.APIError):
        log.warning("a live turn's model connection failed: %s", first_line(error))
        return p.GatewayError(
            p.ErrorCode.AGENT_ERROR,
            "The connection to the model's live service failed; start a new live turn to"
            " go on talking (what was said is kept).",
        )
    return None


class Transcripts(InvocationPlugin[dict[str, str]]):
    """Stamps every piece of one utterance, finished event included, with one message id."""

    def __init__(self) -> None:
        super().__init__(name="gateway_transcripts")

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: AdkEvent
    ) -> AdkEvent | None:
        heard = event.input_transcription
        said = event.output_transcription
        notes = self.notes.get(invocation_context.invocation_id)
        if heard is None and said is None:
            if notes is not None and (event.interrupted or event.turn_complete):
                notes.pop(SAID, None)  # the agent's next words are a new message
                replied = notes.pop(REPLY, None)
                if event.interrupted and replied is not None:
                    # Stored finished before the interruption was known: the mark that the
                    # person spoke over it rides on the interruption (``history``).
                    stamp(event, live.CUT_OFF_KEY, replied)
            return None
        notes = self.notes.setdefault(invocation_context.invocation_id, {})
        for prefix, transcription in ((HEARD, heard), (SAID, said)):
            if transcription is None:
                continue
            message_id = notes.setdefault(prefix, prefix + event.id)
            stamp(event, "messageId", message_id)
            if prefix == SAID:
                notes[REPLY] = message_id  # the agent's latest words of this turn
            if transcription.finished:
                del notes[prefix]
        return None
