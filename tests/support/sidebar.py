"""The reference client's thread sidebar and message versions, driven the way a person uses them.

``Sidebar`` wraps the list of conversations in one tab (a drawer behind ☰ on a narrow
chat, a column beside a wide one): open it, search, choose, rename, archive, delete.
``Versions`` reads and presses a fork's "‹ 2/3 ›" and the regenerate and edit buttons.
"""

from __future__ import annotations

from playwright.async_api import CDPSession, Locator, Page, expect

from tests.support.browser import TIMEOUT_MS


class Sidebar:
    def __init__(self, page: Page) -> None:
        self.page = page

    @property
    def region(self) -> Locator:
        return self.page.get_by_role("complementary", name="대화 목록")

    @property
    def toggle(self) -> Locator:
        return self.page.locator("#chat .threads-toggle")

    @property
    def search_box(self) -> Locator:
        return self.region.get_by_role("searchbox", name="대화 검색")

    @property
    def titles(self) -> Locator:
        """The titles the list shows, in its order."""
        return self.region.locator(".thread-item .thread-title")

    def item(self, title: str) -> Locator:
        return self.region.locator(".thread-item").filter(
            has=self.page.locator(".thread-title", has_text=title)
        )

    async def open(self) -> None:
        """Opens the drawer (a docked sidebar is open already)."""
        if (
            await self.toggle.is_visible()
            and await self.toggle.get_attribute("aria-expanded") != "true"
        ):
            await self.toggle.click()
        await expect(self.region).to_be_visible()

    async def choose(self, title: str) -> None:
        await self.item(title).locator(".thread-open").click()

    async def act(self, title: str, action: str) -> None:
        """One of a thread's actions: 이름 바꾸기, 고정, 보관, 보관 해제, 삭제."""
        item = self.item(title)
        await item.locator("summary").click()
        await item.get_by_role("button", name=action, exact=True).click()

    async def rename(self, title: str, new_title: str) -> None:
        await self.act(title, "이름 바꾸기")
        box = self.region.get_by_role("textbox", name="새 이름")
        await box.fill(new_title)
        await box.press("Enter")

    async def delete(self, title: str) -> None:
        await self.act(title, "삭제")
        dialog = self.page.get_by_role("dialog")
        await expect(dialog).to_contain_text(title)
        await dialog.get_by_role("button", name="삭제").click()
        await expect(dialog).to_be_hidden()

    async def show(self, view: str) -> None:
        """ "대화" (threads not archived) or "보관함"."""
        await self.region.get_by_role("button", name=view, exact=True).click()

    async def compose(self, cdp: CDPSession, steps: list[str]) -> None:
        """Types into the search box through an IME: each step the composition so far, the
        last one committed (what a Korean keyboard does for 업, 업무...)."""
        await self.search_box.focus()
        for text in steps:
            await cdp.send(
                "Input.imeSetComposition",
                {"text": text, "selectionStart": len(text), "selectionEnd": len(text)},
            )
        await cdp.send("Input.insertText", {"text": steps[-1]})


class Versions:
    """Regenerate, edit and the versions of a thread, in one tab's transcript."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.transcript = page.get_by_role("log", name="대화")

    def navigator(self, kind: str = "답변 버전") -> Locator:
        """A fork's "‹ n/m ›" ("답변 버전" for regenerations, "메시지 버전" for edits)."""
        return self.transcript.get_by_role("group", name=kind)

    async def regenerate(self) -> None:
        await self.transcript.get_by_role("button", name="답변 다시 생성").click()

    async def edit(self, old: str, new: str) -> None:
        message = self.transcript.locator(".msg.user").filter(has_text=old).last
        await message.get_by_role("button", name="메시지 수정").click()
        box = self.transcript.get_by_role("textbox", name="수정할 메시지")
        await box.fill(new)
        await box.press("Enter")

    async def shows(self, kind: str, position: str) -> None:
        await expect(self.navigator(kind).locator(".branch-count")).to_have_text(
            position, timeout=TIMEOUT_MS
        )

    async def go(self, kind: str, direction: str) -> None:
        """Presses ‹ ("이전 버전") or › ("다음 버전") at the fork."""
        await self.navigator(kind).get_by_role("button", name=direction).click()
