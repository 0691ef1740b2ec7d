"""A read's result: the rows it fetched as plain values, decoded only once the read is over.

A read fetches every row it needs and returns them as plain values; they are decoded only
once the read is over, outside any cursor. A cursor left open by a failed decode would keep
a stale read snapshot on the store's one connection, and every later ``BEGIN IMMEDIATE``
would fail with "database is locked". The backend reads (``sqlite.reads``); this module
makes ADK sessions of what it read.
"""

from __future__ import annotations

import dataclasses

from google.adk.sessions.session import Session

from gateway.store.codec import Damage, decoded_event, decoded_state, load_state, merged_state
from gateway.store.parsed import RecentlyParsed
from gateway.store.quarantine import Quarantine
from gateway.store.session_json import remember


@dataclasses.dataclass(frozen=True, slots=True)
class StoredSession:
    """A session as its rows were read: decoded by ``decoded_session`` after the read."""

    app_name: str
    user_id: str
    session_id: str
    state: str
    scopes: tuple[str | None, str | None]  # the app state and the user state, as stored
    update_time: float
    revision: int
    events: list[tuple[int, str]]  # (seq, data)
    quarantine: Quarantine | None  # if set, nothing else was read


def decoded_session(
    stored: StoredSession, *, keep_texts: bool = False, parsed: RecentlyParsed | None = None
) -> Session | Damage:
    """The session its rows make, or the first of its values that cannot be decoded;
    ``keep_texts``: it keeps its events' texts, to be handed to a worker
    (``gateway.store.session_json``); ``parsed``: events appended a moment ago, taken
    rather than parsed again where a row is the text one was parsed from."""
    state = decoded_state(stored.state)
    if isinstance(state, Damage):
        return state
    events = []
    for seq, data in stored.events:
        taken = parsed.take(data) if parsed else None  # an empty one: no text to hash
        event = taken if taken is not None else decoded_event(seq, data)
        if isinstance(event, Damage):
            return event
        events.append(event)
    app_state, user_state = stored.scopes
    session = Session(
        app_name=stored.app_name,
        user_id=stored.user_id,
        id=stored.session_id,
        state=merged_state(state, load_state(app_state), load_state(user_state)),
        events=events,
        last_update_time=stored.update_time,
    )
    session._storage_update_marker = str(stored.revision)
    if keep_texts:
        remember(session, [data for _, data in stored.events])
    return session


@dataclasses.dataclass(frozen=True, slots=True)
class StoredListing:
    """The sessions of a listing as read: decoded by ``SessionService.list_sessions``."""

    app_state: str | None
    user_states: dict[str, str | None]
    # (owner, session id, state, update time, revision) of each thread not quarantined
    rows: list[tuple[str, str, str, float, int]]
