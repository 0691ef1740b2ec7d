"""The branch moves (``gateway.store.branches``) on a PostgreSQL connection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from gateway.store import branches
from gateway.store.branches import BranchTree, Fork, Moved, Switch
from gateway.store.postgres.snapshot import one_statement


class _Postgres:
    """A connection as ``branches.Sql``: ``%s`` markers, seqs given back to an identity
    column with OVERRIDING, and the session's row locked against other processes."""

    overriding = " OVERRIDING SYSTEM VALUE"
    for_update = " FOR UPDATE"

    def __init__(self, db: psycopg.Connection) -> None:
        self.db = db

    def rows(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self.db.execute(query.replace("?", "%s"), params).fetchall()

    def run(self, query: str, params: Sequence[Any]) -> None:
        self.db.execute(query.replace("?", "%s"), params)


@one_statement
def branch_tree(
    db: psycopg.Connection, *, app_name: str, user_id: str, session_id: str
) -> BranchTree | None:
    return branches.read_tree(
        _Postgres(db), app_name=app_name, user_id=user_id, session_id=session_id
    )


def move_branch(db: psycopg.Connection, move: Fork | Switch) -> Moved:
    return branches.move(_Postgres(db), move)
