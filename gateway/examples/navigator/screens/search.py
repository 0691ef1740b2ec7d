"""Ranked screen search: SQLite FTS5 finds candidates, a small scoring function orders them.

Theory of operation. The catalog lives in one in-memory SQLite database built at start:
screens, users, each user's permitted screens, and an FTS5 table (trigram tokenizer)
over each screen's title (name and aliases) and body (description), in the marked,
folded form ``text.py`` defines. A query becomes an OR of its telling trigrams (each
word's rarest, and more while they are rare), joined to the user's permissions, so the
database only ever returns screens the user may open; bm25 with the title weighted over
the body picks the best ``CANDIDATES`` of them.

bm25 alone ranks look-alike names poorly ("요청 목록" matches "구매 요청 목록" as well as
the screen whose alias it is), so the candidates are re-scored in Python: a name or alias
equal to the query wins, then how many query words and trigrams the title holds, then the
body, each trigram weighted by its rarity, then the shorter (more specific) name. Over
10,000 screens a search takes a millisecond or two (``scripts/bench_screens.py``).

The relevance floor. Ranking orders the candidates but cannot say that none of them is
what the user asked for: some trigram of "회사 식당 메뉴" or "qwerty" is always in some
screen, and a score is no threshold (right answers score from 0.5, "회사 식당" scores 1.3
on 법인카드 관리, whose alias is "회사 카드"). So a ranked screen is returned only if it
answers the query (``answers``), in one of two ways:

- it accounts for the query: the words it holds (in its names, aliases or description)
  carry at least ``COVERAGE_FLOOR`` of the query's weight, each word weighted by its
  rarity in the catalog (``coverage``). Request words ("열어줘", "화면", "메뉴") were
  dropped by ``text.read_query``. A word no screen holds ("식당", "qwerty") counts against
  every screen as much as the query's rarest known word: "회사 식당" is half explained by
  "회사 카드", which is not enough; "고객 만족도 설문 결과" is three quarters explained;
- or the query says one of its names or aliases whole, and that name is a real part of
  the query (``names_it``): "월급 얼마 들어왔는지" names 급여's alias "월급". A query of
  request words only ("화면", "메뉴 열어줘") or "관리" can be answered this way only.

A screen id ("MNU-3120", "3120번") is always an answer, when the user may open it. A
query that nothing answers finds nothing: no weak candidates are returned, because every
caller (the scripted model, a real model, a person reading the tool result) would take a
listed screen as a match, and opening an unrelated screen is a false action.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from gateway.examples.navigator.screens import text

CANDIDATES = 40
TITLE_WEIGHT = 4.0
# How many screen matches the trigrams of one lookup may add up to. bm25 costs about a
# microsecond a match, and a word like "목록" is in thousands of names in a large catalog.
# Both limits are counts of screens, so a catalog of a few hundred is never pruned.
MATCH_BUDGET = 600
COMMON_WORD = 1000

_SCHEMA = """
CREATE TABLE screen (
    id INTEGER PRIMARY KEY,
    screen_id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    description TEXT NOT NULL
);
CREATE TABLE user (user_id TEXT PRIMARY KEY, name TEXT NOT NULL, org TEXT NOT NULL);
CREATE TABLE permission (
    user_id TEXT NOT NULL,
    screen INTEGER NOT NULL,
    PRIMARY KEY (user_id, screen)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE screen_text USING fts5(title, body, tokenize = 'trigram');
"""

_CANDIDATES = f"""
SELECT screen_text.rowid, bm25(screen_text, {TITLE_WEIGHT}, 1.0) AS rank
FROM screen_text
JOIN permission ON permission.screen = screen_text.rowid AND permission.user_id = ?
WHERE screen_text MATCH ?
ORDER BY rank
LIMIT {CANDIDATES}
"""

_BY_ID = """
SELECT screen FROM permission JOIN screen ON screen.id = permission.screen
WHERE permission.user_id = ? AND screen.screen_id = ?
"""


class Searchable(Protocol):
    @property
    def screen_id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def aliases(self) -> tuple[str, ...]: ...
    @property
    def description(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class Entry:
    """One screen as ranking sees it."""

    screen_id: str
    name: str
    title: str
    body: str
    # Its name and aliases folded: as written, and without spaces.
    spelled: frozenset[str]
    joined: frozenset[str]
    # Each name and alias without spaces, with its number of words.
    names: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, screen: Searchable) -> Entry:
        names = (screen.name, *screen.aliases)
        return cls(
            screen_id=screen.screen_id,
            name=screen.name,
            title=text.indexed_title(names),
            body=text.indexed_body(screen.description),
            spelled=frozenset(" ".join(text.words(name)) for name in names),
            joined=frozenset(text.compact(name) for name in names),
            names=tuple((text.compact(name), len(text.words(name))) for name in names),
        )


def score(query: text.Query, entry: Entry, weights: Mapping[str, float]) -> float:
    """How well ``entry`` answers ``query``; higher is better. Pure, for tests to pin down.

    ``weights`` gives each query trigram its weight (rare trigrams say more); they sum to 1.
    """
    exact = 3.0 if query.phrases & entry.spelled else 2.5 if query.joined & entry.joined else 0.0
    in_title = sum(any(s in entry.title for s in spellings) for spellings in query.terms)
    in_body = sum(any(s in entry.body for s in spellings) for spellings in query.terms)
    terms = len(query.terms) or 1
    return (
        exact
        + 2.0 * in_title / terms
        + 1.5 * sum(w for gram, w in weights.items() if gram in entry.title)
        + 0.5 * in_body / terms
        + 1.0 * sum(w for gram, w in weights.items() if gram in entry.body)
        # Of two names that match as well, the shorter is the more specific screen.
        - 0.01 * len(entry.name)
    )


# Ends most menu names ("발주 관리") and people add it loosely ("요청 목록 관리 화면").
_LOOSE = frozenset({"관리", "management"})


def covers(query: text.Query, entry: Entry, title_words: frozenset[str]) -> bool:
    """Whether ``entry`` holds every query word that is a word of some screen's name.

    A user who names a thing the catalog has ("업무", "목록") means it: a screen without
    it is a different screen, and opening it would answer a question nobody asked (a
    guest asking for "업무 요청 목록" must not be sent to "서비스 요청 목록"). Words no
    name uses ("얼마", "결과"), one-letter words and "관리" say nothing either way.
    """
    for spellings in query.terms:
        named = any(len(s) > 1 and s in title_words and s not in _LOOSE for s in spellings)
        if named and not holds(entry, spellings):
            return False
    return True


# The share of a query's weight a screen must account for to answer it. Measured on the
# labelled set: right answers account for 0.72 or more, screens that do not exist
# ("회사 식당": 법인카드 has "회사 카드") for 0.5 or less.
COVERAGE_FLOOR = 0.6
# A name said whole answers the query when it is this share of the query's words or more:
# "월급 얼마" names 급여's alias "월급"; one word in a long story names nothing.
NAMED_SHARE = 1 / 3


def holds(entry: Entry, spellings: tuple[str, ...]) -> bool:
    """Whether the screen's names, aliases or description hold the word.

    A one-letter word must be a whole word there: as a piece of one it says nothing.
    """
    for spelling in spellings:
        piece = text.mark(spelling) if len(spelling) == 1 else spelling
        if piece in entry.title or piece in entry.body:
            return True
    return False


def coverage(query: text.Query, entry: Entry, weights: Sequence[float]) -> float:
    """The share of the query's words, each weighted by its rarity, that ``entry`` holds."""
    pairs = zip(query.terms, weights, strict=True)
    held = sum(weight for spellings, weight in pairs if holds(entry, spellings))
    return held / (sum(weights) or 1.0)


def names_it(query: text.Query, entry: Entry) -> bool:
    """Whether the query says one of the screen's names or aliases whole, from a word's
    start ("재직증명서 발급" says "재직 증명서"; "바코드" does not say "코드").

    A name that ends in a Latin letter or digit must end where a word of the query ends:
    "employee salaries" does not say "employees" (its "s" is the start of "salaries"). A
    Korean name may end inside a word, where a particle or a longer compound follows
    ("사원목록을", "재직증명서발급").
    """
    terms = len(query.terms) or 1
    written = [spellings[0] for spellings in query.terms]
    for index, start in enumerate(query.starts):
        ends = set(itertools.accumulate(len(word) for word in written[index:]))
        for name, words in entry.names:
            if len(name) < 2 or words / terms < NAMED_SHARE or not start.startswith(name):
                continue
            if len(name) in ends or not (name[-1].isascii() and name[-1].isalnum()):
                return True
    return False


def answers(query: text.Query, entry: Entry, weights: Sequence[float]) -> bool:
    """The relevance floor: whether ``entry`` is a screen the query asks for at all."""
    # "관리" ends most menu names: alone it names no screen, as request words do not.
    vague = query.only_filler or all(_LOOSE.issuperset(term) for term in query.terms)
    if not vague and coverage(query, entry, weights) >= COVERAGE_FLOOR:
        return True
    return names_it(query, entry)


class ScreenIndex:
    """The catalog in SQLite: screens, users, permissions and the full-text index."""

    def __init__(
        self,
        screens: Sequence[Searchable],
        permissions: Mapping[str, frozenset[str]],
        people: Mapping[str, tuple[str, str]],
    ) -> None:
        self._entries = [Entry.of(screen) for screen in screens]
        row_of = {entry.screen_id: row for row, entry in enumerate(self._entries)}
        # One connection serves every search; the lock lets tools running in worker
        # threads share it.
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.Lock()
        with self._db:
            self._db.executescript(_SCHEMA)
            self._db.executemany(
                "INSERT INTO screen VALUES (?, ?, ?, ?)",
                ((row, s.screen_id, s.name, s.description) for row, s in enumerate(screens)),
            )
            self._db.executemany(
                "INSERT INTO screen_text (rowid, title, body) VALUES (?, ?, ?)",
                ((row, e.title, e.body) for row, e in enumerate(self._entries)),
            )
            self._db.executemany(
                "INSERT INTO user VALUES (?, ?, ?)",
                ((user_id, name, org) for user_id, (name, org) in people.items()),
            )
            self._db.executemany(
                "INSERT INTO permission VALUES (?, ?)",
                (
                    (user_id, row_of[screen_id])
                    for user_id, screen_ids in permissions.items()
                    for screen_id in screen_ids
                    if screen_id in row_of
                ),
            )
            self._db.execute("INSERT INTO screen_text (screen_text) VALUES ('optimize')")
            self._db.execute("CREATE VIRTUAL TABLE screen_vocab USING fts5vocab(screen_text, row)")
            # How many screens hold each trigram: the rarer, the more a match says.
            self._screens_with: dict[str, int] = dict(
                self._db.execute("SELECT term, doc FROM screen_vocab")
            )
        self._title_words = frozenset(
            word
            for screen in screens
            for name in (screen.name, *screen.aliases)
            for word in text.words(name)
        )

    def search(self, query: str, user_id: str, limit: int) -> list[str]:
        """Ids of the screens ``user_id`` may open that best match ``query``, best first."""
        named, rest = text.split_screen_ids(query)
        read = text.read_query(rest)
        with self._lock:
            found = [
                row
                for screen_id in named
                for (row,) in self._db.execute(_BY_ID, (user_id, screen_id))
            ]
            candidates = (
                self._db.execute(_CANDIDATES, (user_id, _match(self._telling(read)))).fetchall()
                if not read.empty
                else []
            )
        weights = self._weights(read.grams)
        fitting = [c for c in candidates if covers(read, self._entries[c[0]], self._title_words)]
        # bm25 is negative, best lowest: it only breaks exact ties in the score.
        ranked = sorted(
            fitting,
            key=lambda row: (-score(read, self._entries[row[0]], weights), row[1], row[0]),
        )
        term_weights = self._term_weights(read)
        answering = (row for row, _ in ranked if answers(read, self._entries[row], term_weights))
        rows = list(dict.fromkeys([*found, *itertools.islice(answering, limit)]))
        return [self._entries[row].screen_id for row in rows[:limit]]

    def _term_weights(self, query: text.Query) -> list[float]:
        """Each query word's rarity: the log of how few screens hold its best spelling.

        A word no screen holds weighs as much as the query's rarest known word: it counts
        against every screen, but how rare it is measures the catalog's size, not the word.
        """
        screens_with = self._screens_with.get
        total = len(self._entries) + 1

        def held_by(spelling: str) -> int:
            # A screen holding the word holds each of its trigrams: the rarest bounds it.
            return min(screens_with(gram, 0) for gram in text.trigrams(text.mark(spelling)))

        held = [max(held_by(s) for s in spellings) for spellings in query.terms]
        known = [math.log(total / (1 + count)) for count in held if count]
        unknown = max(known, default=1.0)
        return [math.log(total / (1 + count)) if count else unknown for count in held]

    def _telling(self, query: text.Query) -> list[str]:
        """The trigrams worth looking up: each word's rarest, then the next rarest in budget.

        A word in more than COMMON_WORD screens ("목록", "관리") is left out of the lookup
        when the query has a rarer one; it still counts in ``score``. This spares ranking
        thousands of screens that share nothing else with the query.
        """
        screens_with = self._screens_with.get

        def rarity(gram: str) -> tuple[int, str]:
            return screens_with(gram, 0), gram

        rarest = sorted({min(grams, key=rarity) for grams in query.term_grams}, key=rarity)
        chosen = [gram for gram in rarest if screens_with(gram, 0) <= COMMON_WORD] or rarest[:1]
        spent = sum(screens_with(gram, 0) for gram in chosen)
        for gram in sorted(query.grams.difference(chosen), key=rarity):
            spent += screens_with(gram, 0)
            if spent > MATCH_BUDGET:
                break
            chosen.append(gram)
        return chosen

    def _weights(self, grams: frozenset[str]) -> dict[str, float]:
        total = len(self._entries) + 1
        idf = {gram: math.log(total / (1 + self._screens_with.get(gram, 0))) for gram in grams}
        norm = sum(idf.values()) or 1.0
        return {gram: value / norm for gram, value in idf.items()}


def _match(grams: Iterable[str]) -> str:
    """An FTS5 query matching any of the trigrams, each a quoted string."""
    return " OR ".join('"' + gram.replace('"', '""') + '"' for gram in sorted(grams))
