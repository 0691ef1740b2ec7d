"""Building the ADK side: model, agent, app, runner and session store, and warming them.

``Engine`` is what the hub talks to. It knows ADK; the hub knows runs and threads.
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing, nullcontext
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.agents.run_config import RunConfig
from google.adk.apps import App, ResumabilityConfig
from google.adk.events import Event as AdkEvent
from google.adk.models.base_llm import BaseLlm
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions import Session
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from gateway import config
from gateway.config import Settings
from gateway.models.scripted import ScriptedLlm
from gateway.screens import catalog as screen_catalog
from gateway.store import OpenedThread, SessionService, ThreadPage
from gateway.tools import catalog as tool_catalog
from gateway.tools.adk import CLIENT_TOOLS_KEY, RUN_METADATA_KEY, CatalogToolset
from gateway.tools.policy import build_before_tool_callback, run_context
from gateway.translate import CONFIRMATION_CALL

__all__ = ["CONFIRMATION_CALL", "Engine", "build_agent", "build_model"]

log = logging.getLogger(__name__)

APP_NAME = "gateway"

INSTRUCTION = """\
You are the assistant of a business web application, shown in a chat panel beside it.
To open a screen: call find_screen with what the user called it, pick the best result,
then call navigateToScreen with its screenId (and screenName). The browser answers with
what really happened. Say the screen opened ("이동했습니다") only when the status is
"navigated"; for any other status tell the user honestly that it did not open and why.
If navigateToScreen is not available, ask the user to open the screen from the menu.
Answer in the user's language."""


def build_model(settings: Settings) -> BaseLlm | str:
    """'scripted' is offline; a Gemini name needs GOOGLE_API_KEY; 'openai/<m>' needs the extra."""
    name = settings.model
    if name == "scripted":
        return ScriptedLlm(pace_ms=settings.scripted_pace_ms)
    if name.startswith("openai/"):
        from google.adk.integrations.openai import OpenAILlm

        return OpenAILlm(model=name.removeprefix("openai/"))
    if name.startswith("gemini"):
        if not (os.environ.get("GOOGLE_API_KEY") or os.environ.get("GOOGLE_GENAI_USE_VERTEXAI")):
            raise SystemExit(f"GATEWAY_MODEL={name} needs GOOGLE_API_KEY (or Vertex AI settings)")
        return name
    raise SystemExit(f"GATEWAY_MODEL={name!r}: use 'scripted', 'gemini-...' or 'openai/<model>'")


def build_agent(model: BaseLlm | str, catalog: tool_catalog.Catalog) -> LlmAgent:
    return LlmAgent(
        name="screen_navigator",
        model=model,
        instruction=instruction_with_context,
        tools=[CatalogToolset(catalog)],
        # The navigation policy runs on the server before any call reaches the browser.
        before_tool_callback=build_before_tool_callback(screen_catalog.load()),
    )


def instruction_with_context(context: ReadonlyContext) -> str:
    """The instruction, plus what the user's screen shows, from the run's allowed context."""
    entries = run_context(context)
    if not entries:
        return INSTRUCTION
    lines = "\n".join(f"- {key}: {value}" for key, value in sorted(entries.items()))
    return f"{INSTRUCTION}\n\nThe user's screen, as their browser reports it:\n{lines}"


def resumable_app(agent: LlmAgent, plugins: Sequence[BasePlugin] = ()) -> App:
    """The ADK app: resumable, since pausing on client tools and approvals depends on it."""
    with warnings.catch_warnings():
        # ADK marks resumability experimental and says so on every construction.
        warnings.simplefilter("ignore", UserWarning)
        return App(
            name=APP_NAME,
            root_agent=agent,
            resumability_config=ResumabilityConfig(is_resumable=True),
            plugins=list(plugins),
        )


class Engine:
    """One ADK Runner over one session store, shared by every run of the process."""

    def __init__(
        self,
        agent: LlmAgent,
        session_service: SessionService,
        catalog: tool_catalog.Catalog,
        plugins: Sequence[BasePlugin] = (),
    ) -> None:
        app = resumable_app(agent, plugins)
        self.runner = Runner(app=app, session_service=session_service, auto_create_session=True)
        self.sessions = session_service
        self.catalog = catalog

    async def session(self, user_id: str, thread_id: str) -> Session | None:
        return await self.sessions.get_session(
            app_name=APP_NAME, user_id=user_id, session_id=thread_id
        )

    async def open_thread(self, user_id: str, thread_id: str) -> OpenedThread:
        """The thread for a run of ``user_id``: its owner and session, created if new."""
        return await self.sessions.open_thread(APP_NAME, user_id, thread_id)

    async def forget_thread(self, user_id: str, thread_id: str) -> None:
        await self.sessions.delete_session(app_name=APP_NAME, user_id=user_id, session_id=thread_id)

    async def thread_owner(self, thread_id: str) -> str | None:
        """The user a thread belongs to, or None for a thread nobody has used yet."""
        return await self.sessions.thread_owner(APP_NAME, thread_id)

    async def thread_view(
        self, user_id: str, thread_id: str, max_bytes: int | None = None
    ) -> tuple[ThreadPage, Session | None]:
        """The thread's latest messages (``max_bytes`` of them) and its session.

        The session carries the state and the calls still open (a window of one event
        reaches back to them), not the whole history: rebuilding every ADK event of a long
        thread is what made a reattach slow.
        """
        page = await self.thread_page(user_id, thread_id, max_bytes=max_bytes)
        session = await self.sessions.get_session(
            app_name=APP_NAME,
            user_id=user_id,
            session_id=thread_id,
            config=GetSessionConfig(num_recent_events=1),
        )
        return page, session

    async def thread_page(
        self, user_id: str, thread_id: str, *, max_bytes: int | None, before: int | None = None
    ) -> ThreadPage:
        """The thread's newest messages that fit ``max_bytes``; with ``before`` (a page's
        ``earlier``), those older than that page."""
        return await self.sessions.thread_page(
            APP_NAME, user_id, thread_id, max_bytes=max_bytes, before=before
        )

    def save_streamed_text(
        self,
        *,
        user_id: str,
        thread_id: str,
        invocation_id: str,
        message_id: str,
        author: str,
        text: str,
    ) -> asyncio.Future[object] | None:
        """Stores the text so far of a message being streamed; the future is its commit.

        None for an in-memory store: nothing in it outlives the process, so a chunk has
        nothing to wait for.
        """
        if config.in_memory(self.sessions.path):
            return None
        return self.sessions.save_streamed_text(
            app_name=APP_NAME,
            user_id=user_id,
            session_id=thread_id,
            invocation_id=invocation_id,
            message_id=message_id,
            author=author,
            text=text,
        )

    def forget_streamed_text(
        self, user_id: str, thread_id: str, message_id: str
    ) -> asyncio.Future[object]:
        return self.sessions.forget_streamed_text(
            app_name=APP_NAME, user_id=user_id, session_id=thread_id, message_id=message_id
        )

    async def append(self, session: Session, event: AdkEvent) -> None:
        await self.sessions.append_event(session, event)

    async def run(
        self,
        *,
        user_id: str,
        thread_id: str,
        session: Session | None,
        message: types.Content,
        metadata: dict[str, Any],
        client_tools: frozenset[str],
        abort_signal: Any = None,
    ) -> AsyncGenerator[AdkEvent, None]:
        """Streams one ADK invocation; a message of function responses resumes a paused one.

        ``session``, when given, is the thread as the caller just loaded it while holding
        it: the runner gets it as it is instead of reading it again.
        """
        run_metadata = {**metadata, CLIENT_TOOLS_KEY: sorted(client_tools)}
        config = RunConfig(
            streaming_mode=StreamingMode.SSE,
            custom_metadata={RUN_METADATA_KEY: run_metadata},
        )
        with self.sessions.handed_over(session) if session else nullcontext():
            async with aclosing(
                self.runner.run_async(
                    user_id=user_id,
                    session_id=thread_id,
                    new_message=message,
                    run_config=config,
                    abort_signal=abort_signal,
                )
            ) as events:
                async for event in events:
                    yield event


async def open_session_service(settings: Settings, agent_name: str) -> SessionService:
    """Opens the durable store and closes any run a crash cut off."""
    service = SessionService(
        settings.db, durability=settings.durability, history_window=settings.history_window
    )
    await service.open()
    await service.close_interrupted(APP_NAME, author=agent_name)
    return service
