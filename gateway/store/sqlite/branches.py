"""The branch moves (``gateway.store.branches``) on a SQLite connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from gateway.store import branches
from gateway.store.branches import BranchTree, Fork, Moved, Switch


class _Sqlite:
    """A connection as ``branches.Sql``: SQLite takes ``?`` and any seq it is given, and
    the writer's transaction (BEGIN IMMEDIATE) already keeps every other writer out."""

    overriding = ""
    for_update = ""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def rows(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self.db.execute(query, params).fetchall()

    def run(self, query: str, params: Sequence[Any]) -> None:
        self.db.execute(query, params)


def branch_tree(
    db: sqlite3.Connection, *, app_name: str, user_id: str, session_id: str
) -> BranchTree | None:
    return branches.read_tree(
        _Sqlite(db), app_name=app_name, user_id=user_id, session_id=session_id
    )


def move_branch(db: sqlite3.Connection, move: Fork | Switch) -> Moved:
    return branches.move(_Sqlite(db), move)
