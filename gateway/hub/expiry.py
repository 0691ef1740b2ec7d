"""Browser calls nobody answers: answered ``no_result`` after ``client_tool_timeout``.

Theory of operation. A run that ends waiting on the browser arms its thread's timer
(``arm``); an input that answers the calls claims the thread first and the timer finds
it busy, or finds nothing open. When the timer fires (``_expire``) the thread's lease is
taken, as a run takes it (a thread another process runs now was answered there, or
times out there), the thread is read, and every browser call still open is answered
``{"status": "no_result", "reason": "timeout"}`` (or the answer the browser gave early)
in a run of the hub's own, so the model goes on. Only browser calls expire: an approval,
or the agent's own long-running call (a ticket a person decides), waits however long it
takes; with such a ticket open the timeouts wait with the thread's early answers until
the ticket's result comes, as a partial answer does. Once the hub stops (``stop``) no
timer is armed again and those armed are disarmed: the store would be closed when they
fired, and the calls stay open in the thread.

Expiry reaches into nothing of the hub's but what it is given: the engine, the cluster,
the planner (for the audit of the answers), the metrics, and the hub's verbs to lease,
claim and drive a run.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any

from gateway import wire as p
from gateway.adk.engine import Engine
from gateway.cluster import Cluster
from gateway.hub.open_calls import open_calls
from gateway.hub.planning import Plan, Planner, function_responses
from gateway.hub.states import Trigger, thread_state, transition
from gateway.hub.threads import Run, Thread
from gateway.metrics import Metrics
from gateway.store import QuarantinedThreadError

log = logging.getLogger(__name__)


class Expiry:
    """The timers of threads whose browser calls wait; see the module's docstring."""

    def __init__(
        self,
        engine: Engine,
        cluster: Cluster,
        planner: Planner,
        metrics: Metrics,
        *,
        timeout: float,
        lease: Callable[[str, str, str], Awaitable[bool]],
        claim: Callable[[Thread, str], Run],
        drive: Callable[[Run, Plan], Coroutine[Any, Any, None]],
    ) -> None:
        self.engine = engine
        self.cluster = cluster
        self.planner = planner
        self.metrics = metrics
        # How long a browser call may go unanswered.
        self.timeout = timeout
        # Takes the thread's lease for a run: (thread_id, user_id, run_id) -> whether it did.
        self.lease = lease
        # Makes a run, holding the lease just taken, the thread's one run.
        self.claim = claim
        self.drive = drive
        # Set by stop(): from then on no browser call starts waiting on a timer.
        self.stopping = False

    def arm(self, thread: Thread) -> None:
        """(Re)starts the thread's timer, unless the hub is stopping."""
        disarm(thread)
        if self.stopping:
            return
        loop = asyncio.get_running_loop()
        thread.expiry = loop.call_later(
            self.timeout, lambda: asyncio.ensure_future(self._expire(thread))
        )

    def stop(self, threads: Iterable[Thread]) -> None:
        """No timer is armed from now on, and those of ``threads`` are disarmed."""
        self.stopping = True
        for thread in threads:
            disarm(thread)

    async def _expire(self, thread: Thread) -> None:
        """Answers unanswered browser calls with ``no_result``/``timeout``; the model goes on."""
        thread.expiry = None
        if thread.run is not None:
            return
        run_id = f"expire-{uuid.uuid4().hex[:12]}"
        try:
            # A thread another process runs now was answered there, or times out there.
            if not await self.lease(thread.thread_id, thread.user_id, run_id):
                return
        except p.GatewayError as error:
            log.warning("thread %s: its calls' expiry waits: %s", thread.thread_id, error.message)
            self.arm(thread)
            return
        try:
            session = await self.engine.session(thread.user_id, thread.thread_id)
        except QuarantinedThreadError:  # logged by the store; nothing can answer its calls
            self.cluster.release(thread.thread_id)
            return
        except BaseException:
            self.cluster.release(thread.thread_id)
            raise
        # Only browser calls expire: an approval, or the agent's own long-running call (a
        # ticket a person decides), waits for its answer however long it takes.
        found = open_calls(session)
        open_items = {
            c: call for c, call in found.items() if not call.is_approval and not call.server
        }
        # A run claimed it during the read (it answers instead), or nothing is open.
        if thread.run is not None or not open_items:
            self.cluster.release(thread.thread_id)
            return
        timeout = {"status": "no_result", "reason": "timeout"}
        responses = {cid: thread.early.get(cid, timeout) for cid in open_items}
        tickets = [cid for cid, call in found.items() if call.server]
        if tickets:
            # ADK would take the tickets' interim results as answers: the timeouts wait with
            # the thread's early answers until the tickets' results come, as a partial
            # answer does.
            thread.early.update(responses)
            self.cluster.release(thread.thread_id)
            log.info(
                "thread %s: %d browser calls expired; they wait for %s",
                thread.thread_id,
                len(open_items),
                ", ".join(tickets),
            )
            return
        thread.early.clear()
        thread.early_messages.clear()
        run = self.claim(thread, run_id)
        self.metrics.client_tools_expired(len(open_items))
        log.info("thread %s: %d browser calls expired", thread.thread_id, len(open_items))
        self.planner.audit_answers(thread, run.run_id, open_items, responses)
        metadata = {"runId": run.run_id, "context": {}}
        # Every call the browser was asked is answered now, if only by the timeout.
        running = transition(thread_state(open_items), Trigger.ALL_ANSWERED)
        plan = Plan(function_responses(open_items, responses), metadata, {}, None, running)
        run.task = asyncio.create_task(self.drive(run, plan))


def disarm(thread: Thread) -> None:
    """Stops the thread's timer, if it has one."""
    if thread.expiry is not None:
        thread.expiry.cancel()
        thread.expiry = None
