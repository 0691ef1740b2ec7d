"""Korean particles that fit the word before them: "VOC를", "전표를", "R-1040을".

A particle has one form after a final consonant and one after a vowel (을/를, 이/가, 은/는,
과/와, 으로/로; 로 also follows ㄹ). Writing both forms, one in brackets, is a template
showing, so the demo picks the form from how the word is read aloud, by its last letter:

- a Hangul syllable by its own final consonant;
- a digit as a number reads: 0 영, 1 일, 3 삼, 6 육, 7 칠, 8 팔 end in a consonant, 2 이,
  4 사, 5 오, 9 구 do not, and a number ending in 0 ends in 십, 백, 천, 만... (all
  consonants), so the last digit decides;
- a Latin letter by its Korean name, the way acronyms are read ("VOC" is 브이오씨): L 엘,
  M 엠, N 엔, R 알 end in a consonant, the others in a vowel.

The gateway's core fills templates without knowing Korean; this is the demo's own text.
"""

from __future__ import annotations

from typing import Literal

# How a word's last sound ends, as far as particles care: ㄹ takes 로, not 으로.
Ending = Literal["vowel", "ㄹ", "consonant"]

# Each particle's form after a final consonant, and after a vowel.
_FORMS = (("을", "를"), ("이", "가"), ("은", "는"), ("과", "와"), ("으로", "로"))
_PAIR_OF = {form: pair for pair in _FORMS for form in pair}
_RIEUL = 8  # the index of ㄹ among Hangul final consonants
_DIGITS: dict[str, Ending] = {
    **dict.fromkeys("2459", "vowel"),  # 이 사 오 구
    **dict.fromkeys("178", "ㄹ"),  # 일 칠 팔
}
_LETTERS: dict[str, Ending] = {"l": "ㄹ", "r": "ㄹ", "m": "consonant", "n": "consonant"}


class UnreadableWord(ValueError):
    """The word ends in nothing that is read aloud, so no particle form can be chosen."""


def ending(word: str) -> Ending:
    """How the word's last sound ends when read aloud ("VOC": vowel, "R": ㄹ)."""
    for char in reversed(word):
        if "가" <= char <= "힣":
            final = (ord(char) - ord("가")) % 28
            return "vowel" if final == 0 else "ㄹ" if final == _RIEUL else "consonant"
        if char.isascii() and char.isdigit():
            return _DIGITS.get(char, "consonant")
        if char.isascii() and char.isalpha():
            return _LETTERS.get(char.lower(), "vowel")
    raise UnreadableWord(f"{word!r} ends in no letter or digit")


def attach(word: str, particle: str) -> str:
    """``word`` followed by the form of ``particle`` (either form: "을" or "를") it takes."""
    after_consonant, after_vowel = _PAIR_OF[particle]
    sound = ending(word)
    if sound == "vowel" or (sound == "ㄹ" and after_vowel == "로"):
        return word + after_vowel
    return word + after_consonant
