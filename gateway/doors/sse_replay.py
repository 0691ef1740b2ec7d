"""GET /invocations?threadId=T: a thread's stream, resumable by ``Last-Event-ID``.

An extension of AG-UI's SSE binding, which defines no resumption. A client that lost a
POST /invocations stream (a reload, a dropped connection) opens this with the last ``id:``
it saw, as ``Last-Event-ID`` (what EventSource sends when it reconnects) or ``?after=``:
it is sent the thread's events after that number from the log (``gateway.hub.eventlog``),
then the run in progress live, and the stream ends once the thread is idle. Without a
cursor, or with one the log cannot answer, it gets the snapshots a /ws reattach sends.
It watches, and leaving stops nothing. A request that names the client instance whose
input started the run (``?clientId=C``) is that run's executor from then on, as a /ws
reattach is: the calls made before it came are named in ``CUSTOM gateway.executor``, and
later ones come to it live.
"""

from __future__ import annotations

import asyncio
import contextlib

from gateway import logs
from gateway import wire as p
from gateway.auth import query_param
from gateway.doors.access import Access
from gateway.doors.asgi import Receive, Scope, Send, header, refuse
from gateway.doors.shared import Shared
from gateway.doors.sse import (
    QueueSubscriber,
    client_instance,
    disconnect,
    stream,
    stream_start,
)
from gateway.hub.threads import Run


class Resume:
    """GET /invocations?threadId=T[&after=N][&clientId=C], or with ``Last-Event-ID: N``."""

    def __init__(self, shared: Shared, scope: Scope, receive: Receive, send: Send) -> None:
        self.hub, self.settings, self.rates = shared.hub, shared.settings, shared.rates
        self.access = Access(shared.auth, shared.hub.audit, scope, "sse", "reattach")
        self.scope, self.receive, self.send = scope, receive, send

    async def serve(self) -> None:
        subscriber = QueueSubscriber(self.settings.send_buffer_bytes)
        thread_id = ""
        left: asyncio.Task[None] | None = None
        try:
            try:
                user = (await self.access.identify()).user
                logs.bind(user=user)
                self.rates.check(user)
                subscriber.client = client_instance(self.scope)
                thread_id = p.reattach_to(query_param(self.scope, "threadId") or "").thread_id
                logs.bind(thread=thread_id)
                after = self._cursor()
                # The stream's end tells an up-to-date cursor so: no notice run each time
                # EventSource comes back.
                run = await self.hub.reattach(
                    user, thread_id, subscriber, after=after, say_up_to_date=False
                )
            except p.GatewayError as error:
                self.access.record_reattach(thread_id, error)
                await refuse(self.send, error)
                return
            self.access.record_reattach(thread_id, None)
            left = asyncio.create_task(disconnect(self.receive), name="sse watcher")
            await self._follow(run, subscriber, left)
        finally:
            if left is not None:
                left.cancel()
            self.hub.leave(subscriber)
            subscriber.queue.clear()

    def _cursor(self) -> int | None:
        """``Last-Event-ID`` (EventSource's reconnect), else ``?after=``; None: neither."""
        if (sent := header(self.scope, b"last-event-id")) is not None:
            return p.cursor(sent.strip(), "Last-Event-ID")
        if (after := query_param(self.scope, "after")) is not None:
            return p.cursor(after, "?after=")
        return None

    async def _follow(
        self, run: Run | None, subscriber: QueueSubscriber, left: asyncio.Task[None]
    ) -> None:
        """Streams what the reattach sent, then the run live; ends once it is over."""
        ended: asyncio.Task[bool] | None = None
        if run is None:
            subscriber.queue.end()  # idle: the reattach has sent everything there is
        else:
            # Set once the run's last events are out (``Hub._finish``): nothing follows.
            ended = asyncio.create_task(run.done.wait())
            ended.add_done_callback(lambda _: subscriber.queue.end())
        left.add_done_callback(lambda _: subscriber.queue.end())
        try:
            await stream_start(self.send, 200)
            while True:
                frames = await subscriber.queue.batch()
                over = frames[-1][0] is None
                await stream(self.send, frames, more=not over)
                if over:
                    return
        except Exception:  # a server whose send fails once the client is gone
            return
        finally:
            if ended is not None:
                ended.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ended
