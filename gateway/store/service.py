"""ADK's session contract, and what the gateway adds to it, over the store's parts.

Optimistic concurrency as in ADK's SQL services: a session carries the revision it was
loaded at, and appending through an outdated copy raises ``StaleSessionError``, whichever
process appended first. Every write goes through the one writer (``group_commit``); every
read is one call into the database (the backend's ``reads``), decoded after it (``rows``,
``projection``).

In a cluster, a write about a thread this process holds the lease of goes out fenced by it
(``fence_of``, ``fenced_listeners``: ``gateway.store.thread_writes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, NoReturn, TypeVar, cast

from google.adk.events import Event
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions import _session_util
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from typing_extensions import override

from gateway.metrics import Metrics
from gateway.store import writes
from gateway.store.backend import Backend, Reads
from gateway.store.branches import NO_BRANCHES, BranchTree, Fork, Moved, Switch
from gateway.store.codec import (
    Damage,
    decoded_state,
    dump_messages,
    has_temp_state,
    load_state,
    merged_state,
)
from gateway.store.errors import StoreError
from gateway.store.frames import FrameLog, LoggedFrame
from gateway.store.group_commit import GroupCommit
from gateway.store.leases import Fence
from gateway.store.log_sizes import LogSizes
from gateway.store.messages import EventMessages, Message
from gateway.store.open import open_backend
from gateway.store.parsed import RecentlyParsed
from gateway.store.progress import RunProgress
from gateway.store.projection import ThreadPage, decoded_page, joined_across
from gateway.store.quarantine import Quarantine, QuarantinedThreadError
from gateway.store.recovery import OpenRun
from gateway.store.restarts import Restarts
from gateway.store.rows import StoredSession, decoded_session
from gateway.store.run_start import StoredRun, run_start, stored_run
from gateway.store.shared_writes import SharedWrites
from gateway.store.thread_index import ThreadFilter, ThreadPatch, ThreadRow, indexed_text
from gateway.store.thread_writes import ThreadWrites
from gateway.store.threads import OpenedThread, ThreadSummary, Usage

# The store logs under one name, whichever part of it speaks.
log = logging.getLogger("gateway.store")

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


class SessionService(BaseSessionService):
    """ADK's session contract on a SQLite file or a PostgreSQL database (``db``).

    A SQLite file has one writing process (``open`` takes a lock that says so); a
    PostgreSQL database may have several, and every rule holds in its SQL (``shared``).
    Other processes may read either (``read_only=True``), e.g. operator commands.

    ``messages`` is the projection of an event into the AG-UI messages its row keeps
    (``gateway.store.messages``); the gateway gives ``history.event_messages``. Every
    caller names it, read-only ones too (which never use it): what a store writes is
    never left to a default.
    """

    def __init__(
        self,
        path: str,
        *,
        messages: EventMessages,
        durability: str = "normal",
        history_window: int = 200,
        read_only: bool = False,
    ) -> None:
        if durability not in ("normal", "full"):
            raise ValueError(f"durability must be 'normal' or 'full', not {durability!r}")
        if history_window < 1:
            raise ValueError(f"history_window must be at least 1, not {history_window}")
        self.path = path  # the --db value: a SQLite file, or a PostgreSQL URL
        self.durability = durability
        self.history_window = history_window
        self.read_only = read_only
        self._messages = messages
        self._backend: Backend | None = None
        # The one writer, and the fences a cluster puts on the writes of its threads
        # (``gateway.store.thread_writes``): every write about a thread goes through its
        # ``submit``; ``fence_of`` and ``fenced_listeners`` are its own, forwarded.
        self._writes = ThreadWrites(read_only=read_only)
        # The text so far of a message being streamed, saved as the thread's other writes
        # are (``ThreadWrites.save_streamed_text``).
        self.save_streamed_text = self._writes.save_streamed_text
        # Sessions a caller loaded and handed over for the next plain get_session (see
        # handed_over), by (app, user, session id).
        self._handed_over: dict[tuple[str, str, str], Session] = {}
        # Sessions whose next append, the input's, goes ahead of its commit: to whom its
        # commit is handed (see input_ahead), by the same key.
        self._ahead: dict[tuple[str, str, str], Callable[[asyncio.Future[object]], None]] = {}
        # Sessions whose appends wait for each other (see serialised), by the same key.
        self._serialised: dict[tuple[str, str, str], SharedWrites] = {}
        # Closes the runs a crash cut off (``gateway.store.restarts``): ``close_interrupted``
        # at a restart, ``close_interrupted_thread`` after a takeover or a worker's death,
        # and the runs a restart closed, with what is to go on after each (``cut_off``).
        self.restarts = Restarts(self)
        self.close_interrupted = self.restarts.close_interrupted
        self.close_interrupted_thread = self.restarts.close_interrupted_thread
        self.cut_off = self.restarts.cut_off
        # Called with can_commit whenever it changes.
        self.health_listeners: list[Callable[[bool], None]] = []
        # Whether a session read keeps the texts of its events, for a worker's run
        # (``gateway.store.session_json``); a gateway with workers says so: nothing else reads them.
        self.keeps_texts = False
        # Events appended from the text their row holds, for the next read of those rows.
        self.recently_parsed = RecentlyParsed()
        # The sizes of threads' logs this process alone writes: a trim they fit is spared.
        # Made by open(), which learns whether other processes write the database.
        self.log_sizes: LogSizes | None = None

    # --- lifecycle ----------------------------------------------------------------------

    async def open(self) -> None:
        """Connects, checks the database and migrates it; raises StoreError if it is unusable."""
        self._backend = await open_backend(
            self.path, durability=self.durability, read_only=self.read_only, messages=self._messages
        )
        self.log_sizes = LogSizes(shared=self._backend.shared)
        if not self.read_only:
            self._writes.writer = GroupCommit(self._backend.commit, self._health_changed)

    async def close(self) -> None:
        """Commits every queued write, then closes the connection and lets go of the file."""
        if self._writes.writer is not None:
            await self._writes.writer.close()
            self._writes.writer = None
        if self._backend is not None:
            backend, self._backend = self._backend, None
            await backend.close(writable=not self.read_only)

    async def sole_writer(self) -> bool:
        """Whether no other gateway process writes the database now (always, on SQLite):
        then every run left open was cut off by a crash (``close_interrupted``)."""
        if self._backend is None:
            raise StoreError("the session store is not open")
        return await self._backend.sole_writer()

    @property
    def shared(self) -> bool:
        """Whether other processes may write the same database (PostgreSQL): then a run
        left open is not known to be cut off until its process is known to be gone."""
        return self._backend is not None and self._backend.shared

    @property
    def can_commit(self) -> bool:
        """False from a commit that failed until one succeeds (the writer keeps trying)."""
        writer = self._writes.writer
        return writer.can_commit if writer is not None else True

    @property
    def fence_of(self) -> Callable[[str], Fence | None]:
        """The lease this process holds a thread under, if any (the cluster's): the thread's
        writes are fenced by it (``gateway.store.thread_writes``). None, unless set."""
        return self._writes.fence_of

    @fence_of.setter
    def fence_of(self, fence_of: Callable[[str], Fence | None]) -> None:
        self._writes.fence_of = fence_of

    @property
    def fenced_listeners(self) -> list[Callable[[Fence], None]]:
        """Told once of each fence the database refused: another process has the thread."""
        return self._writes.fenced_listeners

    def _health_changed(self, can_commit: bool) -> None:
        for listener in self.health_listeners:
            listener(can_commit)

    def count_into(self, metrics: Metrics) -> None:
        """Its writer's transactions and queue, and the owed replies its closes of cut-off
        runs give up on, are counted into ``metrics``."""
        self.restarts.metrics = metrics
        if (writer := self._writes.writer) is not None:
            writer.metrics = metrics
            metrics.watch_store_queue(writer.queued)

    @property
    def commits(self) -> int:
        """Transactions the writer committed since open(): fewer than writes under load."""
        writer = self._writes.writer
        return writer.commits if writer is not None else 0

    @override
    async def flush(self) -> None:
        if self._writes.writer is not None:
            self._writes.writer.hurry()
            await self._writes.writer.drained()

    def hurry(self) -> None:
        """Commits the writes that ride (streamed text sent ahead of its commit) now, for a
        caller that is about to wait for them (``GroupCommit.hurry``)."""
        if self._writes.writer is not None:
            self._writes.writer.hurry()

    # --- ADK's contract -----------------------------------------------------------------

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        session_id = (session_id.strip() if session_id else None) or platform_uuid.new_uuid()
        now = platform_time.get_time()
        deltas = _session_util.extract_json_safe_state_delta(state or {})
        create = writes.CreateSession(app_name, user_id, session_id, deltas, now)
        return create.session(await self._write(create))

    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """Loads the state and a window of recent events.

        Without a config the window is ``history_window`` events; a config's
        ``num_recent_events`` replaces it (None: every event). A positive window always
        reaches back to a long-running call still waiting for its response, from the start
        of its invocation. ``after_timestamp`` then filters as ADK's in-memory service does.
        A session handed over (see ``handed_over``) is returned as it is, once.
        """
        session_id = session_id.strip() if session_id else session_id
        window: int | None = self.history_window
        after = None
        if config is not None:
            window, after = config.num_recent_events, config.after_timestamp
        elif (handed := self._handed_over.pop((app_name, user_id, session_id), None)) is not None:
            return handed
        stored = await self._read(
            partial(
                self._reads.load_session,
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                window=window,
                after=after,
            )
        )
        return None if stored is None else await self._session_of(stored)

    @override
    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The sessions without their events; a quarantined one is left out."""
        listing = await self._read(
            partial(self._reads.list_sessions, app_name=app_name, user_id=user_id)
        )
        app_state = load_state(listing.app_state)
        sessions = []
        for owner, session_id, state_text, update_time, revision in listing.rows:
            state = decoded_state(state_text)
            if isinstance(state, Damage):
                await self._set_aside(app_name, owner, session_id, state)
                continue
            user_state = load_state(listing.user_states.get(owner))
            session = Session(
                app_name=app_name,
                user_id=owner,
                id=session_id,
                state=merged_state(state, app_state, user_state),
                last_update_time=update_time,
            )
            session._storage_update_marker = str(revision)
            sessions.append(session)
        return ListSessionsResponse(sessions=sessions)

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        session_id = session_id.strip() if session_id else session_id
        await self._writes.submit(session_id, writes.DeleteSession(app_name, user_id, session_id))

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self._read(
            partial(self._reads.scope_state, app_name=app_name, user_id=user_id)
        )

    @override
    async def append_event(
        self, session: Session, event: Event, *, parsed_from: str | None = None
    ) -> Event:
        """Commits the event, then adds it to ``session``; partial events are not stored.

        The input a run was started with may go ahead of its commit (``input_ahead``).
        ``parsed_from``: ADK's JSON the caller parsed ``event`` from (a worker's append),
        stored as it is where it is what the row would hold (``_append_write``).
        """
        if event.partial:
            return event
        key = (session.app_name, session.user_id, session.id)
        queued = self._ahead.pop(key, None)
        # The input's message or state edit; the first append not the user's: none came.
        if queued is not None and event.author == "user":
            return self._append_ahead(session, event, queued, parsed_from)
        shared = self._serialised.get(key)
        if shared is None:
            return await self._append_event(session, event, parsed_from)
        async with shared.lock:
            shared.stamped(event)  # it may change the event: its text is dumped again
            return await self._append_event(session, event)

    async def _append_event(
        self, session: Session, event: Event, parsed_from: str | None = None
    ) -> Event:
        write = self._append_write(session, event, parsed_from)

        def commit_to_session(revision: object) -> None:
            session._storage_update_marker = str(revision)
            session.last_update_time = event.timestamp
            self._commit_event_to_session(session, event)
            self._parsed_from(write, parsed_from, event)

        await self._writes.submit(session.id, write, commit_to_session)
        return event

    def _parsed_from(
        self, write: writes.AppendEvent, parsed_from: str | None, event: Event
    ) -> None:
        """Keeps ``event`` for the next read of its row, if the row is the text it was
        parsed from (``gateway.store.parsed``)."""
        if parsed_from is not None and write.data is parsed_from:
            self.recently_parsed.keep(parsed_from, event)

    def _append_ahead(
        self,
        session: Session,
        event: Event,
        queued: Callable[[asyncio.Future[object]], None],
        parsed_from: str | None,
    ) -> Event:
        """Queues the event and adds it to ``session`` at once, as its commit will: the
        session's next append carries the revision this one makes (``revision_after``).
        ``queued`` is handed the commit, which the caller waits for before it shows
        anything that follows the event."""
        write = self._append_write(session, event, parsed_from)
        if (revision := write.revision_after()) is not None:
            session._storage_update_marker = str(revision)
        session.last_update_time = event.timestamp
        self._commit_event_to_session(session, event)

        def commit_to_session(revision: object) -> None:
            # The store's revision: a copy loaded without one learns it only here.
            session._storage_update_marker = str(revision)
            self._parsed_from(write, parsed_from, event)

        # Urgent: the run's first text waits for this commit (``GroupCommit.submit``).
        queued(self._writes.submit(session.id, write, commit_to_session, urgent=True))
        return event

    def _append_write(
        self, session: Session, event: Event, parsed_from: str | None = None
    ) -> writes.AppendEvent:
        """The write that appends ``event`` to ``session`` as the session stands.

        The row holds ADK's dump of the event, less its ``temp:`` state. An event parsed
        from such a dump (``parsed_from``) is stored as that text, unless it had ``temp:``
        state to leave out: the text parsed into this event, so the row reads back as
        it, and dumping it again would only give the same text at the same cost as the
        parse (``tests/store/test_parsed_appends.py`` checks both).
        """
        if parsed_from is not None and has_temp_state(event):
            parsed_from = None  # the row leaves out what the text holds
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        marker = session._storage_update_marker
        messages = dump_messages(event, self._messages)
        return writes.AppendEvent(
            app_name=session.app_name,
            user_id=session.user_id,
            session_id=session.id,
            loaded_revision=int(marker) if marker is not None else None,
            loaded_update_time=session.last_update_time,
            event_id=event.id,
            invocation_id=event.invocation_id,
            author=event.author,
            timestamp=event.timestamp,
            data=parsed_from
            if parsed_from is not None
            else event.model_dump_json(exclude_none=True, by_alias=True),
            messages=messages,
            deltas=_session_util.extract_json_safe_state_delta(event.actions.state_delta)
            if event.actions and event.actions.state_delta
            else writes.NO_DELTAS,
            progress=RunProgress.of(event),
            indexed=indexed_text(messages),
        )

    # --- gateway additions --------------------------------------------------------------

    async def open_thread(
        self, app_name: str, user_id: str, session_id: str, *, known: bool = False
    ) -> OpenedThread:
        """The thread as a run of ``user_id`` needs it; created for that user if it is new.

        The session is loaded as get_session does without a config. Another user's thread
        gives its owner and no session.

        ``known``: the caller has had the thread in hand (a run's reply to the browser, the
        next message): it is likely there and the user's, so it is read beside the writer
        (``Reads.read_thread``), at once on the loop's thread where the backend can
        (``Backend.read``'s ``now``), instead of taking a place in the writer's queue, where
        it would wait for the commit in progress and then for its own. A read sees every
        commit finished before it, not the writes still queued: the caller must know that
        none of the thread's is (the hub's runs end only once their writes are committed).
        Not found so, it is opened through the writer.
        """
        session_id = session_id.strip()
        if known:
            read = partial(
                self._reads.read_thread,
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                window=self.history_window,
            )
            if (found := await self._read(read, now=True)) is not None:
                stored, usage, head = found
                session = await self._session_of(stored)
                return OpenedThread(user_id, session, created=False, usage=usage, log_head=head)
        opened = cast(
            OpenedThread | tuple[StoredSession, Usage, int],
            await self._write(
                writes.OpenThread(
                    app_name,
                    user_id,
                    session_id,
                    self.history_window,
                    platform_time.get_time(),
                )
            ),
        )
        if isinstance(opened, OpenedThread):
            if opened.created:
                self._log_sizes().created((app_name, session_id))
            return opened
        stored, usage, head = opened
        session = await self._session_of(stored)
        return OpenedThread(stored.user_id, session, created=False, usage=usage, log_head=head)

    @contextlib.contextmanager
    def handed_over(self, session: Session) -> Iterator[None]:
        """Within the block, the next get_session of ``session`` without a config returns it.

        A run loads its thread to plan, then ADK's runner asks for the same session: the
        hand-over spares a second read of what was just read. The caller's hold on the
        thread (one run at a time) is what keeps the object current.
        """
        with _kept(self._handed_over, (session.app_name, session.user_id, session.id), session):
            yield

    @contextlib.contextmanager
    def input_ahead(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        queued: Callable[[asyncio.Future[object]], None],
    ) -> Iterator[None]:
        """Within the block, the next append to the session, if it is the user's (the input
        a run was started with: ADK's runner stores it before it calls the model), returns
        once it is queued, not committed, and ``queued`` is handed its commit.

        So the model is called while the input commits, where it waited for that commit
        (under load, the writer's commit in progress and then its own). The caller keeps
        the promise that an input is stored before anything answers it: it waits for the
        commit before it sends anything of the run that follows the input. Every later
        append is queued behind it, and the store commits in order, so an event stored
        after the input is never stored without it.
        """
        with _kept(self._ahead, (app_name, user_id, session_id), queued):
            yield

    @contextlib.contextmanager
    def serialised(self, session: Session) -> Iterator[SharedWrites]:
        """Within the block, appends to ``session`` wait for each other. An append carries
        the revision its session object was at, so two in flight at once carry the same
        one and the store refuses the second as stale: a run with several writers (a live
        turn: ADK's runner, its queue's sender, the browser's results) serialises them
        (``gateway.store.shared_writes``)."""
        key = (session.app_name, session.user_id, session.id)
        self._serialised[key] = shared = SharedWrites()
        try:
            yield shared
        finally:
            self._serialised.pop(key, None)

    async def open_runs(self, app_name: str, thread_id: str | None = None) -> list[OpenRun]:
        """The runs left open on the app's threads (every one, or ``thread_id``'s): a
        crash's, once no process runs them (``gateway.store.restarts``)."""
        session_ids = (thread_id,) if thread_id is not None else None
        return await self._read(
            partial(self._reads.open_runs, app_name=app_name, session_ids=session_ids)
        )

    async def forget_leftover_texts(self, app_name: str, thread_id: str | None = None) -> None:
        """Deletes the streamed texts the app's runs left (every thread's, or ``thread_id``'s,
        fenced as the thread's other writes are), once a restart has used them."""
        if thread_id is None:
            await self._write(writes.ForgetLeftoverTexts(app_name))
        else:
            await self._writes.submit(thread_id, writes.ForgetLeftoverTexts(app_name, (thread_id,)))

    async def thread_owner(self, app_name: str, session_id: str) -> str | None:
        """The user a thread belongs to, whoever asks; None if no such thread exists."""
        return await self._read(
            partial(self._reads.thread_owner, app_name=app_name, session_id=session_id)
        )

    async def thread_messages(
        self, app_name: str, user_id: str, session_id: str
    ) -> tuple[list[Message], str | None]:
        """The whole thread as AG-UI messages, and the id of its latest stored event.

        The messages are the projection's of every event, joined as
        ``history.messages_snapshot`` joins them, with no window, read in one go without
        rebuilding ADK events. The event id lets a caller tell whether a run stored an
        event since. An unknown thread gives ``([], None)``.
        """
        page = await self.thread_page(app_name, user_id, session_id)
        return page.messages, page.latest

    async def thread_page(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        max_bytes: int | None = None,
        before: int | None = None,
        limit: int | None = None,
    ) -> ThreadPage:
        """The thread's messages as ``thread_messages`` gives them, newest last, within bounds.

        ``max_bytes`` keeps the newest events whose stored messages fit in that many bytes
        (the newest one always), so a snapshot of a long thread stays small; ``before`` (a
        page's ``earlier``) reads only what is older than that page; ``limit`` keeps at most
        that many of the newest events' messages. A tool result whose call was left out is
        left out too, and so is a reply cut off before a word that a later reply of its turn
        follows, on the page after this one too (``projection.joined``).
        """
        session_id = session_id.strip() if session_id else session_id
        rows = partial(
            self._reads.thread_messages, app_name=app_name, user_id=user_id, session_id=session_id
        )
        stored = await self._read(partial(rows, max_bytes=max_bytes, before=before, limit=limit))
        if stored is None:
            return ThreadPage([], None, None)
        if stored.quarantine is not None:
            raise QuarantinedThreadError(stored.quarantine)
        page = decoded_page(stored)
        if isinstance(page, Damage):
            await self._quarantine(app_name, user_id, session_id, page)
        rows_from = partial(
            self._reads.messages_from, app_name=app_name, user_id=user_id, session_id=session_id
        )
        return await joined_across(
            page,
            before,
            lambda start, most: self._read(partial(rows_from, start=start, limit=most)),
        )

    async def threads(
        self, app_name: str, *, user_id: str | None = None, quarantined_only: bool = False
    ) -> list[ThreadSummary]:
        """The threads of the app (or of one user), least recently updated first.

        Nothing is decoded: a listing shows the quarantine each thread has on record.
        """
        return await self._read(
            partial(
                self._reads.thread_summaries,
                app_name=app_name,
                user_id=user_id,
                quarantined_only=quarantined_only,
            )
        )

    # --- the thread index (``gateway.store.thread_index``) --------------------------------

    async def thread_rows(
        self, app_name: str, user_id: str, listing: ThreadFilter
    ) -> list[ThreadRow]:
        """A page of the user's threads as a listing shows them (pinned, then newest)."""
        return await self._read(
            partial(self._reads.thread_rows, app_name=app_name, user_id=user_id, listing=listing)
        )

    async def thread_row(self, app_name: str, user_id: str, session_id: str) -> ThreadRow | None:
        """One thread of the user as a listing shows it; None if the user has no such thread."""
        return await self._read(
            partial(
                self._reads.thread_row, app_name=app_name, user_id=user_id, session_id=session_id
            )
        )

    async def patch_thread(
        self, app_name: str, user_id: str, session_id: str, patch: ThreadPatch
    ) -> ThreadRow | None:
        """Renames, archives, pins or sets the metadata of a thread of the user; the thread
        after it, or None if the user has no such thread."""
        written = await self._write(writes.PatchThread(app_name, user_id, session_id, patch))
        return cast(ThreadRow | None, written)

    async def apps(self) -> list[str]:
        """The names of the Apps that have threads here, in order."""
        return await self._read(self._reads.app_names)

    # --- the event log (``gateway.store.frames``) ----------------------------------------

    def append_frames(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        frames: list[LoggedFrame],
        *,
        rides: bool = False,
    ) -> asyncio.Future[object]:
        """Queues frames of a thread's log; resolves with the last one's number once
        committed.

        Not a coroutine, as ``save_streamed_text``: the caller holds the frames' deliveries
        on the future, and frames queued together for one thread cost one write. ``rides``:
        nobody waits for them (streamed text sent ahead): they commit with the next write
        (``GroupCommit.submit``).
        """
        write = writes.AppendFrames(app_name, user_id, session_id, tuple(frames))
        self._log_sizes().grew((app_name, session_id), frames)
        return self._writes.submit(
            session_id, write, extends=("frames", app_name, user_id, session_id), rides=rides
        )

    async def frames_after(
        self, app_name: str, user_id: str, session_id: str, after: int, limit: int | None = None
    ) -> FrameLog:
        """The committed frames of a thread's log numbered above ``after``, oldest first
        (the first ``limit`` of them)."""
        return await self._read(
            partial(
                self._reads.frames_after,
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                after=after,
                limit=limit,
            )
        )

    async def run_start(self, app_name: str, user_id: str, session_id: str, run_id: str) -> int:
        """The seq of the thread's first stored event of ``run_id``, or past its newest event
        when the run has stored none yet: a ``thread_page`` before it is the thread as it
        was before the run (``run_start``)."""
        rows = await self._read(
            partial(
                self._reads.invocation_rows,
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
            )
        )
        return run_start(rows, run_id)

    async def run_input(
        self, app_name: str, user_id: str, session_id: str, run_id: str
    ) -> StoredRun | None:
        """The thread's first stored event of ``run_id`` that a user's input began (its
        message, its answers); None if the thread stored no such run."""
        rows = await self._read(
            partial(
                self._reads.run_rows,
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
            )
        )
        return stored_run(rows, run_id)

    async def move_branch(self, move: Fork | Switch) -> Moved:
        """Forks or switches a thread's branches (``gateway.store.branches``), fenced as
        the thread's other writes are; raises ``BranchRefused`` for a move it cannot take."""
        return cast(Moved, await self._writes.submit(move.session_id, move))

    async def branch_tree(self, app_name: str, user_id: str, session_id: str) -> BranchTree:
        """A thread's branches (none for a thread that has none, or does not exist)."""
        tree = await self._read(
            partial(
                self._reads.branch_tree,
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
            )
        )
        return tree or NO_BRANCHES

    async def log_head(self, app_name: str, user_id: str, session_id: str) -> int:
        """The number of the last committed frame of a thread's log; 0 for none."""
        return await self._read(
            partial(self._reads.log_head, app_name=app_name, user_id=user_id, session_id=session_id)
        )

    def trim_frames(
        self, app_name: str, user_id: str, session_id: str, max_bytes: int
    ) -> asyncio.Future[object]:
        """Queues the trim of a thread's log to its newest ``max_bytes`` (and newest frame);
        none where the log is known to fit (``gateway.store.log_sizes``)."""
        trim = writes.TrimFrames(app_name, user_id, session_id, max_bytes)
        return self._log_sizes().trim(
            (app_name, session_id), trim, partial(self._writes.submit, session_id)
        )

    # --- internals ----------------------------------------------------------------------

    async def _session_of(self, stored: StoredSession) -> Session:
        """The session its rows make; raises QuarantinedThreadError if they cannot."""
        if stored.quarantine is not None:
            raise QuarantinedThreadError(stored.quarantine)
        session = decoded_session(stored, keep_texts=self.keeps_texts, parsed=self.recently_parsed)
        if isinstance(session, Damage):
            await self._quarantine(stored.app_name, stored.user_id, stored.session_id, session)
        return session

    async def _quarantine(
        self, app_name: str, user_id: str, session_id: str, damage: Damage
    ) -> NoReturn:
        quarantine = await self._set_aside(app_name, user_id, session_id, damage)
        raise QuarantinedThreadError(quarantine)

    async def _set_aside(
        self, app_name: str, user_id: str, session_id: str, damage: Damage
    ) -> Quarantine:
        """Logs a thread found damaged and records its quarantine, if the store can write."""
        quarantine = Quarantine(
            session_id, user_id, damage.seq, damage.column, damage.reason, time.time()
        )
        quarantine.report("other threads are served")
        if self._writes.writer is None:
            return quarantine  # read-only: the gateway that owns the file records it
        # If the store cannot commit (that is logged), the next read finds the damage again.
        with contextlib.suppress(StoreError):
            await self._write(writes.SetAside(app_name, user_id, session_id, damage, quarantine.at))
        return quarantine

    def _log_sizes(self) -> LogSizes:
        if self.log_sizes is None:
            raise StoreError("the session store is not open")
        return self.log_sizes

    @property
    def _reads(self) -> Reads:
        if self._backend is None:
            raise StoreError("the session store is not open")
        return self._backend.reads

    async def _read(self, fn: Callable[[Any], T], *, now: bool = False) -> T:
        if self._backend is None:
            raise StoreError("the session store is not open")
        return await self._backend.read(fn, now=now)

    async def _write(self, write: writes.Write) -> object:
        return await self._writes.writer_or_raise().submit(write)

    def submit_cluster(self, write: writes.ReleaseLeases) -> asyncio.Future[object]:
        """Queues the cluster's write behind every write queued before it (a run's last
        frames), to commit in the same transaction or a later one."""
        return self._writes.writer_or_raise().submit(write)


@contextlib.contextmanager
def _kept(held: dict[K, V], key: K, value: V) -> Iterator[None]:
    """Within the block, ``held[key]`` is ``value``; after it, gone, unless another block
    put its own there meanwhile."""
    held[key] = value
    try:
        yield
    finally:
        if held.get(key) is value:
            del held[key]
