"""The demo menu tree, generated: ``python -m gateway.examples.navigator.screens.generate``
writes ``screens.json``.

The hand-written screens below are the ones the docs and tests name (MNU-3120 "업무 요청
목록" above all); the rest of the tree is built from a small business vocabulary, so the
demo catalog has the size and the look-alike names ("구매 요청 목록", "서비스 요청 목록")
that make search worth testing. The output is deterministic: a test regenerates it and
compares it with the checked-in file. ``scaled(n)`` grows the same tree to ``n`` screens
for the benchmark by adding qualified copies of its subjects ("해외 발주 목록").
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from gateway.examples.navigator.screens import particles

DATA_DIR = Path(__file__).resolve().parent / "data"

Screen = dict[str, Any]


def _screen(
    screen_id: str,
    name: str,
    parent: str | None,
    aliases: list[str],
    description: str,
    route: str,
) -> Screen:
    return {
        "screenId": screen_id,
        "name": name,
        "parent": parent,
        "aliases": [alias for alias in dict.fromkeys(aliases) if alias != name],
        "description": description,
        "route": route,
    }


HANDWRITTEN: list[Screen] = [
    _screen(
        "MNU-1000", "업무 관리", None, ["업무"], "업무 요청과 처리 현황을 관리하는 메뉴", "/work"
    ),
    _screen(
        "MNU-3100", "업무 요청", "MNU-1000", ["요청"], "업무 요청 관련 화면 묶음", "/work/requests"
    ),
    _screen(
        "MNU-3120",
        "업무 요청 목록",
        "MNU-3100",
        ["요청 목록", "업무요청", "요청 리스트", "work request list", "work requests"],
        "R-1042 같은 업무 요청 건들을 조회하고 상태를 확인하는 목록",
        "/work/requests/list",
    ),
    _screen(
        "MNU-3130",
        "업무 요청 등록",
        "MNU-3100",
        ["요청 등록", "새 요청", "new work request"],
        "새 업무 요청을 작성해 등록하는 화면",
        "/work/requests/new",
    ),
    _screen(
        "MNU-3140",
        "업무 요청 승인",
        "MNU-3100",
        ["승인 대기", "결재", "approvals"],
        "승인 대기 중인 업무 요청을 검토하고 승인하는 화면",
        "/work/requests/approvals",
    ),
    _screen(
        "MNU-3200",
        "업무 처리 현황",
        "MNU-1000",
        ["처리 현황", "진행 현황", "work status"],
        "부서별 업무 처리 진행 상황 대시보드",
        "/work/status",
    ),
    _screen("MNU-2000", "인사 관리", None, ["인사", "HR"], "인사 정보 메뉴", "/hr"),
    _screen(
        "MNU-2010",
        "사원 목록",
        "MNU-2000",
        ["직원 목록", "employees", "employee list"],
        "사원 정보를 조회하는 목록",
        "/hr/employees",
    ),
    _screen(
        "MNU-2020",
        "휴가 신청",
        "MNU-2000",
        ["연차 신청", "leave request", "vacation"],
        "휴가와 연차를 신청하는 화면",
        "/hr/leave/new",
    ),
    _screen(
        "MNU-2030",
        "근태 현황",
        "MNU-2000",
        ["출퇴근", "attendance"],
        "출퇴근과 근태 기록 조회",
        "/hr/attendance",
    ),
    _screen("MNU-4000", "재무 관리", None, ["재무", "finance"], "재무 메뉴", "/finance"),
    _screen(
        "MNU-4010",
        "경비 청구",
        "MNU-4000",
        ["비용 청구", "expense claim", "expenses"],
        "업무 경비를 청구하는 화면",
        "/finance/expenses/new",
    ),
    _screen(
        "MNU-4020",
        "예산 현황",
        "MNU-4000",
        ["예산", "budget"],
        "부서 예산 집행 현황",
        "/finance/budget",
    ),
    _screen("MNU-5000", "시스템 관리", None, ["관리자", "admin"], "시스템 관리 메뉴", "/admin"),
    _screen(
        "MNU-5010",
        "사용자 권한 관리",
        "MNU-5000",
        ["권한 관리", "user permissions"],
        "사용자별 메뉴 권한을 관리하는 화면",
        "/admin/permissions",
    ),
]


@dataclasses.dataclass(frozen=True)
class Action:
    """A kind of screen a subject can have: its list, its form, its approvals..."""

    code: str
    suffix: str
    synonyms: tuple[str, ...]
    english: str
    route: str


ACTIONS = {
    a.code: a
    for a in (
        Action("L", "목록", ("리스트", "조회"), "list", "list"),
        Action("N", "등록", ("신규 등록", "작성"), "new", "new"),
        Action("D", "상세", ("상세 조회", "상세 정보"), "detail", "detail"),
        Action("A", "승인", ("결재", "승인 대기"), "approvals", "approvals"),
        Action("S", "현황", ("대시보드", "진행 현황"), "status", "status"),
        Action("H", "이력", ("내역", "히스토리"), "history", "history"),
        Action("T", "통계", ("분석", "리포트"), "statistics", "stats"),
        Action("C", "설정", ("기준 설정", "관리 설정"), "settings", "settings"),
    )
}


@dataclasses.dataclass(frozen=True)
class Subject:
    """A business object with its own group of screens ("발주": list, form, approvals)."""

    number: int
    name: str
    aliases: tuple[str, ...]
    english: str
    route: str
    actions: str
    record_id: str | None = None


@dataclasses.dataclass(frozen=True)
class Area:
    """A top menu: hand-written (업무, 인사, 재무, 시스템) or generated here."""

    number: int
    name: str
    aliases: tuple[str, ...]
    route: str
    subjects: tuple[Subject, ...]
    handwritten: bool = False


AREAS = (
    Area(
        1000,
        "업무 관리",
        (),
        "/work",
        (
            Subject(3300, "업무 일지", ("일일 업무", "업무 보고"), "work log", "logs", "LNDH"),
            Subject(
                3400, "회의록", ("회의 기록", "미팅 노트"), "meeting minutes", "minutes", "LNDH"
            ),
            Subject(3500, "공지사항", ("공지", "알림판"), "notices", "notices", "LND"),
            Subject(3600, "일정", ("스케줄", "캘린더"), "schedule", "schedule", "LNS"),
            Subject(
                3700, "프로젝트", ("과제", "project"), "project", "projects", "LNDSH", "PRJ-0412"
            ),
            Subject(3800, "문서함", ("문서 보관함", "자료실"), "documents", "documents", "LNH"),
            Subject(
                3900, "전자결재", ("기안", "품의"), "e-approval", "approval", "LNAH", "EA-3307"
            ),
        ),
        handwritten=True,
    ),
    Area(
        2000,
        "인사 관리",
        (),
        "/hr",
        (
            Subject(2100, "급여", ("월급", "급여 명세"), "payroll", "payroll", "LDSHT"),
            Subject(
                2200, "인사 평가", ("성과 평가", "평가"), "performance review", "reviews", "LNAST"
            ),
            Subject(2300, "교육", ("사내 교육", "연수"), "training", "training", "LNDAS"),
            Subject(2400, "채용", ("입사 지원", "채용 공고"), "recruiting", "recruiting", "LNDAS"),
            Subject(2500, "조직", ("조직도", "부서"), "organization", "org", "LHC"),
            Subject(2600, "복리후생", ("복지", "복지 포인트"), "benefits", "benefits", "LNAS"),
            Subject(
                2700,
                "증명서 발급",
                ("재직 증명서", "경력 증명서"),
                "certificates",
                "certificates",
                "LNH",
            ),
            Subject(2800, "휴가", ("연차", "휴가 사용"), "leave", "leave", "LASHT"),
            Subject(
                2900, "출장", ("출장 신청", "출장비"), "business trips", "trips", "LNAH", "BT-0619"
            ),
        ),
        handwritten=True,
    ),
    Area(
        4000,
        "재무 관리",
        (),
        "/finance",
        (
            Subject(
                4100, "전표", ("회계 전표", "분개"), "journal entry", "journals", "LNDAH", "JV-2024"
            ),
            Subject(
                4200, "세금계산서", ("계산서", "tax invoice"), "tax invoice", "tax-invoices", "LNDH"
            ),
            Subject(4300, "자금", ("자금 관리", "현금 흐름"), "treasury", "treasury", "SHTC"),
            Subject(4400, "결산", ("월 결산", "마감"), "closing", "closing", "LSH"),
            Subject(4500, "고정자산", ("자산", "비품"), "fixed assets", "assets", "LNDHT"),
            Subject(
                4600, "법인카드", ("회사 카드", "카드 사용"), "corporate card", "cards", "LAHT"
            ),
            Subject(4700, "경비", ("비용", "지출"), "expenses", "expenses", "LDAT", "EX-5521"),
            Subject(4800, "채권", ("미수금", "받을 돈"), "receivables", "receivables", "LSHT"),
            Subject(4900, "채무", ("미지급금", "지급 예정"), "payables", "payables", "LSHT"),
        ),
        handwritten=True,
    ),
    Area(
        5000,
        "시스템 관리",
        (),
        "/admin",
        (
            Subject(5100, "사용자 계정", ("계정", "아이디"), "user accounts", "accounts", "LNDH"),
            Subject(5200, "공통 코드", ("코드", "코드 관리"), "common codes", "codes", "LNC"),
            Subject(5300, "메뉴 구성", ("메뉴 관리", "메뉴 트리"), "menu setup", "menus", "LNC"),
            Subject(5400, "접속 로그", ("로그", "접속 기록"), "access log", "access-log", "LT"),
            Subject(5500, "배치 작업", ("배치", "스케줄러"), "batch jobs", "batch", "LSHC"),
            Subject(
                5600, "알림 설정", ("알림", "푸시 알림"), "notifications", "notifications", "LC"
            ),
        ),
        handwritten=True,
    ),
    Area(
        6000,
        "구매 관리",
        ("구매", "purchasing"),
        "/purchase",
        (
            Subject(
                6100,
                "구매 요청",
                ("구매 신청", "구매요청"),
                "purchase request",
                "requests",
                "LNDAS",
                "PR-2231",
            ),
            Subject(
                6200, "발주", ("발주서", "주문"), "purchase order", "orders", "LNDASH", "PO-7781"
            ),
            Subject(
                6300, "입고", ("입고 처리", "검수"), "goods receipt", "receipts", "LNSH", "GR-1190"
            ),
            Subject(6400, "공급업체", ("협력사", "거래처"), "suppliers", "suppliers", "LNDT"),
            Subject(
                6500, "단가 계약", ("단가", "구매 계약"), "price contract", "contracts", "LNAH"
            ),
            Subject(
                6600, "구매 정산", ("매입 정산", "정산"), "purchase settlement", "settlement", "LST"
            ),
            Subject(6700, "구매 품목", ("품목", "자재"), "purchase items", "items", "LNDC"),
        ),
    ),
    Area(
        7000,
        "영업 관리",
        ("영업", "sales"),
        "/sales",
        (
            Subject(7100, "고객", ("고객사", "거래 고객"), "customers", "customers", "LNDH"),
            Subject(7200, "견적", ("견적서", "quotation"), "quotes", "quotes", "LNDA", "Q-3350"),
            Subject(
                7300, "수주", ("판매 주문", "수주 건"), "sales orders", "orders", "LNDSH", "SO-8812"
            ),
            Subject(7400, "매출", ("판매 실적", "매출 실적"), "revenue", "revenue", "STH"),
            Subject(
                7500,
                "영업 기회",
                ("영업 파이프라인", "리드"),
                "opportunities",
                "opportunities",
                "LNDS",
            ),
            Subject(
                7600,
                "판매 계약",
                ("계약서", "계약"),
                "sales contracts",
                "contracts",
                "LNDAH",
                "CT-0917",
            ),
            Subject(7700, "판촉 행사", ("프로모션", "이벤트"), "promotions", "promotions", "LNDST"),
        ),
    ),
    Area(
        8000,
        "재고 물류",
        ("재고", "물류", "logistics"),
        "/logistics",
        (
            Subject(8100, "재고", ("재고 수량", "stock"), "inventory", "stock", "LSHT"),
            Subject(
                8200, "출고", ("출하", "출고 지시"), "shipments", "shipments", "LNDAH", "DO-4410"
            ),
            Subject(8300, "창고", ("창고 위치", "로케이션"), "warehouses", "warehouses", "LNC"),
            Subject(
                8400, "배송", ("택배", "배송 추적"), "deliveries", "deliveries", "LDS", "DLV-6402"
            ),
            Subject(8500, "재고 실사", ("재고 조사", "실사"), "stock count", "stock-count", "LNAS"),
            Subject(8600, "반품", ("반품 처리", "회수"), "returns", "returns", "LNDA", "RT-0388"),
            Subject(8700, "운송사", ("택배사", "물류 업체"), "carriers", "carriers", "LNC"),
        ),
    ),
    Area(
        9000,
        "고객 지원",
        ("고객센터", "support"),
        "/support",
        (
            Subject(
                9100,
                "고객 문의",
                ("문의", "1:1 문의"),
                "customer inquiries",
                "inquiries",
                "LNDS",
                "TK-2290",
            ),
            Subject(9200, "VOC", ("고객의 소리", "불만 접수"), "voice of customer", "voc", "LNDT"),
            Subject(
                9300,
                "서비스 요청",
                ("서비스 신청", "작업 요청"),
                "service requests",
                "service-requests",
                "LNDAS",
                "SR-5501",
            ),
            Subject(9400, "FAQ", ("자주 묻는 질문", "도움말"), "faq", "faq", "LN"),
            Subject(
                9500,
                "A/S 접수",
                ("수리 접수", "애프터서비스"),
                "repairs",
                "repairs",
                "LNDS",
                "AS-7004",
            ),
            Subject(9600, "만족도 조사", ("고객 만족도", "설문"), "surveys", "surveys", "LNT"),
        ),
    ),
)

# The leaves each hand-written subject already has, so they are not generated again.
_HANDWRITTEN_SUBJECTS: dict[int, Subject] = {
    3100: Subject(3100, "업무 요청", ("요청",), "work request", "requests", "HT"),
}
# Leaves hand-written under another name ("경비 등록" is MNU-4010 "경비 청구").
_ALREADY_WRITTEN = {("경비", "N")}


def _description(subject: Subject, action: Action, name: str) -> str:
    noun = subject.name
    taken = particles.attach(noun, "을")  # the noun as the object of a verb
    match action.code:
        case "L":
            if subject.record_id:
                return f"{subject.record_id} 같은 {noun} 건을 모아 보고 상태를 확인하는 목록"
            return f"등록된 {noun} 정보를 검색하고 조회하는 목록"
        case "N":
            return f"새 {taken} 작성해 등록하는 화면"
        case "D":
            return f"{noun} 한 건의 내용과 처리 경과를 보는 상세 화면"
        case "A":
            return f"승인 대기 중인 {taken} 검토하고 승인하거나 반려하는 화면"
        case "S":
            return f"{noun} 진행 상황을 한눈에 보는 대시보드"
        case "H":
            return f"{noun} 변경과 처리 이력을 기간별로 조회하는 화면"
        case "T":
            return f"기간별 {noun} 추이와 통계를 차트로 보는 화면"
        case _:
            return f"{noun} 관련 기준 정보와 옵션을 설정하는 화면"


def _leaves(
    area: Area, subject: Subject, prefix: str = "", number: int | None = None
) -> list[Screen]:
    base = subject.number if number is None else number
    group_id = f"MNU-{base}"
    noun = f"{prefix}{subject.name}"
    route = f"{area.route}/{subject.route}"
    screens: list[Screen] = []
    for index, code in enumerate(subject.actions, start=1):
        if (subject.name, code) in _ALREADY_WRITTEN and not prefix:
            continue
        action = ACTIONS[code]
        # Hand-written subjects keep their leaves at 31x0; generated ones continue after them.
        step = index + 4 if base == 3100 else index
        name = f"{noun} {action.suffix}"
        aliases = [f"{prefix}{alias} {action.suffix}" for alias in subject.aliases[:2]]
        aliases.append(f"{noun} {action.synonyms[0]}")
        aliases.append(f"{subject.english} {action.english}")
        screens.append(
            _screen(
                f"MNU-{base + 10 * step}",
                name,
                group_id,
                aliases,
                _description(dataclasses.replace(subject, name=noun), action, name),
                f"{route}/{action.route}"
                if not prefix
                else f"{route}/{action.route}?scope={prefix.strip()}",
            )
        )
    return screens


def _group(area: Area, subject: Subject, prefix: str = "", number: int | None = None) -> Screen:
    noun = f"{prefix}{subject.name}"
    return _screen(
        f"MNU-{subject.number if number is None else number}",
        f"{noun} 관리",
        f"MNU-{area.number}",
        [noun, *(f"{prefix}{alias}" for alias in subject.aliases[:1])],
        f"{noun} 관련 화면 묶음",
        f"{area.route}/{subject.route}",
    )


def demo_screens() -> list[Screen]:
    """The shipped menu tree: the hand-written screens and the generated areas."""
    screens = list(HANDWRITTEN)
    for subject in _HANDWRITTEN_SUBJECTS.values():
        screens.extend(_leaves(AREAS[0], subject))
    for area in AREAS:
        if not area.handwritten:
            screens.append(
                _screen(
                    f"MNU-{area.number}",
                    area.name,
                    None,
                    list(area.aliases),
                    f"{area.name} 메뉴",
                    area.route,
                )
            )
        for subject in area.subjects:
            screens.append(_group(area, subject))
            screens.extend(_leaves(area, subject))
    return screens


# Qualifiers that make a large company's menu grow: one copy of a subject per business line.
# None of them is a word of the vocabulary above, so a copy never answers a plain query better.
_QUALIFIER_WORDS = """
    국내 해외 본사 지점 서울 부산 대구 인천 광주 대전 울산 세종 임원 월별 분기 연간 긴급 정기
    수시 외주 온라인 오프라인 대리점 직영 수도권 영남 호남 충청 강원 제주 법인 공공 수출 수입
    제1공장 제2공장 제3공장 연구소 물류센터 가맹점
"""
QUALIFIERS = tuple(_QUALIFIER_WORDS.split())


def scaled(total: int) -> list[Screen]:
    """The demo tree grown to ``total`` screens with qualified copies of its subjects."""
    screens = demo_screens()
    number = 10000
    for qualifier in QUALIFIERS:
        for area in AREAS:
            for subject in area.subjects:
                if len(screens) >= total:
                    return screens[:total]
                prefix = f"{qualifier} "
                screens.append(_group(area, subject, prefix, number))
                screens.extend(_leaves(area, subject, prefix, number))
                number += 100
    if len(screens) < total:
        raise ValueError(f"the vocabulary grows to {len(screens)} screens, not {total}")
    return screens[:total]


def main() -> None:
    text = json.dumps(demo_screens(), ensure_ascii=False, indent=1) + "\n"
    if sys.argv[1:] == ["--check"]:
        current = (DATA_DIR / "screens.json").read_text(encoding="utf-8")
        sys.exit(0 if current == text else "screens.json is out of date: regenerate it")
    (DATA_DIR / "screens.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
