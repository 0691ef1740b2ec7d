"""Titles the model makes (``gateway.hub.titles``): after a thread's first reply, in the
background, never over a person's rename, never with an offline model, once per thread."""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import AsyncGenerator

import pydantic
import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from gateway.hub.titles import Titler, title_model
from gateway.models.script import ScriptLlm
from gateway.store import SessionService
from gateway.store.thread_index import TITLE_MODEL, ThreadPatch

pytestmark = pytest.mark.unit

APP = "app"


class Titling(BaseLlm):
    """A model that answers every request with ``answer`` (or fails), counting requests."""

    model: str = "titling"
    answer: str = '"Screen request list"\nsecond line'
    fails: bool = False
    asked: list[str] = pydantic.Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = llm_request.contents
        self.asked.append(contents[0].parts[0].text or "" if contents[0].parts else "")
        if self.fails:
            raise RuntimeError("the model is down")
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=self.answer)]))


def said(text: str, author: str) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        invocation_id="inv",
        author=author,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
    )


async def thread(store: SessionService, *texts: str) -> None:
    session = await store.create_session(app_name=APP, user_id="ann", session_id="t")
    for turn, text in enumerate(texts):
        await store.append_event(session, said(text, "user" if turn % 2 == 0 else "agent"))


async def titled(store: SessionService, model: BaseLlm) -> tuple[str, list[str]]:
    """The thread's title once the titler is done with a run's end, and who heard of it."""
    heard: list[str] = []
    titler = Titler(store, APP, model, changed=lambda user, thread: heard.append(thread))
    titler.after_run("ann", "t")
    await asyncio.gather(*titler._tasks)
    row = await store.thread_row(APP, "ann", "t")
    assert row is not None
    return row.title, heard


async def test_the_model_titles_a_thread_after_its_first_reply(store: SessionService) -> None:
    await thread(store, "업무 요청 목록 화면 열어줘", "이동했습니다")
    model = Titling()
    title, heard = await titled(store, model)
    assert (title, heard) == ("Screen request list", ["t"])
    assert "업무 요청 목록 화면 열어줘" in model.asked[0] and "이동했습니다" in model.asked[0]
    row = await store.thread_row(APP, "ann", "t")
    assert row is not None and row.titled_by == TITLE_MODEL
    # Asked once per thread: another run's end asks nothing.
    assert await titled(store, model) == ("Screen request list", [])
    assert len(model.asked) == 1


async def test_a_rename_is_never_replaced(store: SessionService) -> None:
    await thread(store, "first words", "a reply")
    await store.patch_thread(APP, "ann", "t", ThreadPatch(title="Mine"))
    assert await titled(store, Titling()) == ("Mine", [])
    # Even when the person renames it while the model is being asked.
    patch = ThreadPatch(title="model's", title_by=TITLE_MODEL)
    assert await store.patch_thread(APP, "ann", "t", patch) is None


async def test_a_failing_or_silent_model_leaves_the_first_title(store: SessionService) -> None:
    await thread(store, "first words", "a reply")
    assert await titled(store, Titling(fails=True)) == ("first words", [])
    assert await titled(store, Titling(answer="  \n")) == ("first words", [])


async def test_nothing_is_asked_before_the_first_reply(store: SessionService) -> None:
    await thread(store, "first words")
    model = Titling()
    assert await titled(store, model) == ("first words", [])
    assert model.asked == []


def test_an_offline_model_never_titles(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rules": [{"say": "hi"}]}))
    assert title_model(LlmAgent(name="a", model=ScriptLlm.from_file(script))) is None
    assert title_model(LlmAgent(name="a", model=Titling())) is not None
