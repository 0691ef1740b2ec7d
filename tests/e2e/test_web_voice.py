"""The reference client's microphone (gateway/web/voice.js) in headless Chromium.

Chromium's fake microphone plays a WAV the test makes (``--use-file-for-fake-audio-capture``);
the gateway serves the demo with its agents on the local Gemini Live server
(``tests.support.gemini_live``), which waits for that audio and answers with a scripted
turn. Spoken, the flagship opens the screen once, with the same transcript bubbles and tool
rows as typed; the agent's speech plays, a barge-in drops what the speaker still held of
the interrupted turn, and Stop silences it at once. An approval asked mid-turn is the card a
typed run's interrupt gets, answered into the turn (``liveResume``), settled when the turn
ends unanswered, and reads the same after a reload; text typed while talking goes into the
turn; a reply spoken over reads as cut off, live and after a reload. A refused turn puts the
button back; a page whose agent cannot go live shows no microphone.
"""

from __future__ import annotations

import asyncio
import contextlib
import wave
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from playwright.async_api import (
    Browser,
    BrowserContext,
    WebSocketRoute,
    async_playwright,
    expect,
)
from websockets.asyncio.client import connect

from gateway.wire import live as wire_live
from tests.support import gemini_live as live
from tests.support.agui import new_id
from tests.support.browser import (
    NEEDS_CHROMIUM,
    TIMEOUT_MS,
    WebApp,
    accessibility_problems,
    checked_context,
    launch_chromium,
    route_sockets,
)
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import RunningGateway, running_gateway
from tests.support.voice import VoiceSocket

pytestmark = [NEEDS_CHROMIUM, pytest.mark.browser]

# What the browser's worklet must have sent before the scripted model "hears" the request:
# half a second of 16 kHz s16le audio.
HEARD_AFTER = live.INPUT_RATE  # bytes
STARTED = '"gateway.live.started"'


@pytest.fixture(scope="module")
async def browser(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Browser]:
    """Chromium whose microphone plays a tone the test wrote, granted without asking."""
    wav = tmp_path_factory.mktemp("mic") / "speech.wav"
    with wave.open(str(wav), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(live.INPUT_RATE)
        out.writeframes(live.tone(2.0))
    async with async_playwright() as playwright:
        browser = await launch_chromium(
            playwright,
            "--use-fake-device-for-media-stream",
            "--use-fake-ui-for-media-stream",
            f"--use-file-for-fake-audio-capture={wav}",
        )
        yield browser
        await browser.close()


@pytest.fixture
async def context(browser: Browser) -> AsyncIterator[BrowserContext]:
    """A fresh profile that may use the microphone, checked as every browser test's is."""
    async with checked_context(browser) as context:
        await context.grant_permissions(["microphone"])
        yield context


@contextlib.asynccontextmanager
async def voice_demo(
    scripts: Sequence[Sequence[live.Step]], **settings: Any
) -> AsyncIterator[tuple[live.LiveServer, RunningGateway]]:
    async with (
        live.LiveServer(scripts) as server,
        running_gateway(model=server.live_model(), **settings) as gateway,
    ):
        yield server, gateway


def speech(seconds: float, chunks: int) -> list[dict[str, object]]:
    """``seconds`` of the agent's speech in ``chunks`` audio-out messages."""
    pcm = live.tone(seconds, live.OUTPUT_RATE)
    size = len(pcm) // chunks // 2 * 2
    return [live.audio_out(pcm[i : i + size]) for i in range(0, len(pcm), size)]


async def stats(app: WebApp) -> dict[str, int]:
    found: dict[str, int] = await app.page.evaluate("({...window.__voice})")
    return found


async def until(app: WebApp, condition: str) -> None:
    """Waits until ``condition`` holds of the speaker's counts (``window.__voice``)."""
    await app.page.wait_for_function(
        f"(({{played, dropped, queued}}) => {condition})(window.__voice)", timeout=TIMEOUT_MS
    )


async def test_the_spoken_flagship_opens_the_screen_once(context: BrowserContext) -> None:
    script = [
        live.WaitAudio(HEARD_AFTER),
        live.Send(
            live.heard("업무 요청 목록 "),
            live.heard("화면 열어줘", finished=True),
            live.tool_call("find_screen", {"query": "업무 요청 목록"}, "find-1"),
            live.turn_complete(),  # a 2.5 Live model's calls are answered at its turn's end
        ),
        live.WaitToolResponse(),
        live.Send(
            live.tool_call("navigateToScreen", {"screenId": "MNU-3120"}, "nav-1"),
            live.turn_complete(),
        ),
        live.WaitToolResponse(),
        live.Send(*speech(0.3, 3), live.said(MOVED, finished=True), live.turn_complete()),
    ]
    async with voice_demo([script]) as (server, gateway):
        app = await WebApp.open(context, gateway)
        await expect(app.screen_title).to_have_text("홈")
        mic = app.page.get_by_role("button", name="음성으로 말하기")
        await expect(mic).to_be_visible()
        await expect(mic).to_have_attribute("aria-pressed", "false")
        await mic.click()

        await expect(mic).to_have_attribute("aria-pressed", "true")
        await expect(app.page.get_by_role("status").filter(has_text="듣고 있어요")).to_be_visible()
        await expect(app.screen_title).to_have_text("업무 요청 목록", timeout=TIMEOUT_MS)
        await expect(app.user_messages.last).to_have_text(FLAGSHIP)
        await expect(app.replies.last).to_have_text(MOVED, timeout=TIMEOUT_MS)
        await expect(app.activity("find_screen").last).to_have_attribute("data-state", "done")
        await expect(app.activity("navigateToScreen").last).to_contain_text("이동 완료")
        # The agent's speech reached the speaker.
        await until(app, "played + queued > 0")
        assert await accessibility_problems(app.page) == []

        await mic.click()
        await expect(mic).to_have_attribute("aria-pressed", "false")
        await app.wait_idle()
        assert await app.navigations() == 1
        assert server.failures == []
        # The browser's action ran once, and the model was told so once.
        [navigated] = [r for r in server.connections[0].tool_responses if r["id"] == "nav-1"]
        assert navigated["response"]["status"] == "navigated"
        sent = (await stats(app))["sentBytes"]
        assert sent >= HEARD_AFTER and sent % 2 == 0

        # A reload shows the spoken turn as the thread stored it.
        await app.reload()
        await expect(app.user_messages.last).to_have_text(FLAGSHIP)
        await expect(app.replies.last).to_have_text(MOVED)
        await expect(app.activity("navigateToScreen").last).to_contain_text("이동 완료")
        assert await app.navigations() == 0  # the reloaded page performs nothing again


async def test_a_dropped_connection_mid_turn_keeps_the_turn_and_the_microphone(
    context: BrowserContext,
) -> None:
    """The page's socket drops the moment its turn has started: the gateway holds the turn
    for the tab, the page keeps its microphone open, and once the reconnect resumes the turn
    the person's words reach the same provider session; the screen opens once."""
    script = [
        live.WaitAudio(HEARD_AFTER),
        live.Send(
            live.heard("업무 요청 목록 화면 열어줘", finished=True),
            live.tool_call("navigateToScreen", {"screenId": "MNU-3120"}, "nav-1"),
            live.turn_complete(),
        ),
        live.WaitToolResponse(),
        live.Send(*speech(0.3, 3), live.said(MOVED, finished=True), live.turn_complete()),
    ]
    dropped = asyncio.Event()
    closing: list[asyncio.Future[None]] = []

    def dropped_once_live(route: WebSocketRoute) -> None:
        server = route.connect_to_server()
        route.on_message(server.send)

        def downstream(message: str | bytes) -> None:
            route.send(message)
            if not dropped.is_set() and isinstance(message, str) and STARTED in message:
                dropped.set()
                closing.append(asyncio.ensure_future(server.close(code=1006)))
                closing.append(asyncio.ensure_future(route.close(code=1006)))

        server.on_message(downstream)

    async with voice_demo([script]) as (server, gateway):
        page = await context.new_page()
        await route_sockets(page, dropped_once_live)
        app = await WebApp.open(context, gateway, page=page)
        mic = app.page.get_by_role("button", name="음성으로 말하기")
        await mic.click()
        await dropped.wait()
        # Held, not ended: the button stays on while the page reconnects.
        await expect(mic).to_have_attribute("aria-pressed", "true")
        await expect(app.page.get_by_role("status").filter(has_text="듣고 있어요")).to_be_visible()
        await expect(app.screen_title).to_have_text("업무 요청 목록")
        await expect(app.replies.last).to_have_text(MOVED)
        await expect(mic).to_have_attribute("aria-pressed", "true")
        await mic.click()
        await expect(mic).to_have_attribute("aria-pressed", "false")
        await app.wait_idle()
        assert await app.navigations() == 1
        # One provider session throughout: the turn was resumed, not begun again.
        assert len(server.connections) == 1 and server.failures == []
        assert len(closing) == 2  # the one drop, both ends


def asks_to_approve(call_id: str) -> list[live.Step]:
    """The person asks aloud for R-1042's approval; the model calls the demo's tool that a
    person must confirm, and says it is done once it has the call's result."""
    return [
        live.WaitAudio(HEARD_AFTER),
        live.Send(
            live.heard("R-1042 승인해줘", finished=True),
            live.tool_call("approveWorkRequest", {"requestId": "R-1042"}, call_id),
            live.turn_complete(),
        ),
        live.WaitToolResponse(),
        live.Send(live.said("처리했습니다", finished=True), live.turn_complete()),
    ]


@pytest.mark.parametrize(
    ("choice", "row_says", "status"),
    [("승인", "✓ 승인됨", "approved"), ("거절", "사용자가 거절했습니다.✕ 거절됨", "rejected")],
)
async def test_an_approval_asked_mid_turn_is_the_typed_runs_card(
    context: BrowserContext, choice: str, row_says: str, status: str
) -> None:
    async with voice_demo([asks_to_approve("call-1")]) as (server, gateway):
        app = await WebApp.open(context, gateway)
        mic = app.page.get_by_role("button", name="음성으로 말하기")
        await mic.click()
        # Asked while the turn is live, as the card a typed run's interrupt gets.
        card = app.approval_card
        await expect(card).to_contain_text("R-1042", timeout=TIMEOUT_MS)
        await expect(mic).to_have_attribute("aria-pressed", "true")
        row = app.activity("approveWorkRequest").last
        await expect(row).to_have_attribute("data-state", "approval")
        assert await accessibility_problems(app.page) == []

        await card.get_by_role("button", name=choice, exact=True).click()
        await expect(card.get_by_role("status")).to_contain_text(f"{choice}했습니다")
        await expect(app.replies.last).to_have_text("처리했습니다", timeout=TIMEOUT_MS)
        await expect(row).to_contain_text(row_says)
        await expect(mic).to_have_attribute("aria-pressed", "true")  # the turn went on
        await mic.click()
        await app.wait_idle()
        shown = await row.inner_text()
        assert server.failures == []
        [told] = server.connections[0].tool_responses
        assert (told["id"], told["response"].get("status")) == ("call-1", status), told
        if status == "rejected":
            assert told["response"]["reason"] == "사용자가 거절했습니다"

        # A reload reads the same: the call answered, nothing left to approve.
        await app.reload()
        await expect(app.replies.last).to_have_text("처리했습니다")
        await expect(row).to_have_count(1)
        assert await row.inner_text() == shown
        await expect(app.approval_card).to_have_count(0)


async def test_a_card_left_unanswered_settles_when_the_turn_ends(context: BrowserContext) -> None:
    script = [
        live.WaitAudio(HEARD_AFTER),
        live.Send(
            live.tool_call("approveWorkRequest", {"requestId": "R-1042"}, "call-1"),
            live.turn_complete(),
        ),
        live.WaitAudio(10**9),
    ]
    async with voice_demo([script]) as (_, gateway):
        app = await WebApp.open(context, gateway)
        mic = app.page.get_by_role("button", name="음성으로 말하기")
        await mic.click()
        card = app.approval_card
        await expect(card).to_contain_text("R-1042", timeout=TIMEOUT_MS)
        await mic.click()
        await app.wait_idle()
        # The gateway rejected the call as the turn ended: the card can no longer be answered.
        await expect(card.get_by_role("status")).to_have_text("✕ 음성 대화가 끝나 거절되었습니다")
        await expect(card.get_by_role("button", name="승인", exact=True)).to_be_disabled()
        row = app.activity("approveWorkRequest").last
        await expect(row).to_contain_text("음성 대화가 끝나 실행하지 않았습니다.✕ 거절됨")
        shown = await row.inner_text()
        assert await accessibility_problems(app.page) == []
        await app.reload()
        await expect(row).to_have_count(1)
        assert await row.inner_text() == shown


async def test_text_typed_while_talking_goes_into_the_live_turn(context: BrowserContext) -> None:
    script = [
        live.WaitAudio(HEARD_AFTER),
        live.Send(live.heard("안녕", finished=True), live.said("네", finished=True)),
        live.Send(live.turn_complete()),
        live.WaitClientContent(),
        live.Send(live.said("목록을 엽니다", finished=True), live.turn_complete()),
    ]
    async with voice_demo([script]) as (server, gateway):
        app = await WebApp.open(context, gateway)
        mic = app.page.get_by_role("button", name="음성으로 말하기")
        await mic.click()
        await expect(app.replies.last).to_have_text("네", timeout=TIMEOUT_MS)
        # Send stays beside Stop while the turn is live.
        await expect(app.page.get_by_role("button", name="보내기")).to_be_visible()
        await app.say("업무 요청 목록 보여줘")

        await expect(app.user_messages).to_have_text(["안녕", "업무 요청 목록 보여줘"])
        await expect(app.replies.last).to_have_text("목록을 엽니다", timeout=TIMEOUT_MS)
        await expect(mic).to_have_attribute("aria-pressed", "true")  # no run of its own
        assert await accessibility_problems(app.page) == []
        await mic.click()
        await app.wait_idle()
        assert server.failures == []
        turn = server.connections[0].client_contents[-1]
        assert turn["turns"] == [{"role": "user", "parts": [{"text": "업무 요청 목록 보여줘"}]}]

        # Stored in its place among the transcripts: a reload reads the same.
        await app.reload()
        await expect(app.user_messages).to_have_text(["안녕", "업무 요청 목록 보여줘"])
        await expect(app.replies).to_have_text(["네", "목록을 엽니다"])


async def test_a_barge_in_drops_the_speech_the_speaker_still_held(
    context: BrowserContext,
) -> None:
    script = [
        live.WaitAudio(HEARD_AFTER),
        live.Send(
            live.heard("길게 설명해줘", finished=True),
            *speech(4.0, 8),
            live.said("아주 긴 설명을 시작하겠습니다"),
        ),
        live.Pause(0.3),
        live.Send(
            live.interrupted(),
            live.heard("그만", finished=True),
            *speech(0.2, 1),
            live.said("네", finished=True),
            live.turn_complete(),
        ),
    ]
    async with voice_demo([script]) as (server, gateway):
        # On a phone: the button fits beside Send, the page does not scroll sideways.
        page = await context.new_page()
        await page.set_viewport_size({"width": 390, "height": 844})
        app = await WebApp.open(context, gateway, page=page)
        mic = app.page.get_by_role("button", name="음성으로 말하기")
        await expect(mic).to_be_in_viewport(ratio=1)
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
        await mic.click()
        listening = app.page.get_by_role("status").filter(has_text="듣고 있어요")
        await expect(listening).to_be_in_viewport()
        await expect(app.replies.last).to_have_text("네", timeout=TIMEOUT_MS)
        # Most of the four seconds of turn 1 were never played: dropped at the interruption.
        await until(app, "dropped > 0")
        after = await stats(app)
        assert after["dropped"] >= 2 * live.OUTPUT_RATE, after
        assert after["played"] < 3 * live.OUTPUT_RATE, after
        # Turn 2's words still play.
        await until(app, "queued === 0")
        await expect(app.user_messages).to_have_text(["길게 설명해줘", "그만"])
        # The reply spoken over reads as cut off, with a small mark of its own; the next is whole.
        await expect_cut_off(app)
        assert await accessibility_problems(app.page) == []
        await mic.click()
        await app.wait_idle()
        assert server.failures == []
        await app.reload()
        await expect_cut_off(app)


async def expect_cut_off(app: WebApp) -> None:
    """The barge-in script's first reply marked as spoken over, its second unmarked."""
    await expect(app.replies).to_have_text(["아주 긴 설명을 시작하겠습니다", "네"])
    replies = app.transcript.locator(".msg.assistant")
    await expect(replies.first).to_contain_text("말씀하셔서 여기서 멈췄습니다")
    await expect(replies.last).not_to_contain_text("멈췄습니다")
    await expect(app.transcript.locator(".retry-line")).to_have_count(0)


async def test_stop_silences_the_agent_at_once(context: BrowserContext) -> None:
    script = [
        live.WaitAudio(HEARD_AFTER),
        live.Send(live.heard("길게 설명해줘", finished=True), *speech(4.0, 8), live.said("아주")),
        live.WaitAudio(10**9),
    ]
    async with voice_demo([script]) as (_, gateway):
        app = await WebApp.open(context, gateway)
        await app.page.get_by_role("button", name="음성으로 말하기").click()
        await expect(app.replies.last).to_have_text("아주", timeout=TIMEOUT_MS)
        await until(app, "queued > 0")
        await app.click_stop()
        await until(app, "queued === 0")
        assert (await stats(app))["dropped"] >= 2 * live.OUTPUT_RATE
        await app.wait_idle()


async def test_a_refused_turn_puts_the_button_back_and_says_why(context: BrowserContext) -> None:
    # The user's one live turn is open in another client: the page's is refused.
    async with (
        voice_demo([[live.WaitAudio(10**9)]], live_turns_per_user=1) as (_, gateway),
        connect(gateway.ws_url("demo"), max_size=None) as ws,
    ):
        elsewhere = VoiceSocket(ws)
        await elsewhere.start(new_id("t"), new_id("r"))
        await elsewhere.until("CUSTOM", wire_live.STARTED)
        app = await WebApp.open(context, gateway)
        mic = app.page.get_by_role("button", name="음성으로 말하기")
        await mic.click()
        await expect(app.transcript.get_by_role("alert")).to_contain_text("사용 한도")
        await expect(mic).to_have_attribute("aria-pressed", "false")
        await expect(mic).to_be_enabled()
        await expect(app.page.locator(".mic-status")).to_have_text("")
        await app.wait_idle()


async def test_a_page_whose_agent_cannot_go_live_shows_no_microphone(
    context: BrowserContext,
) -> None:
    # The demo on its offline script model: typed turns only.
    async with running_gateway() as gateway:
        app = await WebApp.open(context, gateway)
        await expect(app.page.locator("#mic")).to_be_hidden()
