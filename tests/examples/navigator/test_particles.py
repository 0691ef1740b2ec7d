"""The demo's Korean reads as written by a person: each particle fits the word before it,
and no "both forms" template is left anywhere in the shipped package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import gateway
from gateway.adk.approvals import interrupt_message
from gateway.examples.navigator.agent import load_catalog
from gateway.examples.navigator.screens import catalog
from gateway.examples.navigator.screens.particles import UnreadableWord, attach

pytestmark = pytest.mark.unit

TEMPLATE = re.compile(r"을\(를\)|이\(가\)|은\(는\)|와\(과\)|\(으\)로")


@pytest.mark.parametrize(
    ("word", "particle", "written"),
    [
        ("전표", "을", "전표를"),
        ("발주", "를", "발주를"),
        ("세금계산서", "을", "세금계산서를"),
        ("판매 계약", "를", "판매 계약을"),
        ("고객", "이", "고객이"),
        ("휴가", "은", "휴가는"),
        ("출장", "와", "출장과"),
        # 로 follows a vowel and ㄹ; 으로 every other final consonant.
        ("서울", "으로", "서울로"),
        ("부산", "로", "부산으로"),
        ("창고", "으로", "창고로"),
        # Digits as numbers read: 0 영, 1 일, 3 삼, 6 육, 7 칠, 8 팔 end in a consonant.
        ("R-1040", "을", "R-1040을"),
        ("R-1041", "을", "R-1041을"),
        ("R-1042", "을", "R-1042를"),
        ("R-1043", "을", "R-1043을"),
        ("R-1044", "을", "R-1044를"),
        ("R-1045", "을", "R-1045를"),
        ("R-1046", "을", "R-1046을"),
        ("R-1047", "으로", "R-1047로"),
        ("R-1048", "을", "R-1048을"),
        ("R-1049", "을", "R-1049를"),
        ("MNU-3120", "으로", "MNU-3120으로"),
        # Latin letters by their Korean names: L 엘, M 엠, N 엔, R 알 end in a consonant.
        ("VOC", "을", "VOC를"),
        ("FAQ", "을", "FAQ를"),
        ("HR", "이", "HR이"),
        ("URL", "으로", "URL로"),
        ("ROM", "으로", "ROM으로"),
        ("PDF", "과", "PDF와"),
        # What the word ends with is read, not trailing punctuation.
        ("(VOC)", "을", "(VOC)를"),
    ],
)
def test_a_particle_takes_the_form_the_word_before_it_asks_for(
    word: str, particle: str, written: str
) -> None:
    assert attach(word, particle) == written


def test_a_word_with_nothing_to_read_is_an_error_not_a_guess() -> None:
    with pytest.raises(UnreadableWord, match="'!!'"):
        attach("!!", "을")


def test_no_template_is_left_in_the_shipped_package() -> None:
    root = Path(gateway.__file__).parent
    showing = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            try:
                content = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue  # images and other binary files hold no sentences
            showing += [
                f"{path.relative_to(root)}: {m.group(0)}" for m in TEMPLATE.finditer(content)
            ]
    assert showing == []


def test_generated_descriptions_and_the_approval_card_read_naturally() -> None:
    screens = catalog.load().screens
    assert screens["MNU-9220"].description == "새 VOC를 작성해 등록하는 화면"
    assert screens["MNU-9420"].description == "새 FAQ를 작성해 등록하는 화면"
    assert screens["MNU-6240"].description.startswith("승인 대기 중인 발주를 ")
    message = interrupt_message("approveWorkRequest", {"requestId": "R-1042"}, "", load_catalog())
    assert message == "업무 요청 R-1042 건을 승인합니다. 승인하시겠습니까?"
