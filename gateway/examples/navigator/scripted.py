"""The offline scripted model: a real ADK ``BaseLlm`` that needs no network and no key.

It reads the conversation it is given the way a real model would: the user's last words
pick an intent, and the function responses that followed pick the next step. Its final
answer is worded from the actual tool result, so "이동했습니다" appears only when the
browser reported ``navigated``. Replies stream in word-sized chunks, ``pace_ms`` apart.

The decision is a pure function (``respond``) over a ``Turn``; the model class is the
core's offline shell (``gateway.models.offline``), which turns a ``Reply`` into chunks.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from google.adk.models.llm_request import LlmRequest
from google.genai import types

from gateway import a2ui
from gateway.examples.navigator.work_requests import STATUS_LABELS
from gateway.models.offline import Call, OfflineLlm, Reply, Say
from gateway.store.cut_off import before_restart

__all__ = [
    "APPROVE",
    "FIND_SCREEN",
    "NAVIGATE",
    "REJECT",
    "SHOW",
    "Call",
    "Reply",
    "Say",
    "ScriptedLlm",
    "Step",
    "Turn",
    "read_turn",
    "respond",
]

FIND_SCREEN = "find_screen"
NAVIGATE = "navigateToScreen"
APPROVE = "approveWorkRequest"
REJECT = "rejectWorkRequest"
SHOW = "show_work_request"


@dataclasses.dataclass(frozen=True)
class Step:
    """One call the model made earlier in this turn and the response it got back."""

    name: str
    args: Mapping[str, Any]
    response: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Turn:
    """What the model sees: the user's words and the results of its calls since then."""

    utterance: str
    last_steps: Sequence[Step]
    tools: frozenset[str]
    # The words whose language the reply takes, when the utterance is not the user's own
    # (a press on a card reads in the gateway's English): the user's latest words before.
    voice: str | None = None
    # The user's earlier words in the thread, latest first.
    earlier: tuple[str, ...] = ()

    @property
    def korean(self) -> bool:
        """Whether to answer in Korean: in the language of the user's words, or, when they
        are in none a reader can tell ("qwerty", "1234"), of their earlier words, else in
        the page's. The demo's page is Korean."""
        for words in (self.voice,) if self.voice else (self.utterance, *self.earlier):
            if _HANGUL.search(words):
                return True
            if _ENGLISH.search(words):
                return False
        return True


def read_turn(contents: Sequence[types.Content], tools: frozenset[str]) -> Turn:
    """Finds the user's last words and pairs the latest calls with their responses.

    Calls and responses pair by position: the gateway orders every batch of function
    responses like the calls they answer, since ADK strips the ids before the model.
    """
    # After a restart cut the reply to the latest results off, reply to them again.
    contents = before_restart(contents)
    utterance = ""
    start = 0
    for index in range(len(contents) - 1, -1, -1):
        text = _user_text(contents[index])
        if text is not None:
            utterance, start = text, index
            break
    said = (_user_text(content) for content in reversed(contents[:start]))
    earlier = tuple(t for t in said if t is not None and not _PRESSED.match(t))
    voice = None
    if _PRESSED.match(utterance):
        # A card is the demo's own, in Korean, unless the user wrote to it otherwise.
        voice = earlier[0] if earlier else "한국어"
    rest = contents[start + 1 :]
    steps: list[Step] = []
    if len(rest) >= 2 and rest[-1].role == "user":
        calls = [p.function_call for p in rest[-2].parts or [] if p.function_call]
        responses = [p.function_response for p in rest[-1].parts or [] if p.function_response]
        for call, response in zip(calls, responses, strict=False):
            steps.append(
                Step(call.name or "", dict(call.args or {}), dict(response.response or {}))
            )
    return Turn(utterance=utterance, last_steps=steps, tools=tools, voice=voice, earlier=earlier)


def _user_text(content: types.Content) -> str | None:
    if content.role != "user" or not content.parts:
        return None
    texts = [p.text for p in content.parts if p.text and not p.thought]
    return " ".join(texts) if texts else None


# --- intents -------------------------------------------------------------------------------

_SCREEN_ID = re.compile(r"\bMNU-\d+\b", re.IGNORECASE)
_REQUEST_ID = re.compile(r"\bR-\d+\b", re.IGNORECASE)
_NAVIGATE_KO = re.compile(r"(열어|열기|띄워|이동|보여\s*줘|가\s*줘|들어가)")
_NAVIGATE_EN = re.compile(r"\b(open|go to|navigate|take me to|show me|bring up)\b", re.I)
_APPROVE = re.compile(r"(승인|\bapprove\b)", re.I)
_REJECT = re.compile(r"(거절|\breject\b)", re.I)
_SHOW = re.compile(r"(보여|보기|상세|\bshow\b|\bdetails?\b)", re.I)
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
# Words that say a message is English: the small words every English sentence has, and the
# demo's own verbs and nouns. "qwerty" or "1234" has none, and is answered in the page's.
_ENGLISH = re.compile(
    r"\b(the|a|an|is|are|am|be|do|does|to|of|for|in|on|at|and|or|not|me|my|you|your|i|it|"
    r"this|that|what|which|who|how|why|where|when|can|could|would|please|open|show|go|take|"
    r"bring|navigate|find|approve|reject|hello|hi|hey|thanks|thank|screen|page|menu|list|"
    r"request|about|yourself|yes|no)\b",
    re.I,
)
# A press on a card, as the gateway words it for the model (``gateway.a2ui.actions.told``).
_PRESSED = re.compile(
    r'User performed action "(?P<name>[^"]*)" on surface "[^"]*".*?Context: (?P<context>\{.*\})$',
    re.S,
)
_INTRO = re.compile(r"(자기\s*소개|about yourself|introduce yourself)", re.I)
_GREETING = re.compile(r"(안녕|반가워|^\s*(hi|hello|hey)\b|good (morning|afternoon|evening))", re.I)
_THANKS = re.compile(r"(고마워|감사|\bthanks?\b|thank you)", re.I)
# Words that ask for navigation but do not name the screen.
_FILLER = re.compile(
    r"(화면|메뉴|페이지|으로|로\s|좀|열어\s*줘|열어\s*주세요|열어|띄워\s*줘|띄워|이동해\s*줘|이동|"
    r"보여\s*줘|가\s*줘|들어가\s*줘|해\s*줘|주세요|please|open|go to|navigate to|navigate|"
    r"take me to|show me|bring up|\bthe\b|screen|page|menu|[.?!,])",
    re.I,
)


def respond(turn: Turn) -> Reply:
    """Decides the next step of the turn: a call, or the words that end it."""
    if turn.last_steps:
        return _after(turn)
    text = turn.utterance
    if (pressed := _PRESSED.match(text)) is not None:
        return _on_card(turn, pressed["name"], pressed["context"])
    request = _REQUEST_ID.search(text)
    if request and _APPROVE.search(text):
        return _decide(turn, APPROVE, request.group(0).upper())
    if request and _REJECT.search(text):
        return _decide(turn, REJECT, request.group(0).upper())
    if request and _SHOW.search(text) and SHOW in turn.tools:
        return Call([(SHOW, {"requestId": request.group(0).upper()})])
    if _NAVIGATE_KO.search(text) or _NAVIGATE_EN.search(text) or _SCREEN_ID.search(text):
        ids = [m.upper() for m in _SCREEN_ID.findall(text)]
        if ids:
            return _navigate(turn, [{"screenId": screen_id} for screen_id in ids])
        query = " ".join(_FILLER.sub(" ", text).split())
        if not query:
            return Say(_t(turn, "어떤 화면을 열어 드릴까요?", "Which screen should I open?"))
        return Call([(FIND_SCREEN, {"query": query})])
    if _INTRO.search(text):
        return Say(_INTRODUCTION_KO if turn.korean else _INTRODUCTION_EN)
    if _GREETING.search(text):
        return Say(
            _t(
                turn,
                "안녕하세요! 화면을 찾아 열어 드리거나 업무 요청 승인을 도와드릴 수 있어요. "
                "예를 들어 '업무 요청 목록 화면 열어줘'라고 말씀해 보세요.",
                "Hello! I can find and open screens for you or help approve work requests. "
                "Try 'open the work request list'.",
            )
        )
    if _THANKS.search(text):
        return Say(_t(turn, "천만에요. 더 필요한 것이 있으면 말씀해 주세요.", "You're welcome!"))
    return Say(
        _t(
            turn,
            "말씀 잘 들었어요. 저는 화면을 찾아 열어 드리거나 업무 요청 승인을 도와드릴 수 "
            "있어요. 원하시는 화면 이름을 말씀해 주세요.",
            "Got it. I can find and open screens or help with approvals; tell me which "
            "screen you need.",
        )
    )


def _decide(turn: Turn, tool: str, request_id: str) -> Reply:
    if tool not in turn.tools:
        return Say(
            _t(turn, "지금은 승인 도구를 쓸 수 없어요.", "I cannot approve requests here.")
            if tool == APPROVE
            else _t(turn, "지금은 거절 도구를 쓸 수 없어요.", "I cannot reject requests here.")
        )
    return Call([(tool, {"requestId": request_id})])


def _on_card(turn: Turn, action: str, context: str) -> Reply:
    """A press on a work request's card: its 승인 or 거절 asks for that decision."""
    try:
        request_id = json.loads(context).get("requestId")
    except (ValueError, AttributeError):
        request_id = None
    tool = {"approve": APPROVE, "reject": REJECT}.get(action)
    if tool is None or not isinstance(request_id, str):
        return Say(
            _t(turn, "그 버튼은 제가 처리할 수 없어요.", "I do not know what that button does.")
        )
    return _decide(turn, tool, request_id)


def _after(turn: Turn) -> Reply:
    first = turn.last_steps[0]
    if first.name == FIND_SCREEN:
        return _after_search(turn, first)
    if first.name == NAVIGATE:
        return Say(" ".join(_navigation_outcome(turn, step) for step in turn.last_steps))
    if first.name in (APPROVE, REJECT):
        return Say(" ".join(_decision_outcome(turn, step) for step in turn.last_steps))
    if first.name == SHOW:
        return Say(_shown(turn, first))
    return Say(_t(turn, "작업을 마쳤습니다.", "Done."))


def _shown(turn: Turn, step: Step) -> str:
    """The request as a card if the user sees one (the gateway's note says), else in words."""
    if "error" in step.response:
        error = step.response["error"]
        return _t(turn, f"요청을 찾지 못했습니다: {error}", f"I could not find it: {error}")
    request = step.response.get("request") or {}
    request_id, status = request.get("requestId", ""), request.get("status", "")
    note = step.response.get(a2ui.NOTE_KEY) or {}
    if note.get("shown"):
        if status == "pending":
            return _t(
                turn,
                f"{request_id} 요청입니다. 카드에서 승인하거나 거절할 수 있어요.",
                f"Here is {request_id}; approve or reject it on the card.",
            )
        return _t(
            turn,
            f"{request_id} 요청입니다. 이미 {_STATUS_KO.get(status, status)} 요청이에요.",
            f"Here is {request_id}; it was {status} already.",
        )
    amount = f"{request.get('amount', 0):,}"
    return _t(
        turn,
        f"{request_id} {request.get('title', '')}: 요청자 {request.get('requester', '')}, "
        f"금액 {amount}원, 상태 {STATUS_LABELS.get(status, status)}.",
        f"{request_id} {request.get('title', '')}: requested by {request.get('requester', '')},"
        f" {amount} KRW, {status}.",
    )


_STATUS_KO = {"pending": "대기 중인", "approved": "승인된", "rejected": "거절된"}


def _after_search(turn: Turn, step: Step) -> Reply:
    query = str(step.args.get("query", ""))
    if "error" in step.response:
        return Say(
            _t(
                turn,
                f"화면을 검색하지 못했습니다: {step.response['error']}",
                f"I could not search the screens: {step.response['error']}",
            )
        )
    screens = step.response.get("screens") or []
    if not screens:
        # find_screen lists only screens that answer the request: none fits, so none opens.
        return Say(
            _t(
                turn,
                f"'{query}'에 맞는, 열 수 있는 화면을 찾지 못했습니다. 메뉴에서 찾아보시거나 "
                "다른 말로 다시 말씀해 주세요.",
                f"I found no screen you can open that fits '{query}'. Look for it in the "
                "menu, or try other words.",
            )
        )
    top = screens[0]
    args = {"screenId": top["screenId"], "screenName": top.get("name", top["screenId"])}
    if top.get("route"):
        args["routeHint"] = top["route"]
    return _navigate(turn, [args])


def _navigate(turn: Turn, targets: list[dict[str, Any]]) -> Reply:
    if NAVIGATE not in turn.tools:
        names = ", ".join(str(t.get("screenName", t["screenId"])) for t in targets)
        return Say(
            _t(
                turn,
                f"여기서는 제가 화면을 열 수 없어요. 메뉴에서 {names} 화면을 열어 주세요.",
                f"I cannot open screens from here. Please open {names} from the menu.",
            )
        )
    return Call([(NAVIGATE, target) for target in targets])


def _navigation_outcome(turn: Turn, step: Step) -> str:
    name = str(step.args.get("screenName") or step.args.get("screenId", ""))
    status = step.response.get("status")
    detail = str(step.response.get("message") or step.response.get("reason") or "")
    if status == "navigated":
        return _t(turn, f"{name} 화면으로 이동했습니다.", f"I opened the {name} screen.")
    if status == "not_found":
        return _t(
            turn,
            f"{name} 화면은 찾을 수 없습니다. 없는 화면이에요.",
            f"There is no screen {name}.",
        )
    if status == "denied":
        return _t(
            turn,
            f"{name} 화면을 열 권한이 없어 이동하지 못했습니다.",
            f"I could not open {name}: you do not have access to it.",
        )
    if status == "not_allowed_here":
        return _t(
            turn,
            # The menu is hidden behind a full-screen or modal chat: say how to reach it.
            f"이 창에서는 화면을 이동할 수 없습니다. 채팅을 '패널' 보기로 바꾸면 열어 드릴 수 "
            f"있고, 채팅을 닫은 뒤 메뉴에서 {name} 화면을 직접 열 수도 있습니다.",
            f"Screens cannot be opened from this window. Switch the chat to the panel view and "
            f"I can open {name}, or close the chat and open it from the menu.",
        )
    if status == "error":
        return _t(
            turn,
            f"{name} 화면을 여는 중 문제가 생겨 이동하지 못했습니다. {detail}".strip(),
            f"Something went wrong and {name} did not open. {detail}".strip(),
        )
    if status == "no_result":
        return _t(
            turn,
            f"브라우저에서 결과를 받지 못해 {name} 화면이 열렸는지 확인하지 못했습니다.",
            f"The browser never reported back, so I cannot tell whether {name} opened.",
        )
    if not isinstance(status, str) or not status:
        # A browser (or a client of someone else's) that answered without the result's one
        # required field: say what is missing, not Python's name for it.
        return _t(
            turn,
            f"브라우저의 응답에 결과(status)가 없어 {name} 화면이 열렸는지 확인하지 못했습니다.",
            f"The browser answered without a status, so I cannot tell whether {name} opened.",
        )
    return _t(
        turn,
        f"{name} 화면 이동 결과를 확인할 수 없습니다 ({status[:40]}).",
        f"I cannot confirm that {name} opened (result: {status[:40]}).",
    )


def _decision_outcome(turn: Turn, step: Step) -> str:
    request = str(step.args.get("requestId", ""))
    approving = step.name == APPROVE
    response = step.response
    if response.get("status") == ("approved" if approving else "rejected") and (
        "error" not in response
    ):
        if approving:
            return _t(turn, f"{request} 요청을 승인했습니다.", f"I approved {request}.")
        return _t(turn, f"{request} 요청을 거절했습니다.", f"I rejected {request}.")
    if (decided := response.get("requestStatus")) is not None:
        verb = _t(turn, "승인" if approving else "거절", "approve" if approving else "reject")
        return _t(
            turn,
            f"{request} 요청은 이미 {_STATUS_KO.get(decided, decided)} 요청이라 {verb}하지 "
            "않았습니다.",
            f"{request} was {decided} already, so I did not {verb} it.",
        )
    if "error" in response and response.get("status") != "rejected":  # the tool said no
        error = response["error"]
        return _t(
            turn,
            f"{request} 요청을 처리하지 못했습니다: {error}",
            f"I could not do that for {request}: {error}",
        )
    # ADK's own rejection text is English boilerplate; only a person's reason is worth saying.
    reason = str(response.get("reason") or "")
    suffix = f" ({reason})" if reason else ""
    if approving:
        return _t(
            turn,
            f"{request} 승인이 거절되어 진행하지 않았습니다{suffix}.",
            f"The approval of {request} was rejected, so nothing was approved{suffix}.",
        )
    return _t(
        turn,
        f"{request} 거절이 승인되지 않아 진행하지 않았습니다{suffix}.",
        f"Rejecting {request} was not approved, so nothing was rejected{suffix}.",
    )


def _t(turn: Turn, korean: str, english: str) -> str:
    return korean if turn.korean else english


_INTRODUCTION_KO = (
    "안녕하세요, 저는 이 업무 시스템의 안내 도우미입니다. 저는 여러분이 찾는 화면을 메뉴 "
    "목록에서 검색하고, 권한이 있는 화면만 골라 바로 열어 드립니다. 화면을 열 때는 제가 "
    "직접 여는 것이 아니라 브라우저에게 요청하고, 브라우저가 실제로 무슨 일이 있었는지 "
    "알려 주면 그 결과 그대로 말씀드립니다. 그래서 화면이 열리지 않았는데 열렸다고 말하는 "
    "일은 없습니다. 업무 요청을 승인하는 일처럼 되돌리기 어려운 작업은 반드시 먼저 여쭤보고, "
    "승인하신 경우에만 진행합니다. 대화는 서버에 안전하게 저장되므로 창을 새로 고치거나 "
    "연결이 잠시 끊겨도 이어서 대화할 수 있고, 이미 열었던 화면이 다시 열리는 일도 없습니다. "
    "응답이 길어지면 언제든 멈춤 버튼으로 중단하실 수 있습니다. 무엇을 도와드릴까요?"
)
_INTRODUCTION_EN = (
    "Hello, I am the assistant of this business application. I search the menu for the "
    "screen you need, keep only the screens you are allowed to see, and ask your browser "
    "to open the right one. The browser tells me what really happened, and I report exactly "
    "that, so I never claim a screen opened when it did not. Actions that are hard to undo, "
    "such as approving a work request, always wait for your approval first. Our conversation "
    "is stored on the server, so a reload or a dropped connection loses nothing, and a "
    "screen that was already opened is never opened twice. You can stop a long answer at "
    "any time with the stop button. What can I do for you?"
)


class ScriptedLlm(OfflineLlm):
    """ADK model adapter over ``respond``; streams text ``pace_ms`` apart."""

    model: str = "scripted"

    def reply(self, llm_request: LlmRequest) -> Reply:
        return respond(read_turn(llm_request.contents, frozenset(llm_request.tools_dict)))
