"""How screen names and user queries are folded into comparable text.

One set of rules serves the index and the query, so both sides always agree:

- NFKC, lower case; record ids keep their kind and lose their number ("R-1042" and
  "R-7" both fold to "r-#"), since a screen lists records of a kind, not one record.
- Words are marked at both ends ("^요청$"). SQLite's trigram tokenizer cannot match a
  two-letter word, and most Korean words are two syllables; with the marks "요청"
  becomes the trigrams "^요청" and "요청$", and a one-letter word one trigram.
- A name is also indexed without its spaces ("^업무요청목록$"), so a query written with
  other spacing ("업무요청", "요청목록") still shares its trigrams.
- Query words lose navigation filler ("화면", "열어줘", "같은 것들 보는 데") and
  predicates that say what the user wants to know ("들어왔는지"); a trailing particle
  ("휴가를") is tried off as well as on, since "휴가" itself ends in one, and a 하-verb
  is also read as its noun ("신청하려고": "신청"). A verb that asks for a form
  ("만들기", "올리기", "신청") also reads as "등록", the word the catalog uses for its
  form screens.
- A screen id is "MNU-3120", or a menu number said aloud ("3120번").
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Iterable

_WORD = re.compile(r"[\w#-]+")
_RECORD_ID = re.compile(r"(?<![\w-])([a-z]{1,4})-\d+(?![\w-])")
_SCREEN_ID = re.compile(r"\bMNU-\d+\b", re.IGNORECASE)
# "3120번": how people say a menu number aloud.
_SCREEN_NUMBER = re.compile(r"(?<![\w-])(\d{4,5})\s*번")

# Words that ask for a screen without naming it.
_FILLER_WORDS = """
    화면 메뉴 페이지 창 좀 어디 어디야 어디서 어디에 어딨어 열어 열어줘 열어줄래 열어주세요 열기
    띄워 띄워줘 보여 보여줘 보여주세요 보는 볼 보고 보려고 봐 봐야 보기 싶어 싶은데 데 곳 것 거
    건 건들 같은 하는 있는 있어 있나 하려고 하고 해줘 줘 주세요 가줘 이동 이동해줘 들어가줘
    찾아줘 찾아 관련 쪽 내 제 그 것들 얼마 언제 몇 뭐
    please open show me the screen page menu go to take where is a an of for my i want see
"""
FILLER = frozenset(_FILLER_WORDS.split())
# Particles that end a Korean word, longest first; stripped only as an extra spelling.
_PARTICLE_WORDS = "에서 으로 까지 부터 을 를 이 가 은 는 의 에 로 도 만 들 서"
_PARTICLES = tuple(_PARTICLE_WORDS.split())
# Endings of a 하-verb ("신청하려고"): the noun before them names the thing.
_VERB_ENDINGS = ("하려고", "하려는", "하는지", "했는지", "하고", "하기", "할래", "해줘")
# Endings of any other predicate ("들어왔는지", "남았는지"): what the user wants to know,
# not which screen.
_PREDICATE_ENDINGS = ("는지", "려고", "려는")
# Verbs that ask for a form: the catalog calls its form screens "등록".
_FORM_VERBS = "만들기 만들어 올리기 올려 쓰기 써 남기기 남겨 작성 입력 접수 신청 발행"
_SYNONYMS = dict.fromkeys(_FORM_VERBS.split(), "등록") | {"명단": "목록"}


def fold(text: str) -> str:
    """Lower case, NFKC, record ids reduced to their kind."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return _RECORD_ID.sub(r"\1-#", folded)


def words(text: str) -> list[str]:
    return _WORD.findall(fold(text))


def compact(text: str) -> str:
    """The folded text without spaces or punctuation: how "업무요청" meets "업무 요청"."""
    return "".join(words(text))


def mark(word: str) -> str:
    return f"^{word}$"


def trigrams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


def split_screen_ids(text: str) -> tuple[list[str], str]:
    """Catalog ids written in a query ("MNU-3120 열어줘", "3120번 화면"), and the query
    without them."""
    ids = [match.upper() for match in _SCREEN_ID.findall(text)]
    ids += [f"MNU-{number}" for number in _SCREEN_NUMBER.findall(text)]
    if not ids:
        return ids, text
    return ids, _SCREEN_NUMBER.sub(" ", _SCREEN_ID.sub(" ", text))


def indexed_title(names: Iterable[str]) -> str:
    """A screen's name and aliases as the index stores them: each word, and each name whole."""
    pieces: list[str] = []
    for name in names:
        parts = words(name)
        pieces.extend(mark(word) for word in parts)
        if len(parts) > 1:
            pieces.append(mark("".join(parts)))
    return " ".join(pieces)


def indexed_body(description: str) -> str:
    return " ".join(mark(word) for word in words(description))


@dataclasses.dataclass(frozen=True)
class Query:
    """A user's query, read once: what to look up in the index and what to rank by."""

    text: str
    # Each content word with its spellings: as written, without a trailing particle, and
    # "등록" for a verb that asks for a form.
    terms: tuple[tuple[str, ...], ...]
    # The trigrams of each term's spellings, in the order of ``terms``.
    term_grams: tuple[frozenset[str], ...]
    # The whole query as written and without particles: with spaces, then without.
    phrases: frozenset[str]
    joined: frozenset[str]
    grams: frozenset[str]
    # The content without spaces from each word on: where a screen's name may begin.
    starts: tuple[str, ...]
    # Every word asks for a screen without naming one ("화면", "메뉴 열어줘").
    only_filler: bool = False

    @property
    def empty(self) -> bool:
        return not self.grams


def read_query(text: str) -> Query:
    found = words(text)
    content = [word for word in found if not _says_nothing(word)]
    # A query made only of filler words ("메뉴 화면") is still the user's words, to rank
    # by; it names nothing, so only a screen it names whole can answer it.
    only_filler = not content
    content = content or found
    terms = tuple(_spellings(word) for word in content)
    term_grams = tuple(
        frozenset(gram for spelling in spellings for gram in trigrams(mark(spelling)))
        for spellings in terms
    )
    phrases = {" ".join(content), " ".join(_strip(word) for word in content)}
    joined = {phrase.replace(" ", "") for phrase in phrases}
    grams = set().union(*term_grams)
    if len(content) > 1:
        grams |= trigrams(mark("".join(content)))
    return Query(
        text=" ".join(content),
        terms=terms,
        term_grams=term_grams,
        phrases=frozenset(phrases),
        joined=frozenset(joined),
        grams=frozenset(grams),
        starts=tuple("".join(content[index:]) for index in range(len(content))),
        only_filler=only_filler,
    )


def _says_nothing(word: str) -> bool:
    if word in FILLER or _strip(word) in FILLER:
        return True
    return word.endswith(_PREDICATE_ENDINGS) and _verb_noun(word) == word


def _verb_noun(word: str) -> str:
    """The noun of a 하-verb ("신청하려고" -> "신청"), or the word as it is."""
    for ending in _VERB_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 2:
            return word[: -len(ending)]
    return word


def _spellings(word: str) -> tuple[str, ...]:
    spellings = dict.fromkeys((word, _strip(word), _verb_noun(word)))
    for spelling in list(spellings):
        if spelling in _SYNONYMS:
            spellings[_SYNONYMS[spelling]] = None
    return tuple(spellings)


def _strip(word: str) -> str:
    for particle in _PARTICLES:
        if word.endswith(particle) and len(word) - len(particle) >= 2:
            return word[: -len(particle)]
    return word
