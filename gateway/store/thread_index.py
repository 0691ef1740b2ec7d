"""A user's threads as a list a person reads: titles, previews, flags, search, pages.

Theory of operation. Every thread (an ADK session row) carries what its listing shows:
a title, a preview of its last words, whether it is pinned or archived, and a small
metadata object of the client's. What the stored events say keeps them current: each
append hands the backend the event's ``IndexedText`` (what its AG-UI messages say, read
from the JSON the row keeps), which sets the preview, makes the first title from the
first user message (unless one exists, and never over a person's rename) and adds the
words to the thread's full-text index (SQLite FTS5, PostgreSQL ``tsvector``). A listing
is one read: the caller's threads, pinned first, then newest activity, after a keyset
``ListingCursor``; a search keeps the threads in which every ``SearchTerm`` of the query
matches a title or a message.

This module is the part every backend shares: the text an event indexes, how a title and
a preview are cut, how a query becomes terms (only word characters reach a backend,
which quotes them itself and binds them as parameters: a query is never SQL, nor FTS
syntax), the cursor, a PATCH as a value, and the row a listing reads. The SQL is in
``sqlite.thread_index`` and ``postgres.thread_index``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
from collections.abc import Iterable
from typing import Any

import msgspec

# A title made from the first user message: at most this many characters.
TITLE_CHARS = 80
# A preview: at most this many characters of the last user or assistant text.
PREVIEW_CHARS = 160
# What one event adds to the search index, at most (the rest of a long message is not found).
INDEXED_CHARS = 16384
# A query: at most this many characters (else BAD_QUERY), of which this many terms count.
QUERY_CHARS = 256
QUERY_TERMS = 16

# Where a thread's title came from; a person's rename is never replaced.
TITLE_FIRST = "first"
TITLE_MODEL = "model"
TITLE_USER = "user"

_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")


@dataclasses.dataclass(frozen=True, slots=True)
class IndexedText:
    """What one stored event says, for its thread's listing and search."""

    words: str  # every user and assistant text of it, for the index (``words_of``)
    user_text: str | None  # its user message's text, a title candidate
    last_text: str | None  # its last user or assistant text, for the preview

    @property
    def title(self) -> str | None:
        return first_title(self.user_text) if self.user_text else None

    @property
    def preview(self) -> str | None:
        return cut(self.last_text, PREVIEW_CHARS) if self.last_text else None


NOTHING = IndexedText("", None, None)


def listed(indexed: IndexedText, untitled: bool) -> tuple[str | None, str | None, str | None]:
    """What a stored event sets of its thread's listing columns: the preview, the title and
    its source, each None where the event leaves it as it is. The title is the first one,
    from the event's user text, only while the thread has none (``untitled``: its
    ``title_source`` is NULL, read in the write's transaction); a person's rename, the
    model's title or an earlier first title is never replaced."""
    title = indexed.title if untitled else None
    return indexed.preview, title, TITLE_FIRST if title is not None else None


def path_preview(newest_first: Iterable[str | None]) -> str:
    """The preview of a thread that shows these events' messages (newest first): the last
    words of the newest one that says something, as its append set them; "" for none.
    A branch move (``gateway.store.branches``) sets it, so the listing shows the words of
    the branch shown, not those of the one left."""
    for messages in newest_first:
        if (preview := indexed_text(messages).preview) is not None:
            return preview
    return ""


def indexed_text(messages: str | None) -> IndexedText:
    """The text of an event's stored AG-UI messages (a JSON array, or None)."""
    if not messages:
        return NOTHING
    try:
        shown = msgspec.json.decode(messages)
    except msgspec.DecodeError:
        return NOTHING  # a damaged row is the quarantine's business, not the index's
    texts: list[str] = []
    user_text = last_text = None
    for message in shown if isinstance(shown, list) else ():
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        text = _text_of(message.get("content"))
        if not text:
            continue
        texts.append(text)
        last_text = text
        if message["role"] == "user" and user_text is None:
            user_text = text
    return IndexedText(words_of(" ".join(texts)[:INDEXED_CHARS]), user_text, last_text)


def words_of(text: str) -> str:
    """The words of ``text`` as the index keeps them: runs of word characters, one space
    between. Both stores tokenize this, not the raw text, so a query's terms (made the
    same way) meet the same tokens ("R-1042" is "R 1042", never a signed number)."""
    return " ".join(_WORD.findall(text))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):  # multimodal: its text parts
        parts = (part.get("text") for part in content if isinstance(part, dict))
        return " ".join(text for text in parts if isinstance(text, str)).strip()
    return ""


def cut(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, cut on a word boundary with …"""
    line = _SPACE.sub(" ", text).strip()
    if len(line) <= limit:
        return line
    head = line[: limit - 1]
    # Back to the last space, unless that loses most of it (one long word, or no spaces).
    space = head.rfind(" ")
    if space >= limit // 2:
        head = head[:space]
    return head.rstrip() + "…"


def first_title(text: str) -> str:
    return cut(text, TITLE_CHARS)


def title_words(indexed: IndexedText, title: str | None) -> str | None:
    """The words of a first title the index needs a row of its own for, or None.

    A first title is the start of the event's first user text, whose words the event's
    own row holds from its start: a row of the title would find nothing more (its last
    word, cut, is a prefix of the message's), and cost a new thread a row and its index
    entries. A rename (``patch_thread``) writes the title's row."""
    if title is None:
        return None
    words = words_of(title)
    return None if indexed.words.startswith(words) else words


@dataclasses.dataclass(frozen=True, slots=True)
class SearchTerm:
    """One whitespace-separated piece of a query, as its word tokens: matched as a phrase,
    the last token as a prefix ("R-1042" is "r" then "1042*"; "업무" finds "업무를")."""

    tokens: tuple[str, ...]


def search_terms(query: str) -> list[SearchTerm]:
    """The terms of a query (at most ``QUERY_TERMS``); only word characters survive."""
    terms = []
    for piece in query.split():
        tokens = tuple(token.lower() for token in _WORD.findall(piece))
        if tokens:
            terms.append(SearchTerm(tokens[:8]))
    return terms[:QUERY_TERMS]


class BadCursor(ValueError):
    """A cursor no listing handed out."""


@dataclasses.dataclass(frozen=True, slots=True)
class ListingCursor:
    """Where the next page of a listing starts: after the thread it ended on, in the
    listing's order (pinned first, then newest activity, then thread id, descending)."""

    pinned: bool
    activity: float
    thread_id: str

    def encode(self) -> str:
        raw = msgspec.json.encode([int(self.pinned), self.activity, self.thread_id])
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> ListingCursor:
        """Raises BadCursor for anything ``encode`` did not make."""
        if not text or len(text) > 1024 or not text.isascii():
            raise BadCursor(text)
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            pinned, activity, thread_id = msgspec.json.decode(raw, type=tuple[int, float, str])
        except (binascii.Error, ValueError, msgspec.DecodeError):
            raise BadCursor(text) from None
        if pinned not in (0, 1) or activity != activity or "\x00" in thread_id:
            raise BadCursor(text)
        return cls(bool(pinned), activity, thread_id)


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadFilter:
    """Which of a user's threads a listing shows, and from where."""

    archived: bool | None = False  # None: archived or not
    terms: tuple[SearchTerm, ...] = ()
    after: ListingCursor | None = None
    limit: int = 30


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadRow:
    """One thread as its listing reads it; ``waiting_on`` names its open long-running
    calls (the hub says what each is)."""

    thread_id: str
    title: str
    created_at: float
    last_activity_at: float
    preview: str
    run_open: bool
    waiting_on: tuple[str, ...]
    titled_by: str | None  # TITLE_FIRST, TITLE_MODEL, TITLE_USER, or None: no title yet
    pinned: bool
    archived: bool
    metadata: str  # a JSON object, as the client last set it

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> ThreadRow:
        """From a backend's row; ``calls``: the open calls' names joined by U+001F."""
        thread_id, title, created, activity, preview, run_open, calls, titled_by = row[:8]
        pinned, archived, meta = row[8:]
        return cls(
            thread_id,
            title,
            created,
            activity,
            preview,
            bool(run_open),
            tuple(calls.split("\x1f")) if calls else (),
            titled_by,
            bool(pinned),
            bool(archived),
            meta,
        )

    @property
    def cursor(self) -> ListingCursor:
        return ListingCursor(self.pinned, self.last_activity_at, self.thread_id)


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadPatch:
    """What a PATCH changes (None: left as it is); a title set here is a person's, unless
    ``title_by`` says the model made it."""

    title: str | None = None
    archived: bool | None = None
    pinned: bool | None = None
    metadata: str | None = None  # the JSON object, encoded
    # Who made the title: a person (for ever), or the model (never over a person's).
    title_by: str = TITLE_USER

    def values(self) -> tuple[object, ...]:
        """What a backend's UPDATE sets: title, its source (if the title changes),
        archived, pinned, metadata; None for what stays as it was."""
        source = self.title_by if self.title is not None else None
        return (self.title, source, self.archived, self.pinned, self.metadata)

    @property
    def spares(self) -> str | None:
        """The title source a thread must not have for this patch to apply (None: any):
        a model's title never replaces a person's."""
        return TITLE_USER if self.title_by != TITLE_USER else None
