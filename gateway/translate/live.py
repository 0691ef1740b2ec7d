"""A live turn's ADK events as AG-UI events and audio out: the translator of voice, no I/O.

Theory of operation. ``Runner.run_live`` yields, beside the events of any run (tool calls,
their results, state), events a typed run never has: transcriptions of the person
(``input_transcription``) and of the agent (``output_transcription``), partial as they are
heard and once finished; chunks of the agent's speech (``inline_data`` audio); and
``interrupted`` and ``turn_complete``. ``LiveTranslator`` turns those into text messages,
``role`` user and assistant, under the message id stamped on each piece
(``gateway.adk.live.Transcripts``, the id the store keeps, so a snapshot shows the id
streamed), and into ``AudioOut`` chunks numbered by the agent's turn; everything else goes
through the run's own ``RunTranslator``, so tool calls read as in any run.

At most one message is open at a time, as everywhere on the wire: a piece of the other
side's words ends the open message first, and a later piece of it reopens it under its own
id. An interruption ends the agent's message, marked as spoken over (``metadata.ended``
``"bargedIn"``, as the store keeps it), and names its turn in ``gateway.live.interrupted``,
so the client drops that turn's audio and no other. The agent's message is therefore
ended by the event after its finished transcript, not by the transcript itself: ADK
finishes a cut-off transcript before it says the turn was interrupted.
"""

from __future__ import annotations

from google.adk.events import Event as AdkEvent
from google.genai import types

from gateway import wire as p
from gateway.context import event_metadata
from gateway.translate.translator import RunTranslator
from gateway.wire import live

Out = p.Event | live.AudioOut

USER, ASSISTANT = "user", "assistant"


class LiveTranslator:
    """Translates one live turn's events; see the module's docstring."""

    def __init__(self, run: RunTranslator) -> None:
        self.run = run
        # The agent's turn the next audio chunk belongs to, from 1.
        self.turn = 1
        # The message open on the wire: (id, role), or None.
        self.open: tuple[str, str] | None = None
        # Messages started and not yet finished, by role: their ids.
        self.speaking: dict[str, str] = {}
        # The agent's latest message of this turn: what an interruption cuts off.
        self.replying: str | None = None
        # What each side said so far, by message id, until its utterance finishes.
        self.so_far: dict[str, str] = {}
        # The agent whose words are transcribed, as its messages name it.
        self.agent: str | None = None
        run.beside = self.reopen

    def translate(self, event: AdkEvent) -> list[Out]:
        out: list[Out] = []
        if event.input_transcription is not None:
            out += self._heard(USER, event, event.input_transcription)
        if event.output_transcription is not None:
            out += self._heard(ASSISTANT, event, event.output_transcription)
        parts = event.content.parts if event.content and event.content.parts else []
        for part in parts:
            if part.inline_data is not None and _is_audio(part.inline_data):
                out.append(live.AudioOut(self.turn, part.inline_data.data or b""))
        if any(part.function_call or part.function_response for part in parts):
            out += self._close()
            out += self.run.translate(event)
            # A typed run holds a client call to its end; a live turn goes on after it, so
            # the call goes out now (to the executor alone: ``Run`` routes it).
            for call_id in list(self.run.held):
                out += self.run.held.pop(call_id)
            # A typed run ends with its approvals; a live turn asks them as they come
            # (``gateway.adk.live_approvals``), and goes on once they are answered.
            out += [live.approval(interrupt) for interrupt in self.run.interrupts]
            self.run.interrupts.clear()
        if event.interrupted:
            out += self._interrupted()
        elif event.turn_complete:
            out += self._close()
            self.turn += 1
            self.replying = None
        return out

    def close(self) -> list[p.Event]:
        """Ends the message open on the wire, for the end of the live turn."""
        return self._close()

    def reopen(self) -> list[p.Event]:
        """Every utterance under way as it stands, for a subscriber that joins mid-turn (a
        snapshot shows finished ones only): the open one last, and left open."""
        out: list[p.Event] = []
        open_id = self.open[0] if self.open is not None else None
        for role, message_id in sorted(self.speaking.items(), key=lambda kv: kv[1] == open_id):
            name = self.agent if role == ASSISTANT else None
            out.append(p.TextMessageStart(message_id=message_id, role=role, name=name))  # type: ignore[arg-type]
            if text := self.so_far.get(message_id):
                out.append(p.TextMessageContent(message_id=message_id, delta=text))
            if message_id != open_id:
                out.append(p.TextMessageEnd(message_id=message_id))
        return out

    def _heard(self, role: str, event: AdkEvent, heard: types.Transcription) -> list[Out]:
        message_id = event_metadata(event).get("messageId") or self.speaking.get(role) or event.id
        text = heard.text or ""
        out: list[Out] = []
        if not heard.finished:
            if text:
                self.speaking[role] = message_id
                if role == ASSISTANT:
                    self.replying = message_id
                self.so_far[message_id] = self.so_far.get(message_id, "") + text
                out += self._into(message_id, role, event.author)
                out.append(p.TextMessageContent(message_id=message_id, delta=text))
            return out
        # Finished: the whole utterance, of which only what was not streamed is sent.
        if self.speaking.get(role) == message_id:
            del self.speaking[role]
        streamed = self.so_far.pop(message_id, "")
        rest = text[len(streamed) :] if text.startswith(streamed) else ""
        if rest:
            out += self._into(message_id, role, event.author)
            out.append(p.TextMessageContent(message_id=message_id, delta=rest))
        if (streamed or rest) and role == USER:
            out += self._end(message_id)
        # The agent's message stays open until the next event says whether the person
        # spoke over it (ADK finishes a cut-off transcript before it says so): its END
        # then carries the mark.
        return out

    def _interrupted(self) -> list[Out]:
        """ADK ends the cut-off transcript first, as finished; whatever it left open ends
        here, and the client is told which turn (and message) was cut off."""
        out: list[Out] = []
        if (speaking := self.speaking.pop(ASSISTANT, None)) is not None:
            self.so_far.pop(speaking, None)
        if self.open is not None and self.open[0] == self.replying:
            # Marked as the store marks it, a 1.0 client merging an END's metadata.
            ended = {"ended": live.BARGED_IN}
            out.append(p.TextMessageEnd(message_id=self.open[0], metadata=ended))
            self.open = None
        out += self._close()
        out.append(live.interrupted(self.turn, self.replying))
        self.turn += 1
        self.replying = None
        return out

    def _into(self, message_id: str, role: str, author: str) -> list[Out]:
        """Opens ``message_id`` on the wire (again), ending the one open before."""
        if self.open is not None and self.open[0] == message_id:
            return []
        out: list[Out] = list(self._close())
        name = author if role == ASSISTANT else None
        if name is not None:
            self.agent = name
        out.append(p.TextMessageStart(message_id=message_id, role=role, name=name))  # type: ignore[arg-type]
        self.open = (message_id, role)
        return out

    def _end(self, message_id: str) -> list[Out]:
        if self.open is not None and self.open[0] == message_id:
            self.open = None
            return [p.TextMessageEnd(message_id=message_id)]
        return []

    def _close(self) -> list[p.Event]:
        if self.open is None:
            return []
        message_id, _ = self.open
        self.open = None
        return [p.TextMessageEnd(message_id=message_id)]


def _is_audio(blob: types.Blob) -> bool:
    return (blob.mime_type or "").startswith("audio/")
