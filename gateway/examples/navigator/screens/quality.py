"""Search quality on a labelled query set: shared by the test and the benchmark.

A labelled query is one JSON object per line: the words a user typed, the user, and
the screens that would be a right answer (any of them counts). A query with no right
answer (``"expect": []``) asks for a screen the catalog does not have ("회사 식당 메뉴"):
the right answer is none, and any screen found for it would be a false action.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from gateway.examples.navigator.screens.catalog import ScreenCatalog


@dataclasses.dataclass(frozen=True)
class LabelledQuery:
    query: str
    user: str
    expect: frozenset[str]


@dataclasses.dataclass(frozen=True)
class Recall:
    k: int
    found: int
    total: int
    # The queries whose right answers were not in the top k, with what came back instead.
    misses: tuple[tuple[LabelledQuery, tuple[str, ...]], ...]

    @property
    def value(self) -> float:
        return self.found / self.total if self.total else 0.0


def read_labelled(path: Path) -> list[LabelledQuery]:
    queries: list[LabelledQuery] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            raw = json.loads(line)
            queries.append(LabelledQuery(raw["query"], raw["user"], frozenset(raw["expect"])))
    return queries


def recall_at(catalog: ScreenCatalog, queries: Sequence[LabelledQuery], k: int = 5) -> Recall:
    """The share of queries for real screens with a right answer among the first ``k``."""
    answerable = [labelled for labelled in queries if labelled.expect]
    found = 0
    misses: list[tuple[LabelledQuery, tuple[str, ...]]] = []
    for labelled in answerable:
        got = tuple(screen.screen_id for screen in catalog.search(labelled.query, labelled.user, k))
        if labelled.expect & set(got):
            found += 1
        else:
            misses.append((labelled, got))
    return Recall(k=k, found=found, total=len(answerable), misses=tuple(misses))


def false_answers(
    catalog: ScreenCatalog, queries: Sequence[LabelledQuery]
) -> list[tuple[LabelledQuery, tuple[str, ...]]]:
    """The queries for screens that do not exist that found a screen, with what they found."""
    found = []
    for labelled in queries:
        if not labelled.expect:
            got = catalog.search(labelled.query, labelled.user)
            if got:
                found.append((labelled, tuple(screen.screen_id for screen in got)))
    return found
