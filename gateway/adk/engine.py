"""The ADK side: one Runner over the hosted App and the session store.

``Engine`` is what the hub talks to. It knows ADK; the hub knows runs and threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing, nullcontext
from functools import partial
from typing import Any

from google.adk.agents import BaseAgent
from google.adk.apps import App
from google.adk.events import Event as AdkEvent
from google.adk.runners import Runner
from google.adk.sessions import Session
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from gateway import config, timeline
from gateway import wire as p
from gateway.a2ui.catalogs import ClientCatalogs
from gateway.a2ui.plugin import SurfacePlugin
from gateway.a2ui.surfaces import Surfaces
from gateway.adk.approvals import own_hints
from gateway.adk.hosting import Hosted, agent_tools, agents, server_tool_names
from gateway.adk.invocation import Invocation, runner_for
from gateway.adk.resumability import resumable
from gateway.adk.services import Services
from gateway.adk.usage import UsagePlugin
from gateway.adk.workers import WorkerPool, WorkerRun
from gateway.auth import WARM_UP_USER
from gateway.config import Settings
from gateway.models.calls import FailedCall, ModelCalls, Stall
from gateway.store import OpenedThread, SessionService, ThreadPage
from gateway.store.branches import BranchTree
from gateway.store.frames import FrameLog, LoggedFrame
from gateway.store.recovery import Finishing, Unfinished
from gateway.store.run_start import StoredRun
from gateway.tools.client import ClientTool, ClientToolset
from gateway.translate.history import event_messages
from gateway.translate.subagents import Subagents
from gateway.translate.translator import CONFIRMATION_CALL

__all__ = ["CONFIRMATION_CALL", "Engine", "open_session_service"]

log = logging.getLogger(__name__)


class Engine:
    """One ADK Runner over one session store, shared by every run of the process."""

    def __init__(
        self,
        hosted: Hosted,
        app: App,
        client_tools: ClientToolset,
        session_service: SessionService,
        usage: UsagePlugin | None = None,
        model_calls: ModelCalls | None = None,
        surfaces: SurfacePlugin | None = None,
        services: Services | None = None,
        warm_up: App | None = None,
        workers: WorkerPool | None = None,
    ) -> None:
        """``app`` is ``hosted`` as ``gateway.adk.hosting.prepare`` made it, with ``client_tools``
        on its agents; ``usage``, one of its plugins, counts each run's tokens,
        ``model_calls``, another, watches its model calls (without it none is watched), and
        ``surfaces``, another, shows the A2UI surfaces its tools return (without it none).
        ``services``: the memory, artifact and credential services its runs have (none
        without). ``warm_up``: the App the warm-up user's runs run instead of ``app``
        (``gateway.adk.stand_in``), if any. ``workers``: the pool that runs invocations in
        other processes (``docs/multicore.md``), if any."""
        self.hosted = hosted
        self.catalog = hosted.catalog
        self.client_tools = client_tools
        self.app_name = app.name
        self.services = services or Services()
        self.runner = self._runner(app, session_service)
        self.warm_up_runner = self._runner(warm_up, session_service) if warm_up else None
        self.resumable = resumable(app)
        self.sessions = session_service
        # The agents' own tools, by name: a client tool may not take one of these names.
        assert isinstance(app.root_agent, BaseAgent)
        self.root_agent = app.root_agent
        self.server_tools = server_tool_names(app.root_agent)
        # The tools whose confirmation hint is always their own (never replaced).
        self.own_hints = own_hints(app.root_agent)
        # What a translator says of the tree's agents (SUBAGENT_STARTED).
        behind_tools = agent_tools(app.root_agent)
        self.agent_tools = {tool: agent.name for tool, agent in behind_tools.items()}
        self.descriptions = {
            agent.name: agent.description
            for agent in [*agents(app.root_agent), *behind_tools.values()]
        }
        self.usage = usage
        self.model_calls = model_calls
        self.surface_plugin = surfaces
        self.invocation = Invocation(client_tools, surfaces, self.surfaces)
        # Where runs' invocations run when not here: worker processes (docs/multicore.md).
        self.workers = workers

    def _runner(self, app: App, session_service: SessionService) -> Runner:
        return runner_for(app, session_service, self.services)

    def subagents(self) -> Subagents:
        """A run's view of the App's agent tree, for its translator."""
        return Subagents(self.descriptions, self.agent_tools)

    def take_usage(self, run_id: str) -> list[p.TokenUsage] | None:
        """The tokens a run's model calls used, one entry per model (None: none counted)."""
        if self.workers is not None and (counted := self.workers.take_usage(run_id)):
            return counted
        return self.usage.take(run_id) if self.usage else None

    async def close(self) -> None:
        """Closes what the agents opened: their toolsets' connections and MCP server
        processes (ADK's ``Runner.close``)."""
        await self.runner.close()
        if self.warm_up_runner is not None:
            await self.warm_up_runner.close()

    def take_model_failure(self, run_id: str) -> FailedCall | None:
        """The provider's failure that ended a model call of the run, if one did."""
        if self.workers is not None and (failed := self.workers.take_failure(run_id)):
            return failed
        return self.model_calls.take_failure(run_id) if self.model_calls else None

    async def model_stalled(self, run_id: str, timeout: float) -> Stall:
        """Returns once a model call of the run has sent nothing for ``timeout`` seconds;
        never without the plugin or with a timeout of 0. A run in a worker process is
        watched there, with the same timeout, and the worker says when."""
        if self.model_calls is None or timeout <= 0:
            await asyncio.Event().wait()
        assert self.model_calls is not None
        if self.workers is None:
            return await self.model_calls.stalled(run_id, timeout)
        there = self.workers.stalled(run_id)
        here = asyncio.ensure_future(self.model_calls.stalled(run_id, timeout))
        try:
            await asyncio.wait({here, there}, return_when="FIRST_COMPLETED")
        finally:
            here.cancel()
        return there.result() if there.done() else here.result()

    def forget_model_calls(self, run_id: str) -> None:
        if self.model_calls is not None:
            self.model_calls.forget(run_id)
        if self.workers is not None:
            self.workers.forget(run_id)

    async def session(self, user_id: str, thread_id: str) -> Session | None:
        return await self.sessions.get_session(
            app_name=self.app_name, user_id=user_id, session_id=thread_id
        )

    async def close_cut_off(
        self, thread_id: str, finishing: Finishing | None = None
    ) -> Unfinished | None:
        """Closes the run a dead process cut off on the thread; what is to go on, if anything
        (``finishing``: the run was the gateway's own, going on with a thread cut off before)."""
        assert self.root_agent is not None
        return await self.sessions.close_interrupted_thread(
            self.app_name, thread_id, author=self.root_agent.name, finishing=finishing
        )

    async def open_thread(
        self, user_id: str, thread_id: str, *, known: bool = False
    ) -> OpenedThread:
        """The thread for a run of ``user_id``: its owner and session, created if new;
        ``known``: one the hub has had in hand, read beside the store's writer."""
        return await self.sessions.open_thread(self.app_name, user_id, thread_id, known=known)

    async def forget_thread(self, user_id: str, thread_id: str) -> None:
        await self.sessions.delete_session(
            app_name=self.app_name, user_id=user_id, session_id=thread_id
        )

    async def thread_owner(self, thread_id: str) -> str | None:
        """The user a thread belongs to, or None for a thread nobody has used yet."""
        return await self.sessions.thread_owner(self.app_name, thread_id)

    async def thread_view(
        self,
        user_id: str,
        thread_id: str,
        max_bytes: int | None = None,
        *,
        before: int | None = None,
        open_calls: bool = True,
    ) -> tuple[ThreadPage, Session | None]:
        """The thread's latest messages (``max_bytes`` of them, older than ``before`` if
        given) and its session.

        The session carries the state and the calls still open (a window of one event
        reaches back to them), not the whole history: rebuilding every ADK event of a long
        thread is what made a reattach slow. Without ``open_calls`` it carries the state
        alone, and no event is read: a snapshot shows nothing else of it.
        """
        page = await self.thread_page(user_id, thread_id, max_bytes=max_bytes, before=before)
        session = await self.sessions.get_session(
            app_name=self.app_name,
            user_id=user_id,
            session_id=thread_id,
            config=GetSessionConfig(num_recent_events=1 if open_calls else 0),
        )
        return page, session

    async def thread_page(
        self,
        user_id: str,
        thread_id: str,
        *,
        max_bytes: int | None,
        before: int | None = None,
        limit: int | None = None,
    ) -> ThreadPage:
        """The thread's newest messages that fit ``max_bytes`` (and ``limit`` events); with
        ``before`` (a page's ``earlier``), those older than that page."""
        return await self.sessions.thread_page(
            self.app_name, user_id, thread_id, max_bytes=max_bytes, before=before, limit=limit
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
        rides: bool = False,
    ) -> asyncio.Future[object] | None:
        """Stores the text so far of a message being streamed; the future is its commit.
        ``rides``: its chunk goes out ahead of it, so nobody waits for it
        (``GroupCommit.submit``).

        None for an in-memory store: nothing in it outlives the process, so a chunk has
        nothing to wait for.
        """
        if config.in_memory(self.sessions.path):
            return None
        return self.sessions.save_streamed_text(
            app_name=self.app_name,
            user_id=user_id,
            session_id=thread_id,
            invocation_id=invocation_id,
            message_id=message_id,
            author=author,
            text=text,
            rides=rides,
        )

    def log_frames(
        self, user_id: str, thread_id: str, frames: list[LoggedFrame], *, rides: bool = False
    ) -> asyncio.Future[object]:
        """Stores frames of a thread's event log; the future is their commit. ``rides``:
        nobody waits for it (streamed text sent ahead of its commit)."""
        return self.sessions.append_frames(self.app_name, user_id, thread_id, frames, rides=rides)

    def hurry_writes(self) -> None:
        """Commits the writes that ride now: a caller is about to wait for them."""
        self.sessions.hurry()

    async def frames_after(self, user_id: str, thread_id: str, after: int) -> FrameLog:
        return await self.sessions.frames_after(self.app_name, user_id, thread_id, after)

    async def run_start(self, user_id: str, thread_id: str, run_id: str) -> int:
        return await self.sessions.run_start(self.app_name, user_id, thread_id, run_id)

    async def run_input(self, user_id: str, thread_id: str, run_id: str) -> StoredRun | None:
        """Where the input of ``run_id`` is stored in the thread, if the thread ran it."""
        return await self.sessions.run_input(self.app_name, user_id, thread_id, run_id)

    async def branches(self, user_id: str, thread_id: str) -> BranchTree:
        """The thread's branches (docs/branches.md); none for a thread without any."""
        return await self.sessions.branch_tree(self.app_name, user_id, thread_id)

    async def log_head(self, user_id: str, thread_id: str) -> int:
        return await self.sessions.log_head(self.app_name, user_id, thread_id)

    def trim_log(self, user_id: str, thread_id: str, max_bytes: int) -> asyncio.Future[object]:
        return self.sessions.trim_frames(self.app_name, user_id, thread_id, max_bytes)

    async def surfaces(self, user_id: str, thread_id: str) -> Surfaces:
        """The thread's A2UI surfaces as its user was shown them, from all of its messages."""
        page = await self.thread_page(user_id, thread_id, max_bytes=None)
        return Surfaces.of_messages(page.messages)

    async def append(self, session: Session, event: AdkEvent) -> None:
        await self.sessions.append_event(session, event)

    async def run(
        self,
        *,
        user_id: str,
        thread_id: str,
        session: Session | None,
        message: types.Content | None,
        metadata: dict[str, Any],
        client_tools: Mapping[str, ClientTool],
        state_delta: dict[str, Any] | None = None,
        catalogs: ClientCatalogs | None = None,
        surfaces: Surfaces | None = None,
        abort_signal: Any = None,
        invocation_id: str | None = None,
        input_queued: Callable[[asyncio.Future[object]], None] | None = None,
    ) -> AsyncGenerator[AdkEvent, None]:
        """Streams one ADK invocation; a message of function responses resumes a paused one,
        and so does ``invocation_id`` with no message (the answers are stored already).

        With ``input_queued``, ADK's append of ``message`` (or of ``state_delta``) goes
        ahead of its commit, which ``input_queued`` is handed (``SessionService.input_ahead``):
        the caller waits for it before it shows anything of the stream.

        ``session``, when given, is the thread as the caller just loaded it while holding
        it: the runner gets it as it is instead of reading it again. ``catalogs``: what the
        client renders of A2UI; ``surfaces``, the thread's, if the caller read them.
        ``state_delta``: what the client writes to the thread's state, stored by ADK on
        the event of ``message`` before the agent runs.
        """
        ahead = (
            self.sessions.input_ahead(self.app_name, user_id, thread_id, input_queued)
            if input_queued is not None
            else nullcontext()
        )
        # The warm-up's greetings meet the stand-in, when there is one: never the agent's code.
        runner = self.runner
        if user_id == WARM_UP_USER and self.warm_up_runner is not None:
            runner = self.warm_up_runner
        elif self.workers is not None and self.workers.to_worker():
            with ahead:  # the worker's appends are the main process's, stored here
                async for event in self.workers.run(
                    WorkerRun(
                        user_id=user_id,
                        thread_id=thread_id,
                        session=session or await self._session_to_hand(user_id, thread_id),
                        message=message,
                        invocation_id=invocation_id,
                        state_delta=state_delta,
                        metadata=metadata,
                        client_tools=client_tools,
                        catalogs=catalogs,
                        surfaces=surfaces,
                        read_surfaces=partial(self.surfaces, user_id, thread_id),
                        input_ahead=input_queued is not None,
                    ),
                    abort_signal,
                ):
                    yield event
            return
        timeline.mark("local")
        here = self.workers.here() if self.workers is not None else nullcontext()
        with here, self.sessions.handed_over(session) if session else nullcontext(), ahead:
            async with aclosing(
                self.invocation.run(
                    runner,
                    user_id=user_id,
                    thread_id=thread_id,
                    message=message,
                    metadata=metadata,
                    client_tools=client_tools,
                    state_delta=state_delta,
                    catalogs=catalogs,
                    surfaces=surfaces,
                    abort_signal=abort_signal,
                    invocation_id=invocation_id,
                )
            ) as events:
                async for event in events:
                    yield event

    async def _session_to_hand(self, user_id: str, thread_id: str) -> Session:
        """The thread's session for a worker's run, created if the thread has none yet."""
        found = await self.session(user_id, thread_id)
        if found is not None:
            return found
        return await self.sessions.create_session(
            app_name=self.app_name, user_id=user_id, session_id=thread_id
        )


async def open_session_service(settings: Settings, app_name: str, author: str) -> SessionService:
    """Opens the durable store and closes any run of the App a crash cut off; ``author``
    (the root agent's name) speaks the closing note of a thread that has no agent yet.

    On a database other gateway processes write too, an open run may be another process's
    live one: those are closed thread by thread once their process is known to be gone
    (``SessionService.close_interrupted_thread``), not here.
    """
    service = SessionService(
        settings.db,
        messages=event_messages,
        durability=settings.durability,
        history_window=settings.history_window,
    )
    await service.open()
    if await service.sole_writer():
        await service.close_interrupted(app_name, author=author)
    return service
