"""A run's streamed messages, text and reasoning, one open at a time: part of the translator.

A model streams its reply (``TEXT_MESSAGE_*``) and, when it thinks aloud, its thoughts
(AG-UI 1.0 reasoning: a ``REASONING_START`` span holding one ``REASONING_MESSAGE_*``, both
under the message's reasoning id). Parallel agents stream at the same time, so their chunks
interleave. At most one message is open on the wire at a time: a chunk of another message
ends the open one, and a later chunk of the first reopens it under its own id (AG-UI 1.0
lets a closed message be reopened; its content continues). So no client ever sees two
messages open at once, and no two agents ever share a message id.

A message's text so far is kept until its final event arrives, so a subscriber that joins
mid-run gets every unfinished message as it stands (``replay``) and the store can keep it.
"""

from __future__ import annotations

import dataclasses
import enum

from gateway import wire as p

__all__ = ["Kind", "StreamedMessages", "reasoning_message_id"]


class Kind(enum.Enum):
    TEXT = "text"
    REASONING = "reasoning"


def reasoning_message_id(event_id: str) -> str:
    """The id of the thoughts an ADK event holds (its reply's id is the event's)."""
    return "rs-" + event_id


@dataclasses.dataclass(slots=True)
class _Unfinished:
    kind: Kind
    message_id: str
    owner: str | None  # subagentRunId
    name: str | None  # the agent speaking (text only)
    text: list[str] = dataclasses.field(default_factory=list)


class StreamedMessages:
    """Keyed by message id: a reply's and its thoughts' ids never collide (``rs-``)."""

    def __init__(self) -> None:
        self.unfinished: dict[str, _Unfinished] = {}
        self.open: str | None = None
        # Messages whose text has been sent, so their final event does not send it again.
        self.sent: set[str] = set()

    def add(
        self, kind: Kind, message_id: str, delta: str, *, owner: str | None, name: str | None
    ) -> list[p.Event]:
        """A chunk of a message: opens it (ending the open one) if it is not open."""
        message = self.unfinished.get(message_id)
        if message is None:
            message = self.unfinished[message_id] = _Unfinished(kind, message_id, owner, name)
            self.sent.add(message_id)
        message.text.append(delta)
        if self.open == message_id:
            return [_content(message, delta)]
        out = self.close()
        out += _opening(message)
        self.open = message_id
        out.append(_content(message, delta))
        return out

    def was_sent(self, message_id: str) -> bool:
        return message_id in self.sent

    def finish(self, message_id: str) -> list[p.Event]:
        """The message is complete (its final event came): ends it if open, forgets it."""
        out = self.close() if self.open == message_id else []
        self.unfinished.pop(message_id, None)
        return out

    def close(self) -> list[p.Event]:
        """Ends the open message, if any; it stays unfinished until its final event."""
        if self.open is None:
            return []
        message, self.open = self.unfinished[self.open], None
        return _closing(message)

    def text_so_far(self, message_id: str) -> str:
        message = self.unfinished.get(message_id)
        return "".join(message.text) if message else ""

    def replay(self) -> list[p.Event]:
        """Every unfinished message as it stands, for a late subscriber; the open one open,
        and last: a message reopened after another began must not be open while the other
        is shown."""
        out: list[p.Event] = []
        # A stable sort: the others in the order they began, then the open one.
        for message in sorted(self.unfinished.values(), key=lambda m: m.message_id == self.open):
            out += [*_opening(message), _content(message, "".join(message.text))]
            if message.message_id != self.open:
                out += _closing(message)
        return out


def _opening(message: _Unfinished) -> list[p.Event]:
    if message.kind is Kind.TEXT:
        return [
            p.TextMessageStart(
                message_id=message.message_id,
                role="assistant",
                name=message.name,
                subagent_run_id=message.owner,
            )
        ]
    return [
        p.ReasoningStart(message_id=message.message_id, subagent_run_id=message.owner),
        p.ReasoningMessageStart(
            message_id=message.message_id, role="reasoning", subagent_run_id=message.owner
        ),
    ]


def _content(message: _Unfinished, delta: str) -> p.Event:
    if message.kind is Kind.TEXT:
        return p.TextMessageContent(message_id=message.message_id, delta=delta)
    return p.ReasoningMessageContent(message_id=message.message_id, delta=delta)


def _closing(message: _Unfinished) -> list[p.Event]:
    if message.kind is Kind.TEXT:
        return [p.TextMessageEnd(message_id=message.message_id)]
    return [
        p.ReasoningMessageEnd(message_id=message.message_id),
        p.ReasoningEnd(message_id=message.message_id),
    ]
