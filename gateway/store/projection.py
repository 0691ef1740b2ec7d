"""A thread as AG-UI messages, read from what each event row keeps (snapshots, /history).

Each event row also keeps the AG-UI messages it shows as, made by the projection the
store is given (``messages``; the gateway's is ``history.event_messages``) and written
with the event, so a whole thread's snapshot is one read and a JSON decode
(``SessionService.thread_messages``) instead of rebuilding every ADK event with pydantic.
A change to what the projection returns needs a migration that recomputes the column.

A reattach sends the newest part of a long thread that fits a size, and ``GET /history``
pages back from where it starts (``ThreadPage.earlier``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from gateway.store.codec import Damage, decoded_messages
from gateway.store.messages import Message, answered_calls_only, ends_cut_off, goes_on
from gateway.store.quarantine import Quarantine


@dataclasses.dataclass(frozen=True, slots=True)
class StoredMessages:
    """A thread's AG-UI messages as stored, one JSON array per event row."""

    latest: str | None  # the id of the thread's latest event
    rows: list[tuple[int, str, float]]  # (seq, messages, the event's timestamp)
    quarantine: Quarantine | None  # if set, nothing else was read
    earlier: int | None = None  # a row older than these was left out: page back from here


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadPage:
    """The latest part of a thread as AG-UI messages, within a size (``thread_page``)."""

    messages: list[Message]
    latest: str | None  # the id of the thread's latest stored event
    # Where the page starts, when older messages were left out: the ``before`` of the page
    # before it. None: the page starts the thread.
    earlier: int | None
    # When each user and assistant message of the page was stored (its event's timestamp,
    # seconds since the epoch): AG-UI messages carry no time of their own.
    times: dict[str, float] = dataclasses.field(default_factory=dict)

    def times_ms(self) -> dict[str, int]:
        """The page's times as clients read them: ms since the epoch, by message id."""
        return {message_id: round(when * 1000) for message_id, when in self.times.items()}


def decoded_page(stored: StoredMessages) -> ThreadPage | Damage:
    """The page its rows make, or the first of its rows that cannot be decoded."""
    messages: list[Message] = []
    times: dict[str, float] = {}
    for seq, text, timestamp in stored.rows:
        decoded = decoded_messages(seq, text)
        if isinstance(decoded, Damage):
            return decoded
        messages.extend(decoded)
        for message in decoded:  # not checked yet: a damaged one is found below
            message_id = message.get("id")
            if message.get("role") in _TIMED and isinstance(message_id, str):
                times[message_id] = timestamp
    try:
        return ThreadPage(answered_calls_only(messages), stored.latest, stored.earlier, times)
    except (KeyError, TypeError):  # a message lacks what it needs; find its row
        pass
    # Checked only now: checking every message of every snapshot costs a quarter of it.
    for seq, text, _ in stored.rows:
        if isinstance(damage := decoded_messages(seq, text, checked=True), Damage):
            return damage
    return Damage(stored.rows[-1][0], "messages", "a message lacks what a snapshot needs")


# Rows read past a page's end to find whether the turn it ends in goes on: those of one
# turn's tool results (they say nothing of it), then its next reply; rarely more than one.
ACROSS_ROWS = 16


async def joined_across(
    page: ThreadPage,
    before: int | None,
    rows_from: Callable[[int, int], Awaitable[StoredMessages | None]],
) -> ThreadPage:
    """``page`` (of the rows before ``before``, if given) as the thread's snapshot shows it
    across its end (``joined``), reading the newer page's first rows (``rows_from``: the
    stored rows from a seq on, at most so many) only for a page that ends in a reply cut off
    before a word: rarely."""
    if before is None or not ends_cut_off(page.messages):
        return page
    return joined(page, before, await rows_from(before, ACROSS_ROWS))


def joined(page: ThreadPage, before: int, following: StoredMessages | None) -> ThreadPage:
    """``page`` (of the rows before ``before``) as the thread's snapshot shows it, given
    ``following``, the rows from ``before`` on (the newer page's first): the reply cut off
    before a word that ends it goes if those rows go on with its turn, past any tool results
    (``answered_calls_only``). Rows that say nothing of the turn (no reply, no user's
    message) leave it shown."""
    if following is None or not following.rows or following.rows[0][0] != before:
        return page  # ``before`` named no row: nothing known of what follows
    after = decoded_page(following)
    if isinstance(after, Damage) or not goes_on(after.messages):
        return page
    last = max(i for i, message in enumerate(page.messages) if message["role"] == "assistant")
    return dataclasses.replace(page, messages=page.messages[:last] + page.messages[last + 1 :])


# The messages a person reads as said at a time: what the user and the agent said.
_TIMED = frozenset({"user", "assistant"})
