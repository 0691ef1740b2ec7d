"""A thread's branches: the versions of a turn it keeps, and which of them it shows.

Theory of operation. The ``events`` table holds a thread's active path and nothing else,
so every read that exists (ADK's session, a snapshot, ``/history``, a run's start) shows
the active branch without knowing that branches exist. The versions not shown wait in
``branch_events``, each row with its seq unchanged and tagged with its branch, and go back
into ``events`` when a switch makes their branch active again.

Branches are segments of a tree (``branches`` rows; the trunk, id 0, has no row). A
segment holds the events of its thread between where it begins and where its children
fork: every event on the active path belongs to the deepest branch of the active chain
whose ``fork_seq`` is at or before it (the trunk's is 0), since a branch is made after
every event before its fork and so all its own events come later. A fork before a turn
that starts inside a segment splits it: the part from the turn on becomes a branch of its
own (the original version, keeping the segment's children), and the new version its
sibling. A fork before a turn that starts a branch adds a sibling to that branch. So every
fork point has its versions as rows sharing (``parent``, ``fork_seq``), and only a leaf is
ever appended to: the active chain always ends in one.

A fork or a switch is one write (``Fork``, ``Switch``), applied in the writer's
transaction with every other write: it moves rows between the two tables, makes the
session's state what the active path wrote (``path_state``), bumps the session's revision
(a copy loaded before is stale) and points its invocation at the path's last one. The SQL
is written once here, against ``Sql``: each backend adapts its connection to it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import msgspec
from google.adk.sessions import _session_util

from gateway.store.codec import dump, load_state
from gateway.store.run_start import run_of
from gateway.store.thread_index import path_preview

# The longest text of a branch's first message a listing carries.
TEXT_CHARS = 200
TRUNK = 0
_EVENT_COLUMNS = "seq, session_pk, id, invocation_id, author, timestamp, data, messages"


class Sql(Protocol):
    """A backend's connection, as the branch moves use it: queries with ``?`` markers."""

    # What follows an INSERT's columns so that it keeps the seq it is given.
    overriding: str
    # What follows the session's SELECT so that no other writer moves it meanwhile.
    for_update: str

    def rows(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]: ...

    def run(self, query: str, params: Sequence[Any]) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class Branch:
    """One version of a turn: ``run_id`` began it with ``message_id`` (``text``)."""

    id: int
    parent: int
    fork_seq: int
    run_id: str
    message_id: str
    text: str
    # The run this version continues from: the last run before its fork (None: none).
    parent_run_id: str | None
    created_at: float
    selected_at: float
    # Made by a fork (what ``GATEWAY_BRANCHES_PER_THREAD`` counts), not split off by one.
    forked: bool


@dataclasses.dataclass(frozen=True, slots=True)
class BranchTree:
    """A thread's branches and the leaf its active path ends in."""

    active: int
    branches: tuple[Branch, ...]

    def chain(self) -> list[Branch]:
        """The active path's branches below the trunk, the oldest fork first."""
        by_id = {branch.id: branch for branch in self.branches}
        chain: list[Branch] = []
        node = self.active
        while node != TRUNK:
            chain.append(by_id[node])
            node = by_id[node].parent
        return chain[::-1]

    def siblings(self, branch: Branch) -> list[Branch]:
        """The versions of ``branch``'s fork point, the oldest first."""
        return sorted(
            (
                b
                for b in self.branches
                if (b.parent, b.fork_seq) == (branch.parent, branch.fork_seq)
            ),
            key=lambda b: (b.created_at, b.id),
        )

    def listing(self) -> dict[str, Any]:
        """The ``gateway.branches`` object (docs/branches.md): the forks on the active path."""
        forks = []
        for active in self.chain():
            forks.append(
                {
                    "messageId": active.message_id,
                    "parentRunId": active.parent_run_id,
                    "branches": [
                        {
                            "runId": b.run_id,
                            "messageId": b.message_id,
                            "text": b.text,
                            "createdAt": round(b.created_at * 1000),
                            "active": b.id == active.id,
                        }
                        for b in self.siblings(active)
                    ],
                }
            )
        return {"forks": forks}


NO_BRANCHES = BranchTree(TRUNK, ())


@dataclasses.dataclass(frozen=True, slots=True)
class Fork:
    """Forks a thread before the turn of its user message ``before``; the new version is
    begun by ``run_id`` with ``message_id`` (``text``). ``implicit``: asked by a stock
    client resending a message; a thread without that message, or one that waits on the
    user, is then left as it is (``Moved.changed`` false) rather than refused."""

    app_name: str
    user_id: str
    session_id: str
    before: str
    run_id: str
    message_id: str
    text: str
    now: float
    most: int  # branches made by forks a thread may have; 0: no limit
    implicit: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Switch:
    """Makes the branch begun by ``run_id`` active, and under it the branches last shown."""

    app_name: str
    user_id: str
    session_id: str
    run_id: str
    now: float


@dataclasses.dataclass(frozen=True, slots=True)
class Moved:
    """What a fork or a switch left: the thread's branches, and for a fork the run the new
    version continues from. ``changed`` false: nothing moved (a switch to the branch shown
    already, an implicit fork that did not apply)."""

    tree: BranchTree
    changed: bool
    parent_run_id: str | None = None


class BranchRefused(Exception):
    """A fork or switch the thread cannot take: ``reason`` says which rule (``no_thread``,
    ``no_message``, ``no_branch``, ``waiting``, ``too_many``), ``limit`` the cap for
    ``too_many``."""

    def __init__(self, reason: str, limit: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.limit = limit


def read_tree(sql: Sql, *, app_name: str, user_id: str, session_id: str) -> BranchTree | None:
    """The thread's branches; None if there is no such thread of the user. One statement
    (on PostgreSQL, a read of one statement needs no transaction of its own): a row a
    branch, or one with none, each with the thread's active branch."""
    rows = sql.rows(
        f"SELECT s.branch, {_branch_columns('b.')} FROM sessions s"
        " LEFT JOIN branches b ON b.session_pk = s.pk"
        " WHERE s.app_name = ? AND s.user_id = ? AND s.id = ? ORDER BY b.id",
        (app_name, user_id, session_id),
    )
    if not rows:
        return None
    return BranchTree(rows[0][0], tuple(_branch(row[1:]) for row in rows if row[1] is not None))


def move(sql: Sql, move: Fork | Switch) -> Moved:
    """Applies a fork or a switch in the writer's transaction."""
    return fork(sql, move) if isinstance(move, Fork) else switch(sql, move)


def fork(sql: Sql, fork: Fork) -> Moved:
    pk, active = _session(sql, fork.app_name, fork.user_id, fork.session_id)
    tree = _tree(sql, pk, active)
    try:
        _check_idle(sql, pk)
        at, old_text, timestamp, data = _user_turn(sql, pk, fork.before)
    except BranchRefused:
        if fork.implicit:
            return Moved(tree, changed=False)
        raise
    if fork.most and sum(b.forked for b in tree.branches) >= fork.most:
        raise BranchRefused("too_many", fork.most)
    chain = tree.chain()
    starts = [TRUNK, *(b.fork_seq for b in chain)]
    nodes = [TRUNK, *(b.id for b in chain)]
    index = max(i for i, start in enumerate(starts) if start <= at)
    next_id = max((b.id for b in tree.branches), default=TRUNK) + 1
    before_fork = sql.rows(
        "SELECT data FROM events WHERE session_pk = ? AND seq < ? ORDER BY seq DESC LIMIT 1",
        (pk, at),
    )
    parent_run_id = run_of(before_fork[0][0]) if before_fork else None
    owner = chain[index - 1] if index else None
    begins_owner = owner is not None and not sql.rows(
        "SELECT 1 FROM events WHERE session_pk = ? AND seq >= ? AND seq < ? LIMIT 1",
        (pk, starts[index], at),
    )
    if owner is not None and begins_owner:
        # The turn begins a version already: the new one is its sibling.
        parent, fork_seq, parent_run_id = owner.parent, owner.fork_seq, owner.parent_run_id
    else:
        # Split the segment: from the turn on, it is the original version of its own.
        original = Branch(
            next_id,
            nodes[index],
            at,
            run_of(data) or "",
            fork.before,
            old_text,
            parent_run_id,
            timestamp,
            owner.selected_at if owner is not None else timestamp,
            forked=False,
        )
        _insert(sql, pk, original)
        sql.run(
            "UPDATE branches SET parent = ? WHERE session_pk = ? AND parent = ? AND id <> ?",
            (original.id, pk, nodes[index], original.id),
        )
        nodes = [*nodes[: index + 1], original.id, *nodes[index + 1 :]]
        starts = [*starts[: index + 1], at, *starts[index + 1 :]]
        parent, fork_seq, next_id, index = nodes[index], at, next_id + 1, index + 1
    _move_out(sql, pk, list(zip(starts, nodes, strict=True))[index:])
    new = Branch(
        next_id,
        parent,
        fork_seq,
        fork.run_id,
        fork.message_id,
        fork.text[:TEXT_CHARS],
        parent_run_id,
        fork.now,
        fork.now,
        forked=True,
    )
    _insert(sql, pk, new)
    _activate(sql, pk, new.id, [new.id], fork.now)
    return Moved(_tree(sql, pk, new.id), changed=True, parent_run_id=parent_run_id)


def switch(sql: Sql, switch: Switch) -> Moved:
    pk, active = _session(sql, switch.app_name, switch.user_id, switch.session_id)
    tree = _tree(sql, pk, active)
    by_id = {b.id: b for b in tree.branches}
    target = next((b for b in tree.branches if b.run_id == switch.run_id), None)
    if target is None:
        raise BranchRefused("no_branch")
    chain = tree.chain()
    on_path = {TRUNK, *(b.id for b in chain)}
    if target.id in on_path:
        return Moved(tree, changed=False)
    _check_idle(sql, pk)
    # Up from the target to the active path, then down along what was last shown.
    down = [target]
    while down[0].parent not in on_path:
        down.insert(0, by_id[down[0].parent])
    while children := [b for b in tree.branches if b.parent == down[-1].id]:
        down.append(max(children, key=lambda b: (b.selected_at, b.id)))
    fork_at = down[0].fork_seq
    leaving = [(b.fork_seq, b.id) for b in chain if b.fork_seq >= fork_at]
    _move_out(sql, pk, leaving)
    for branch in down:
        sql.run(
            f"INSERT INTO events ({_EVENT_COLUMNS}){sql.overriding} SELECT {_EVENT_COLUMNS}"
            " FROM branch_events WHERE session_pk = ? AND branch = ?",
            (pk, branch.id),
        )
        sql.run("DELETE FROM branch_events WHERE session_pk = ? AND branch = ?", (pk, branch.id))
    _activate(sql, pk, down[-1].id, [b.id for b in down], switch.now)
    return Moved(_tree(sql, pk, down[-1].id), changed=True)


def path_state(stored: str, written: Iterable[str], path: Iterable[str]) -> str:
    """The session state once the active path is all the thread shows: what its events
    wrote, in order, over what none of the thread's events wrote (the state it was made
    with). ``written``: every event of the thread, any branch; ``path``: the path's."""
    state = load_state(stored)
    for data in written:
        for key in _session_delta(data):
            state.pop(key, None)
    for data in path:
        state.update(_session_delta(data))
    return dump(state)


class _Actions(msgspec.Struct, rename="camel"):
    state_delta: dict[str, Any] | None = None


class _Written(msgspec.Struct):  # events are stored by their aliases
    actions: _Actions | None = None


_written = msgspec.json.Decoder(_Written)


def _session_delta(data: str) -> dict[str, Any]:
    try:
        actions = _written.decode(data).actions
    except msgspec.DecodeError:
        return {}  # a damaged row is the quarantine's to find
    delta = actions.state_delta if actions is not None else None
    return _session_util.extract_state_delta(delta or {})["session"]


def _session(sql: Sql, app_name: str, user_id: str, session_id: str) -> tuple[int, int]:
    row = sql.rows(
        "SELECT pk, branch FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?"
        + sql.for_update,
        (app_name, user_id, session_id),
    )
    if not row:
        raise BranchRefused("no_thread")
    return int(row[0][0]), int(row[0][1])


def _tree(sql: Sql, pk: int, active: int) -> BranchTree:
    rows = sql.rows(
        f"SELECT {_branch_columns()} FROM branches WHERE session_pk = ? ORDER BY id",
        (pk,),
    )
    return BranchTree(active, tuple(_branch(row) for row in rows))


# A branch's columns, in ``Branch``'s order.
_BRANCH_COLUMNS = (
    "id",
    "parent",
    "fork_seq",
    "run_id",
    "message_id",
    "text",
    "parent_run_id",
    "created_at",
    "selected_at",
    "forked",
)


def _branch_columns(table: str = "") -> str:
    """The columns of a branch's row, each after ``table`` (its name and a dot, if any)."""
    return ", ".join(table + column for column in _BRANCH_COLUMNS)


def _branch(r: Sequence[Any]) -> Branch:
    return Branch(int(r[0]), int(r[1]), int(r[2]), r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]))


def _check_idle(sql: Sql, pk: int) -> None:
    """Refuses a thread that waits on the user: its open calls belong to the path shown."""
    if sql.rows("SELECT 1 FROM open_calls WHERE session_pk = ? LIMIT 1", (pk,)):
        raise BranchRefused("waiting")


def _user_turn(sql: Sql, pk: int, message_id: str) -> tuple[int, str, float, str]:
    """The seq, text, time and data of the event of the path's user message ``message_id``."""
    rows = sql.rows(
        "SELECT seq, messages, timestamp, data FROM events"
        " WHERE session_pk = ? AND author = 'user' AND messages IS NOT NULL ORDER BY seq",
        (pk,),
    )
    for seq, messages, timestamp, data in rows:
        for message in json.loads(messages):
            if message.get("role") == "user" and message.get("id") == message_id:
                return int(seq), _text(message.get("content"))[:TEXT_CHARS], timestamp, data
    raise BranchRefused("no_message")


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    return ""


def _insert(sql: Sql, pk: int, branch: Branch) -> None:
    sql.run(
        "INSERT INTO branches (session_pk, id, parent, fork_seq, run_id, message_id, text,"
        " parent_run_id, created_at, selected_at, forked)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            pk,
            branch.id,
            branch.parent,
            branch.fork_seq,
            branch.run_id,
            branch.message_id,
            branch.text,
            branch.parent_run_id,
            branch.created_at,
            branch.selected_at,
            branch.forked,
        ),
    )


def _move_out(sql: Sql, pk: int, segments: list[tuple[int, int]]) -> None:
    """Moves the path's events from the first segment's start on aside, each tagged with
    its segment: (start, branch) pairs, oldest first, the last running to the path's end."""
    if not segments:
        return
    ends = [start for start, _ in segments[1:]] + [None]
    for (start, branch), end in zip(segments, ends, strict=True):
        bound, params = (
            ("", (branch, pk, start)) if end is None else (" AND seq < ?", (branch, pk, start, end))
        )
        sql.run(
            f"INSERT INTO branch_events (branch, {_EVENT_COLUMNS})"
            f" SELECT ?, {_EVENT_COLUMNS} FROM events WHERE session_pk = ? AND seq >= ?{bound}",
            params,
        )
    sql.run("DELETE FROM events WHERE session_pk = ? AND seq >= ?", (pk, segments[0][0]))


def _activate(sql: Sql, pk: int, leaf: int, shown: list[int], now: float) -> None:
    """Points the session at its new path: its leaf, state, revision and last invocation."""
    for branch in shown:
        sql.run(
            "UPDATE branches SET selected_at = ? WHERE session_pk = ? AND id = ?",
            (now, pk, branch),
        )
    (stored,) = sql.rows("SELECT state FROM sessions WHERE pk = ?", (pk,))[0]
    written = [d for (d,) in sql.rows("SELECT data FROM branch_events WHERE session_pk = ?", (pk,))]
    on_path = sql.rows("SELECT data, messages FROM events WHERE session_pk = ? ORDER BY seq", (pk,))
    path = [data for data, _ in on_path]
    state = path_state(stored, [*written, *path], path)
    # The listing's preview: the last words of the path shown, not of the one left.
    preview = path_preview(messages for _, messages in reversed(on_path))
    last = sql.rows(
        "SELECT invocation_id FROM events WHERE session_pk = ? ORDER BY seq DESC LIMIT 1", (pk,)
    )
    invocation_id = last[0][0] if last else None
    invocation_seq = None
    if invocation_id is not None:
        (before,) = sql.rows(
            "SELECT MAX(seq) FROM events WHERE session_pk = ? AND invocation_id <> ?",
            (pk, invocation_id),
        )[0]
        (invocation_seq,) = sql.rows(
            "SELECT MIN(seq) FROM events WHERE session_pk = ? AND seq > ?",
            (pk, before if before is not None else -1),
        )[0]
    sql.run(
        "UPDATE sessions SET branch = ?, state = ?, revision = revision + 1, update_time = ?,"
        " invocation_id = ?, invocation_seq = ?, run_open = ?, preview = ? WHERE pk = ?",
        (leaf, state, now, invocation_id, invocation_seq, False, preview, pk),
    )
    sql.run("DELETE FROM streamed_texts WHERE session_pk = ?", (pk,))
