"""Admission: an input taken in, acknowledged at once, then given its turn on the thread.

Theory of operation. An input a door hands the hub (``Admission.start``) is first refused,
with nothing read, if the gateway cannot take it at all (``_admit``: draining, another
user's thread the hub has in memory, a busy policy that refuses at once). Past that it is
admitted: on /ws its RUN_STARTED goes out at once (docs/first-event.md), unless the
connection may be sent another run of the thread first (``_acknowledged_early``), and a
notice follows if every slot of ``GATEWAY_MAX_RUNS`` is taken. Then the admitted input
waits for its thread: at once on an idle one (the hub's ``start``: the claim, the plan,
the run's task), else behind the thread's run and the inputs waiting before it, first
stopping that run if its policy interrupts (``_start_after_run``); a run on another
process is waited for, and stopped, the same way. A cancel can reach an admitted input
before its run has the thread (``cancel_admitted``); the run then ends ``cancelled`` as
soon as it begins.

An input whose runId the thread has admitted or runs here is a ``Duplicate``
(``gateway.hub.dedupe``), found as it is admitted: it is not acknowledged and does not run;
one found in the store is found once it has its thread (``Hub._start``), and one whose run
another process holds the thread for, before it would meet its busy policy (refused, or
waiting for or interrupting that run).

Admission reaches into nothing of the hub's but what it is given: the threads in memory,
the cluster, the cap on runs, and the hub's verbs it calls.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway import timeline
from gateway import wire as p
from gateway.cluster import Cluster
from gateway.context import Caller
from gateway.hub import branches
from gateway.hub.busy import WAITING_PER_THREAD, Busy, in_progress, queue_full, requested
from gateway.hub.dedupe import Duplicate, is_copy, refuse_in_flight, said
from gateway.hub.inputs import starts_turn
from gateway.hub.limits import RunSlots
from gateway.hub.refusals import Claimed, HeldElsewhere, check_owner
from gateway.hub.threads import Run, Subscriber, Thread

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Admitted:
    """An input the hub admitted, whose run does not have its thread yet."""

    user_id: str
    thread_id: str
    run_id: str
    # What it meets on a thread with a run going (``gateway.hub.busy``).
    policy: Busy
    # Its RUN_STARTED went out as it was admitted.
    early: bool
    # What it says (``dedupe.said``): a duplicate of its runId must say the same.
    said: str


class Admission:
    """Admits the doors' inputs and starts their runs in turn; see the module's docstring."""

    def __init__(
        self,
        threads: dict[str, Thread],
        cluster: Cluster,
        slots: RunSlots,
        busy_policy: Busy,
        *,
        refuse_if_draining: Callable[[], None],
        start: Callable[[Caller, p.RunAgentInput, Subscriber | None, Busy], Awaitable[Run]],
        thread: Callable[[str, str], Awaitable[Thread]],
        stop_run: Callable[[Run], bool],
        forget_if_unused: Callable[[Thread], None],
        check_stored: Callable[[str, p.RunAgentInput], Awaitable[None]] | None = None,
    ) -> None:
        self.threads = threads
        self.cluster = cluster
        self.slots = slots
        # What an input on a thread with a run going meets, unless it asks for another.
        self.busy_policy = busy_policy
        # Refuses an input while the hub drains (SERVICE_UNAVAILABLE), and counts it.
        self.refuse_if_draining = refuse_if_draining
        # Claims an idle thread and starts its run; raises Claimed or HeldElsewhere if busy.
        self.start_run = start
        # The thread in memory, its owner read first (refused if not the user's).
        self.thread = thread
        # Stops a run as a cancel does; False if it was over or stopping already.
        self.stop_run = stop_run
        self.forget_if_unused = forget_if_unused
        # Raises Duplicate for a user's input whose run the store has (``gateway.hub.dedupe``).
        self.check_stored = check_stored
        # Inputs admitted whose runs have not claimed their threads yet, by thread, then by
        # run: their user, whether a cancel came for them (``start``, ``cancel_admitted``),
        # and what they said (``dedupe.said``), for a duplicate to be checked against.
        self.admitted: dict[str, dict[str, tuple[str, bool, str]]] = {}
        # Who waits for a thread's admitted inputs to have claimed it (``claimed``), by thread.
        self.claims_awaited: dict[str, asyncio.Future[None]] = {}

    def admit(
        self,
        user_id: str,
        run_input: p.RunAgentInput,
        executor: Subscriber | None,
        acknowledge: Callable[[p.Event], None] | None = None,
    ) -> Admitted:
        """Admits the input, or refuses it (GatewayError) with nothing read or awaited;
        sends ``acknowledge`` the run's RUN_STARTED, and a notice if every slot is taken,
        when it may go out now. ``start`` goes on with what it returns, or ``withdraw``
        forgets it: a door admits an input the moment it reads it (docs/first-event.md)."""
        saying = said(run_input)
        policy = self._admit(user_id, run_input, saying)
        early = False
        if acknowledge is not None and self._acknowledged_early(run_input, executor):
            early = True
            acknowledge(
                p.RunStarted(
                    thread_id=run_input.thread_id,
                    run_id=run_input.run_id,
                    protocol_version=p.PROTOCOL_VERSION,
                )
            )
            if (full := self.slots.full()) is not None:
                acknowledge(full)
        self.admitted.setdefault(run_input.thread_id, {})[run_input.run_id] = (
            user_id,
            False,
            saying,
        )
        timeline.mark("admitted", run_input.run_id)
        return Admitted(user_id, run_input.thread_id, run_input.run_id, policy, early, saying)

    def withdraw(self, admitted: Admitted) -> bool:
        """Forgets an admitted input (its run has its thread, or never will); whether a
        cancel came for it meanwhile."""
        waiting = self.admitted.get(admitted.thread_id, {})
        _, cancelled, _ = waiting.pop(admitted.run_id, (admitted.user_id, False, ""))
        if not waiting:
            self.admitted.pop(admitted.thread_id, None)
            awaited = self.claims_awaited.pop(admitted.thread_id, None)
            if awaited is not None and not awaited.done():
                awaited.set_result(None)
        return cancelled

    async def claimed(self, thread_id: str) -> None:
        """Returns once no input admitted on the thread is still to claim it: each one's run
        has the thread, or never will."""
        while self.admitted.get(thread_id):
            awaited = self.claims_awaited.get(thread_id)
            if awaited is None or awaited.done():
                awaited = asyncio.get_running_loop().create_future()
                self.claims_awaited[thread_id] = awaited
            await asyncio.shield(awaited)  # another reattach may wait on it too

    async def start(
        self,
        user_id: str,
        run_input: p.RunAgentInput,
        executor: Subscriber | None,
        caller: Caller | None = None,
        *,
        acknowledge: Callable[[p.Event], None] | None = None,
        admitted: Admitted | None = None,
    ) -> Run:
        """Claims the thread and starts the run; raises GatewayError before any event.

        On a thread with a run going, the input's busy policy (``gateway.hub.busy``) decides:
        refused, or it waits its turn, first stopping the run for ``interrupt``. ``caller``:
        who asks, as the door identified them, for the run's tools; by default the user.

        ``acknowledge``: sends ``executor`` an event at once. It is given the run's
        RUN_STARTED as soon as the input is admitted (``admit``), before anything is
        read, waited for or committed, then a notice if every slot of ``GATEWAY_MAX_RUNS``
        is taken (docs/first-event.md); the executor is not sent the run's logged
        RUN_STARTED again, and a GatewayError raised after it ends the run it started.
        ``admitted``: the input, admitted already (``admit``); else it is admitted here.
        """
        if admitted is None:
            admitted = self.admit(user_id, run_input, executor, acknowledge)
        try:
            run = await self._claimed(user_id, run_input, executor, caller, admitted.policy)
            timeline.mark("claimed", run.run_id)
        finally:
            cancelled = self.withdraw(admitted)
        # Nothing was awaited since the run's task was made: its RUN_STARTED is not out yet.
        run.said = admitted.said
        run.acknowledged = executor if admitted.early else None
        if admitted.early and run.clock is not None:
            run.clock.started_early()
        if cancelled:  # stopped as soon as it runs, as a cancel stops a run
            log.info("%s was cancelled before it had its thread", run)
            run.abort.set()
        return run

    def _acknowledged_early(self, run_input: p.RunAgentInput, executor: Subscriber | None) -> bool:
        """Whether the input's RUN_STARTED may go out as it is admitted. Not for a branch
        move: its RUN_STARTED names the run it forks from, which the read finds. Not while
        ``executor`` may be sent another run of the thread first, for a stream carries one
        run at a time (AG-UI): a run here, inputs waiting for one, or, on a cluster, a
        thread the executor watches, which another process may be running."""
        if branches.asked(run_input) is not None:
            return False
        if (known := self.threads.get(run_input.thread_id)) is None:
            return True
        if known.run is not None or known.waiting:
            return False
        return self.cluster.alone or executor not in known.watchers

    def _not_here(self, user_id: str, run_input: p.RunAgentInput, saying: str) -> None:
        """Raises Duplicate for a user's input whose runId is admitted on its thread or is
        the run it runs here, saying the same (``dedupe.is_copy``); VALIDATION_ERROR for
        another input under an admitted one's runId. Another user's is not: it meets the
        owner's check as any input does."""
        thread_id, run_id = run_input.thread_id, run_input.run_id
        first = self.admitted.get(thread_id, {}).get(run_id)
        if first is not None and first[0] == user_id:
            if not is_copy(first[2], saying):
                refuse_in_flight(thread_id, run_id)
            raise Duplicate(thread_id, run_id, "here")
        known = self.threads.get(thread_id)
        running = known.run if known is not None else None
        if running is not None and running.run_id == run_id and is_copy(running.said, saying):
            raise Duplicate(thread_id, run_id, "here")

    def _admit(self, user_id: str, run_input: p.RunAgentInput, saying: str) -> Busy:
        """Refuses, with nothing read, an input the gateway cannot take at all: one while
        it drains, one on another user's thread it has in memory, one the thread's busy
        policy refuses at once; returns that policy. Raises Duplicate for one admitted or
        running here already (``_not_here``). An input past these is admitted: what
        it meets from then on (the thread's owner as the store has it, its lease, a slot
        of ``GATEWAY_MAX_RUNS``, its turn, the quota, its plan) it meets as a run."""
        self.refuse_if_draining()  # before the busy policy: a refused input interrupts nothing
        policy = requested(run_input, self.busy_policy)
        if (known := self.threads.get(run_input.thread_id)) is not None:
            # Refused without a read: another user's thread.
            check_owner(known.user_id, user_id, run_input.thread_id)
        self._not_here(user_id, run_input, saying)  # a copy is not busy: it does not run
        # On a cluster, inputs may wait here for a run elsewhere, which may be this one's:
        # a copy of it is found first (``_start_after_run``), then the policy is met.
        alone = self.cluster.alone
        if known is not None and (known.run is not None or (known.waiting and alone)):
            _busy_refusal(known, policy)
        return policy

    async def _claimed(
        self,
        user_id: str,
        run_input: p.RunAgentInput,
        executor: Subscriber | None,
        caller: Caller | None,
        policy: Busy,
    ) -> Run:
        thread_id = run_input.thread_id
        caller = caller or Caller(user_id)
        assert caller.user_id == user_id, "a run is asked for by the thread's user"
        while True:
            if (known := self.threads.get(thread_id)) is not None:
                # Refused without a read: another user's thread.
                check_owner(known.user_id, user_id, thread_id)
                if known.run is not None or known.waiting:
                    return await self._start_after_run(known, policy, caller, run_input, executor)
            try:
                return await self.start_run(caller, run_input, executor, policy)
            except Claimed:
                continue
            except HeldElsewhere:
                held = await self.thread(user_id, thread_id)  # refused if not the user's
                return await self._start_after_run(held, policy, caller, run_input, executor)
            except p.GatewayError as refused:
                # ``reject`` refuses at the claim a thread another process holds; a copy
                # of the run it holds it for is no new input to refuse: it follows that run.
                if refused.code is p.ErrorCode.SESSION_BUSY and not self.cluster.alone:
                    await self._not_running_elsewhere(user_id, run_input)
                raise

    async def _start_after_run(
        self,
        thread: Thread,
        policy: Busy,
        caller: Caller,
        run_input: p.RunAgentInput,
        executor: Subscriber | None,
    ) -> Run:
        """Starts the run once the thread's runs, and the inputs waiting before it, are done;
        a run on another process is waited for (and stopped, to interrupt it) the same way.
        A copy of the input whose run another process holds the thread for is found before
        the busy policy is met: a copy is not busy, it does not run (whatever the policy)."""
        try:
            if thread.run is None and not self.cluster.alone:  # the run going is not here
                await self._not_running_elsewhere(caller.user_id, run_input)
            _busy_refusal(thread, policy)
        except BaseException:
            self.forget_if_unused(thread)  # read into memory for this input alone, perhaps
            raise
        interrupts = policy is Busy.INTERRUPT and starts_turn(run_input)
        thread.waiting += 1
        try:
            if interrupts:  # a copy of a run that ran stops nothing (``gateway.hub.dedupe``)
                await self._not_stored(caller.user_id, run_input)
            async with thread.turns:  # first come, first served
                while True:
                    while (running := thread.run) is not None:
                        if interrupts and self.stop_run(running):
                            log.info("a new message stops %s", running)
                        await running.done.wait()
                    try:
                        return await self.start_run(caller, run_input, executor, policy)
                    except Claimed:
                        continue
                    except HeldElsewhere:
                        # The run elsewhere may be this one, sent again: going on there
                        # (its input perhaps not stored yet), or stored, with a later run
                        # going on now.
                        await self._not_running_elsewhere(caller.user_id, run_input)
                        if interrupts:
                            await self._not_stored(caller.user_id, run_input)
                        if interrupts and await self.cluster.cancel(
                            thread.thread_id, caller.user_id
                        ):
                            log.info(
                                "a new message stops the run of thread %s elsewhere",
                                thread.thread_id,
                            )
                            interrupts = False  # once: its holder stops it, then releases
                        await self.cluster.released(thread.thread_id)
        finally:
            thread.waiting -= 1
            self.forget_if_unused(thread)

    async def _not_running_elsewhere(self, user_id: str, run_input: p.RunAgentInput) -> None:
        """Raises Duplicate for a user's input whose run another process is running: the
        thread's lease names the run it was taken for. A copy that comes before that run
        has stored its input is found only so; interrupting it, it would cut the reply its
        sender reconnected to get. The lease does not say what that run's input said: the
        same runId with another input while that run goes on is taken for a copy (no
        client sends one: ``useInterrupt`` resumes a run under its runId once it ended)."""
        held = await self.cluster.held_elsewhere(run_input.thread_id)
        if held is not None and held.user_id == user_id and held.run_id == run_input.run_id:
            raise Duplicate(run_input.thread_id, run_input.run_id, "elsewhere")

    async def _not_stored(self, user_id: str, run_input: p.RunAgentInput) -> None:
        """Raises Duplicate for an input whose run the store has, saying the same."""
        if self.check_stored is not None:
            await self.check_stored(user_id, run_input)

    def cancel_admitted(self, user_id: str, thread_id: str, run_id: str | None) -> bool:
        """A cancel of the user's input admitted on the thread (the one ``run_id`` names,
        if named) whose run is not going yet: it stops once it is."""
        thread = self.threads.get(thread_id)
        going = thread.run.run_id if thread is not None and thread.run is not None else None
        if run_id is None and going is not None:
            return False  # the run going is what a cancel of the thread stops
        admitted = self.admitted.get(thread_id, {})
        found = [
            admitted_id
            for admitted_id, (admitted_by, _, _) in admitted.items()
            if admitted_by == user_id and admitted_id != going and run_id in (None, admitted_id)
        ]
        for admitted_id in found:
            admitted[admitted_id] = (user_id, True, admitted[admitted_id][2])
        return bool(found)


def _busy_refusal(thread: Thread, policy: Busy) -> None:
    """SESSION_BUSY for an input on a thread whose run is going, if its policy refuses it
    or too many inputs wait already."""
    if policy is Busy.REJECT:
        raise in_progress(thread.thread_id)
    if thread.waiting >= WAITING_PER_THREAD:
        raise queue_full(thread.thread_id)
