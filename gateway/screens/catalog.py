"""The screen catalog and who may open what.

Screens and users ship as JSON under ``data/``. Search ranks screens by how many of the
query's character trigrams appear in a screen's name, aliases and description, which copes
with Korean written with or without spaces ("업무요청" finds "업무 요청 목록"). Results are
filtered to the user's permitted screens before they leave this module.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"


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


@dataclasses.dataclass(frozen=True)
class ScreenCatalog:
    screens: dict[str, Screen]
    users: dict[str, User]

    def permitted(self, user_id: str) -> frozenset[str]:
        user = self.users.get(user_id)
        return user.screens if user else frozenset()

    def search(self, query: str, user_id: str, limit: int = 5) -> list[Screen]:
        """Screens the user may open, best match first; empty when nothing matches."""
        wanted = _trigrams(query)
        if not wanted:
            return []
        allowed = self.permitted(user_id)
        scored: list[tuple[float, str, Screen]] = []
        for screen in self.screens.values():
            if screen.screen_id not in allowed:
                continue
            name_hits = len(wanted & _trigrams(screen.name, *screen.aliases))
            text_hits = len(wanted & _trigrams(screen.description))
            score = (2 * name_hits + text_hits) / len(wanted)
            if name_hits or text_hits:
                # A shorter name that matches as well is the more specific screen.
                score -= len(screen.name) / 1000
                scored.append((score, screen.screen_id, screen))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [screen for _, _, screen in scored[:limit]]


def _trigrams(*texts: str) -> frozenset[str]:
    grams: set[str] = set()
    for text in texts:
        compact = "".join(text.lower().split())
        if 0 < len(compact) < 3:
            grams.add(compact)
        grams.update(compact[i : i + 3] for i in range(len(compact) - 2))
    return frozenset(grams)


@functools.cache
def load(directory: Path = DATA_DIR) -> ScreenCatalog:
    raw_screens = json.loads((directory / "screens.json").read_text(encoding="utf-8"))
    raw_users = json.loads((directory / "users.json").read_text(encoding="utf-8"))
    screens = {
        s["screenId"]: Screen(
            screen_id=s["screenId"],
            name=s["name"],
            route=s["route"],
            description=s["description"],
            aliases=tuple(s.get("aliases", ())),
            parent=s.get("parent"),
        )
        for s in raw_screens
    }
    users = {
        u["userId"]: User(
            user_id=u["userId"], name=u["name"], org=u["org"], screens=frozenset(u["screens"])
        )
        for u in raw_users
    }
    return ScreenCatalog(screens=screens, users=users)
