"""POST /invocations: one RunAgentInput in, one SSE stream of its run out (the AgentCore door).

A request may name the client instance it speaks for (``?clientId=C``, as on /ws): the
client calls of its run are that instance's, and it can come back to the run after a
reload through ``GET /invocations?threadId=T&clientId=C`` (``gateway.doors.sse_replay``).
So the request's end means two things. A stock client names none and cannot come back:
its aborted request (a browser's Stop, and a reload too) stops the run as a cancel does,
unless ``GATEWAY_SSE_ABORT=keep``. A client that names itself stops a run with the explicit
cancel (``forwardedProps.gateway.cancel``), so its aborted request is a reload or a drop,
and the run goes on for it to follow again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from functools import partial

from gateway import logs, tracing
from gateway import wire as p
from gateway.auth import query_param
from gateway.doors.access import Access
from gateway.doors.asgi import Receive, Scope, Send, challenge, header
from gateway.doors.body import RequestBody, http_status
from gateway.doors.send_queue import Frame, Outgoing
from gateway.doors.shared import Shared
from gateway.hub import dedupe, eventlog
from gateway.hub.dedupe import Duplicate
from gateway.hub.threads import Run
from gateway.wire import versions
from gateway.wire.notices import nothing_to_cancel, notice, standalone

log = logging.getLogger(__name__)


class QueueSubscriber:
    """Collects a run's events for one consumer, without blocking the run.

    A consumer that falls more than ``limit_bytes`` behind is cut off: its queue ends with
    None and takes nothing more.
    """

    def __init__(self, limit_bytes: int, client: str | None = None) -> None:
        self.queue: Outgoing[p.Event | None] = Outgoing(limit_bytes)
        # The client instance it speaks for (``?clientId=``); None: only itself.
        self.client = client

    def deliver(self, event: p.Event) -> None:
        if self.queue.offer(event):
            log.warning("cutting off a stream that fell %d bytes behind", self.queue.size)


class Invocation:
    """POST /invocations: one RunAgentInput in, one SSE stream of its run out."""

    def __init__(self, shared: Shared, scope: Scope, receive: Receive, send: Send) -> None:
        self.hub, self.settings, self.rates = shared.hub, shared.settings, shared.rates
        self.access = Access(shared.auth, shared.hub.audit, scope, "sse", "run", shared.hub.metrics)
        self.scope, self.receive, self.send = scope, receive, send

    async def serve(self) -> None:
        subscriber = QueueSubscriber(self.settings.send_buffer_bytes)
        body = RequestBody(
            self.scope,
            self.receive,
            max_bytes=self.settings.max_frame_bytes,
            timeout=self.settings.body_timeout,
        )
        run_input: p.RunAgentInput | None = None
        left: asyncio.Task[None] | None = None
        try:
            try:
                user = (await self.access.identify()).user
                logs.bind(user=user)
                self.rates.check(user)
                subscriber.client = client_instance(self.scope)
                run_input = p.decode_input(await body.json())
                logs.bind(thread=run_input.thread_id, run=run_input.run_id)
                subscriber.queue.dialect, run_input = versions.negotiate(run_input)
                if _asks_to_cancel(run_input):
                    await self._cancel(user, run_input.thread_id, subscriber.queue.dialect)
                    return
                # The body is read: from now on ``receive`` only says when the client leaves.
                left = asyncio.create_task(disconnect(self.receive), name="sse client")
                run = await self._start(user, run_input, subscriber, left)
            except Duplicate as duplicate:
                # Sent again, not run again: told so; GET /invocations?threadId= follows it.
                dedupe.noted(duplicate, self.hub.metrics)
                await self._stream(dedupe.told(duplicate, started=False), subscriber.queue.dialect)
                return
            except p.GatewayError as error:
                if run_input is not None:
                    self.access.record_input(run_input, error)
                await self._refuse(error, body)
                return
            except Exception:
                await self._refuse(p.unexpected("a POST /invocations"), body)
                return
            if run is not None:
                self.access.record_input(run_input, None, run.overruled)
                await self._follow(run, subscriber, left)
        finally:
            if left is not None:
                left.cancel()
            # A request follows one run: it stops watching the thread when its stream ends.
            self.hub.leave(subscriber)
            subscriber.queue.clear()

    async def _start(
        self,
        user: str,
        run_input: p.RunAgentInput,
        subscriber: QueueSubscriber,
        left: asyncio.Task[None],
    ) -> Run | None:
        """The run started; None if the client left while its input waited for the thread
        (``gateway.hub.busy``)."""
        tracing.asked_from(header(self.scope, b"traceparent"), run_input.forwarded_props)
        starting = asyncio.ensure_future(
            self.hub.start(user, run_input, subscriber, self.access.caller)
        )
        await asyncio.wait({starting, left}, return_when=asyncio.FIRST_COMPLETED)
        if starting.done():
            return starting.result()
        starting.cancel()
        await asyncio.wait({starting})
        return None

    async def _follow(
        self, run: Run, subscriber: QueueSubscriber, left: asyncio.Task[None]
    ) -> None:
        """Streams the run; a client that leaves mid-run ends the stream (and the run)."""
        left.add_done_callback(partial(self._client_left, run, subscriber))
        try:
            await stream_start(self.send, 200)
            while True:
                frames = await subscriber.queue.batch()
                last = frames[-1][0]
                end = last is None or isinstance(last, p.RunFinished | p.RunError)
                await stream(self.send, frames, more=not end)
                if end:
                    return
        except Exception:  # a server whose send fails once the client is gone
            self._client_left(run, subscriber)

    def _client_left(
        self, run: Run, subscriber: QueueSubscriber, left: asyncio.Task[None] | None = None
    ) -> None:
        """Ends the stream; a stock SSE client cannot come back to its run, so by default
        the run stops with it. A client that named itself can: its run goes on."""
        if left is not None and left.cancelled():
            return  # the stream ended first
        subscriber.queue.end()
        if subscriber.client is not None:
            log.info("the client of %s went away; it may come back (?clientId=)", run)
        elif self.settings.sse_abort == "cancel" and self.hub.stop_run(run):
            log.info("the client of %s went away; stopping it (GATEWAY_SSE_ABORT=cancel)", run)
            self.access.record_cancel(run.thread.thread_id, True)

    async def _refuse(self, error: p.GatewayError, body: RequestBody) -> None:
        # A refused body is read to its end first, or the answer closes the connection.
        keep_alive = await body.settle()
        await stream_start(self.send, http_status(error), challenge(error), close=not keep_alive)
        await stream(self.send, [(None, p.encode(error.to_event()))], more=False)

    async def _cancel(self, user: str, thread_id: str, dialect: versions.Dialect) -> None:
        """The SSE door's cancel: a short stream saying what happened."""
        try:
            cancelled = await self.hub.cancel(user, thread_id)
        except p.GatewayError as error:  # another user's thread, or its process unreachable
            self.access.record_cancel(thread_id, False, error)
            await stream_start(self.send, http_status(error))
            await stream(self.send, [(None, p.encode(error.to_event()))], more=False)
            return
        self.access.record_cancel(thread_id, cancelled)
        if cancelled:
            said = notice("CANCEL_REQUESTED", f"The run on thread {thread_id!r} is being stopped.")
            events = standalone(thread_id, [said])
        else:
            events = nothing_to_cancel(thread_id)
        await self._stream(events, dialect)

    async def _stream(self, events: list[p.Event], dialect: versions.Dialect) -> None:
        """A short stream of ``events``, whole: a notice's answer."""
        await stream_start(self.send, 200)
        encoded = [frame for event in events for frame in versions.encoded(event, dialect)]
        await stream(self.send, encoded, more=False)


async def stream_start(
    send: Send, status: int, extra: list[tuple[bytes, bytes]] | None = None, *, close: bool = False
) -> None:
    """Starts an SSE response."""
    headers = [
        (b"content-type", b"text/event-stream"),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
        *(extra or ()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})


async def stream(send: Send, frames: Sequence[Frame[p.Event | None]], *, more: bool) -> None:
    """Sends SSE frames: ``data:`` lines, after an ``id:`` line (the event's number in its
    thread's log, ``gateway.hub.eventlog``) for a logged event, which EventSource sends back
    as ``Last-Event-ID`` when it reconnects."""
    parts = []
    for event, data in frames:
        if not data:
            continue
        if event is not None and (seq := eventlog.seq_of(event)) is not None:
            parts.append(b"id: %d\n" % seq)
        parts.append(b"data: " + data + b"\n\n")
    await send({"type": "http.response.body", "body": b"".join(parts), "more_body": more})


def client_instance(scope: Scope) -> str | None:
    """The request's ``?clientId=``, checked as /ws checks it; None if it names none."""
    sent = query_param(scope, "clientId")
    return p.client_instance(sent) if sent is not None else None


async def disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _asks_to_cancel(run_input: p.RunAgentInput) -> bool:
    """``forwardedProps: {"gateway": {"cancel": true}}`` is the SSE door's cancel frame."""
    return run_input.forwarded("gateway").get("cancel") is True
