"""Titles the agent's model makes (``GATEWAY_TITLES=model``), after a thread's first reply.

Theory of operation. Every thread is titled from its first user message as it is stored
(``gateway.store.thread_index``). With ``GATEWAY_TITLES=model``, once a run of a thread
ends (``after_run``) whose title is still that first one, the hub asks the agent's own
model, in a task of its own, for a short title of the conversation so far (its first user
message and reply): no run waits for it. The answer, cut to one line of at most 80
characters, replaces the first title unless a person renamed the thread meanwhile (the
store's write refuses to, ``ThreadPatch.title_by``), and the user's connections hear of it.
Nothing is asked when the model is an offline one (the script model: it would answer
FALLBACK), when the thread has no reply yet, or twice for one thread in this process; a
model that fails or says nothing leaves the first title, with a log line.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable

from google.adk.agents import LlmAgent
from google.adk.agents.base_agent import BaseAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.genai import types

from gateway.models.offline import OfflineLlm
from gateway.store import SessionService
from gateway.store.thread_index import (
    TITLE_CHARS,
    TITLE_FIRST,
    TITLE_MODEL,
    ThreadPatch,
    cut,
)

log = logging.getLogger(__name__)

# How long the model may take to title a thread.
TITLE_SECONDS = 30.0
# Threads titled (or tried) by this process, remembered so none is asked for twice.
REMEMBERED = 10_000
# Titles being made at once, at most; a run ending past it leaves its thread's first title.
AT_ONCE = 4
# What the model is shown of the conversation, at most, in characters.
SHOWN_CHARS = 2000

ASK = (
    "Write a short title (at most 8 words) for this conversation, in the language the user"
    " wrote in. Answer with the title only: no quotes, no punctuation at the end."
)


def title_model(root: BaseAgent) -> BaseLlm | None:
    """The model that titles a thread: the root agent's, unless it is an offline one."""
    if not isinstance(root, LlmAgent):
        return None
    try:
        model = root.canonical_model
    except ValueError:  # no model anywhere up its tree
        return None
    return None if isinstance(model, OfflineLlm) else model


class Titler:
    """Asks the model for titles, one task per thread, never twice for one thread."""

    def __init__(
        self,
        store: SessionService,
        app_name: str,
        model: BaseLlm | None,
        changed: Callable[[str, str], None],
    ) -> None:
        self.store = store
        self.app_name = app_name
        self.model = model
        # Told (user, thread) once a thread has a new title.
        self.changed = changed
        self._tried: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    def after_run(self, user_id: str, thread_id: str) -> None:
        """A run of the thread ended: titles it in the background if it is due."""
        if self.model is None or thread_id in self._tried or len(self._tasks) >= AT_ONCE:
            return
        task = asyncio.create_task(self._title(user_id, thread_id), name=f"title {thread_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _title(self, user_id: str, thread_id: str) -> None:
        try:
            row = await self.store.thread_row(self.app_name, user_id, thread_id)
            if row is None or row.titled_by != TITLE_FIRST:
                return
            said = await self._conversation(user_id, thread_id)
            if said is None:
                return  # no reply yet: the next run's end asks
            self._remember(thread_id)
            title = await asyncio.wait_for(self._ask(said), TITLE_SECONDS)
            if not title:
                log.info("thread %s: the model gave no title; the first one stays", thread_id)
                return
            patch = ThreadPatch(title=title, title_by=TITLE_MODEL)
            if await self.store.patch_thread(self.app_name, user_id, thread_id, patch):
                log.info("thread %s titled by the model", thread_id)
                self.changed(user_id, thread_id)
        except Exception as error:  # a title is a nicety: the first one stays
            log.warning(
                "thread %s: no title from the model (%s); the first one stays",
                thread_id,
                type(error).__name__,
            )

    async def _conversation(self, user_id: str, thread_id: str) -> str | None:
        page = await self.store.thread_page(self.app_name, user_id, thread_id, limit=8)
        lines = []
        for message in page.messages:
            content = message.get("content")
            if message.get("role") in ("user", "assistant") and isinstance(content, str):
                lines.append(f"{message['role']}: {content}")
        if not any(line.startswith("assistant: ") for line in lines):
            return None
        return "\n".join(lines)[:SHOWN_CHARS]

    async def _ask(self, conversation: str) -> str:
        assert self.model is not None
        request = LlmRequest(
            model=self.model.model,
            contents=[
                types.Content(role="user", parts=[types.Part(text=f"{ASK}\n\n{conversation}")])
            ],
        )
        text = ""
        async for response in self.model.generate_content_async(request, stream=False):
            if response.content and response.content.parts:
                text += "".join(
                    part.text or "" for part in response.content.parts if not part.thought
                )
        line = next((line for line in text.splitlines() if line.strip()), "")
        return cut(line.strip().strip("\"'“”「」*#"), TITLE_CHARS)

    def _remember(self, thread_id: str) -> None:
        self._tried[thread_id] = None
        while len(self._tried) > REMEMBERED:
            self._tried.popitem(last=False)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
