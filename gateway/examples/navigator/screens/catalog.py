"""The screen catalog and who may open what.

Screens and users ship as JSON under ``data/`` (``screens.json`` is written by
``generate.py``). A user's permissions are menu grants: granting a screen grants the
screens under it, and ``except`` takes a screen and the screens under it back. Loading
puts everything into one in-memory SQLite database, built once per process, where
``search`` ranks screens with FTS5; the dicts here answer the lookups that need no ranking.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.examples.navigator.screens.search import ScreenIndex

DATA_DIR = Path(__file__).resolve().parent / "data"


class CatalogError(Exception):
    """The screen data cannot be loaded; the message names the entry."""


@dataclasses.dataclass(frozen=True)
class Screen:
    screen_id: str
    name: str
    route: str
    description: str
    aliases: tuple[str, ...] = ()
    parent: str | None = None

    def as_result(self) -> dict[str, Any]:
        return {
            "screenId": self.screen_id,
            "name": self.name,
            "route": self.route,
            "description": self.description,
        }


@dataclasses.dataclass(frozen=True)
class User:
    user_id: str
    name: str
    org: str
    screens: frozenset[str]


class ScreenCatalog:
    """Screens, users and their permissions, with a ranked search over what a user may open."""

    def __init__(self, screens: Iterable[Screen], users: Iterable[User]) -> None:
        self.screens: dict[str, Screen] = {screen.screen_id: screen for screen in screens}
        self.users: dict[str, User] = {user.user_id: user for user in users}
        self._index = ScreenIndex(
            list(self.screens.values()),
            {user.user_id: user.screens for user in self.users.values()},
            {user.user_id: (user.name, user.org) for user in self.users.values()},
        )

    def permitted(self, user_id: str) -> frozenset[str]:
        user = self.users.get(user_id)
        return user.screens if user else frozenset()

    def profile(self, user_id: str) -> dict[str, Any]:
        """The user and the screens they may open: the web client's menu (GET /me)."""
        user = self.users.get(user_id)
        permitted = self.permitted(user_id)
        return {
            "userId": user_id,
            "name": user.name if user else user_id,
            "org": user.org if user else None,
            "screens": [
                {**screen.as_result(), "parent": screen.parent}
                for screen in self.screens.values()
                if screen.screen_id in permitted
            ],
        }

    def may_open(self, user_id: str, screen_id: str) -> bool:
        return screen_id in self.screens and screen_id in self.permitted(user_id)

    def search(self, query: str, user_id: str, limit: int = 5) -> list[Screen]:
        """Screens the user may open, best match first; empty when nothing matches.

        Permissions are applied inside the database query, so a screen the user may not
        open is never ranked, let alone returned.
        """
        return [self.screens[screen_id] for screen_id in self._index.search(query, user_id, limit)]


def from_records(
    screens: Sequence[Mapping[str, Any]], users: Sequence[Mapping[str, Any]]
) -> ScreenCatalog:
    """Builds a catalog from the JSON shapes of ``screens.json`` and ``users.json``."""
    try:
        parsed = [
            Screen(
                screen_id=s["screenId"],
                name=s["name"],
                route=s["route"],
                description=s["description"],
                aliases=tuple(s.get("aliases", ())),
                parent=s.get("parent"),
            )
            for s in screens
        ]
    except KeyError as exc:
        raise CatalogError(f"a screen is missing the field {exc}") from None
    tree = _children(parsed)
    people: list[User] = []
    for raw in users:
        user_id = raw.get("userId", "?")
        granted = _subtrees(raw.get("grants", ()), tree, f"user {user_id!r} grants")
        taken = _subtrees(raw.get("except", ()), tree, f"user {user_id!r} except")
        try:
            people.append(User(user_id, raw["name"], raw["org"], frozenset(granted - taken)))
        except KeyError as exc:
            raise CatalogError(f"user {user_id!r} is missing the field {exc}") from None
    return ScreenCatalog(parsed, people)


@functools.cache
def load(directory: Path = DATA_DIR) -> ScreenCatalog:
    """The shipped catalog, built once per process."""
    return from_records(
        json.loads((directory / "screens.json").read_text(encoding="utf-8")),
        json.loads((directory / "users.json").read_text(encoding="utf-8")),
    )


def _children(screens: Sequence[Screen]) -> dict[str | None, list[str]]:
    known = {screen.screen_id for screen in screens}
    if len(known) != len(screens):
        raise CatalogError("two screens share a screenId")
    tree: dict[str | None, list[str]] = {}
    for screen in screens:
        if screen.parent is not None and screen.parent not in known:
            raise CatalogError(f"screen {screen.screen_id}: parent {screen.parent} does not exist")
        tree.setdefault(screen.parent, []).append(screen.screen_id)
    return tree


def _subtrees(roots: Iterable[str], tree: Mapping[str | None, list[str]], where: str) -> set[str]:
    known = {child for children in tree.values() for child in children}
    found: set[str] = set()
    stack = list(roots)
    for root in stack:
        if root not in known:
            raise CatalogError(f"{where}: screen {root} does not exist")
    while stack:
        screen_id = stack.pop()
        if screen_id not in found:
            found.add(screen_id)
            stack.extend(tree.get(screen_id, ()))
    return found
