"""A client's state: what ``RunAgentInput.state`` writes to its thread before the run.

Theory of operation. AG-UI's state is shared: the agent changes it (STATE_DELTA), and so
does the user, whose client sends its copy with every input. ``read_edit`` reads that copy
against the thread's state, key by key at the top level: a key whose value differs from
the thread's is written; one equal to it is the client's copy coming back and writes
nothing, so a client that resends the snapshot it was sent writes nothing at all. Keys the
client leaves out are kept (a client may hold part of the state, and CopilotKit sends
``{}`` before it has any); a key sent as ``null`` holds null, since ADK's state has no
removal. ``null`` or ``{}`` shares no state: nothing is written and no snapshot is sent.

A client writes only the scopes the gateway allows (``GATEWAY_CLIENT_STATE``; by default
the session's own keys, those without a prefix). A differing key of another scope, and
any ``temp:`` key, keeps the thread's value and is named in a STATE_KEYS_IGNORED notice,
not refused: a client's copy of ``user:`` and ``app:`` state goes stale whenever another
thread changes it, and an echo of that copy must not fail the user's run.

The edit is checked before anything is stored: a state that is not an object, or a thread
state that the edit would take past ``max_bytes`` of JSON or ``MAX_STATE_KEYS`` keys, is a
VALIDATION_ERROR (depth and lengths are the door's, ``gateway.wire.bounds``). The write
then travels with the run's message, as ADK's ``Runner.run_async(state_delta=...)`` stores
it: on the user's event, so the agent reads it from its first callback on; the planner
stores it on an event of its own when nothing runs yet. The run opens with a
STATE_SNAPSHOT of the thread's state with the edit in, for every watcher of the thread, and
a reload reads it from the store.

What wins: an edit is applied as its run starts, while the run holds the thread, so that
run's own changes come after it; an edit sent while another run is going is applied when
its own run starts, after that run's changes. The last writer wins, key by key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import msgspec
from google.adk.sessions.state import State

from gateway import wire as p
from gateway.translate.translator import shown_state
from gateway.wire.notices import notice

# The scopes a client may be allowed to write (``config.STATE_SCOPES``), by key prefix.
SESSION, USER, APP = "session", "user", "app"
# Keys a thread's state may hold once a client has written to it.
MAX_STATE_KEYS = 1000
# Ignored keys a notice names at most; it counts the rest.
NAMED_IN_NOTICE = 10

_canonical = msgspec.json.Encoder(order="sorted")


@dataclasses.dataclass(frozen=True)
class StateRules:
    """What a client may write: the scopes it may write (``scope_of``), and how large the
    thread's state may grow by its writes, in bytes of JSON."""

    scopes: frozenset[str] = frozenset({SESSION})
    max_bytes: int = 256 << 10


DEFAULT_RULES = StateRules()


@dataclasses.dataclass(frozen=True)
class StateEdit:
    """What an input's state does to its thread."""

    # The keys it writes, with their new values; empty when the client's copy is current.
    delta: dict[str, Any]
    # Keys it may not write whose values differ from the thread's; they keep the thread's.
    ignored: list[str]
    # The thread's state as clients see it, with the edit in: what the run opens with.
    snapshot: dict[str, Any]

    def notices(self) -> list[p.Event]:
        if not self.ignored:
            return []
        named = ", ".join(repr(key) for key in self.ignored[:NAMED_IN_NOTICE])
        more = len(self.ignored) - NAMED_IN_NOTICE
        if more > 0:
            named += f" and {more} more"
        return [
            notice(
                "STATE_KEYS_IGNORED",
                f"State keys {named} were not written: a client may not write them here"
                " (temp: keys never; app: and user: keys only where GATEWAY_CLIENT_STATE"
                " allows), so the thread keeps its own values, which this run's"
                " STATE_SNAPSHOT shows.",
            )
        ]


def scope_of(key: str) -> str | None:
    """The scope a state key belongs to; None for ``temp:``, which no client writes."""
    if key.startswith(State.TEMP_PREFIX):
        return None
    if key.startswith(State.APP_PREFIX):
        return APP
    if key.startswith(State.USER_PREFIX):
        return USER
    return SESSION


def read_edit(shared: Any, thread: Mapping[str, Any], rules: StateRules) -> StateEdit | None:
    """What ``shared`` (an input's ``state``) writes to a thread whose state is ``thread``;
    None when it shares none. Raises VALIDATION_ERROR, before anything is stored, for a
    state that is not an object or an edit past ``rules``' bounds."""
    if shared is None or shared == {}:
        return None
    if not isinstance(shared, dict):
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"RunAgentInput.state must be a JSON object (or null), not {_kind(shared)}:"
            " send the shared state as an object of keys.",
        )
    delta: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in shared.items():
        if key in thread and _same(value, thread[key]):
            continue  # the client's copy of it, sent back
        if scope_of(key) in rules.scopes:
            delta[key] = value
        else:
            ignored.append(key)
    snapshot = {key: value for key, value in thread.items() if shown_state(key)} | delta
    if delta:
        _check_size(snapshot, rules)
    return StateEdit(delta, ignored, snapshot)


def _check_size(state: dict[str, Any], rules: StateRules) -> None:
    if len(state) > MAX_STATE_KEYS:
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"RunAgentInput.state would give the thread's state {len(state)} keys; it may"
            f" hold at most {MAX_STATE_KEYS}: keep lists of things under one key.",
        )
    size = len(_canonical.encode(state))
    if size > rules.max_bytes:
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"RunAgentInput.state would make the thread's state {size} bytes of JSON; it may"
            f" hold at most {rules.max_bytes} (GATEWAY_MAX_STATE_BYTES): keep large data out"
            " of the shared state.",
        )


def _same(sent: Any, held: Any) -> bool:
    """Whether two values are the same JSON (``true`` is not ``1``; key order is moot)."""
    try:
        return _canonical.encode(sent) == _canonical.encode(held)
    except (TypeError, msgspec.EncodeError):  # an agent's value that is not JSON
        return False


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"
