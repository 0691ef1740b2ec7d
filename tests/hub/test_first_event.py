"""An input's RUN_STARTED over /ws goes out as soon as the hub admits it, ahead of the
thread's read, a slot, the plan and their commits (docs/first-event.md): the thread's read
is held back here, and the client has its RUN_STARTED meanwhile. What the run logs stays
whole (a replay by cursor starts at its RUN_STARTED), a refusal after the acknowledgement
ends the run it started, and one the hub makes before it is a lone RUN_ERROR as before."""

from __future__ import annotations

import asyncio

import pytest

from gateway import wire as p
from tests.support.agui import (
    new_id,
    outcome,
    seq_of,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.budgets import eventually, scaled
from tests.support.first_events import LONG, held_reads, held_starts, replied
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server


async def test_run_started_comes_before_the_thread_is_read_and_the_log_keeps_it() -> None:
    async with held_reads() as (gateway, reads), gateway.socket() as ws:
        thread = new_id("t")
        asked = user_input(thread, "안녕")
        await ws.send(asked)
        started = await ws.next()
        assert started["type"] == "RUN_STARTED" and started["runId"] == asked["runId"]
        assert reads.waiting == 1 and reads.done == 0
        # Sent before it was numbered: a client's cursor stays at what the store has.
        assert seq_of(started) is None
        reads.let_go.set()
        rest = await ws.until_end()
        assert outcome(rest) == {"type": "success"} and text_of(rest)
        # One RUN_STARTED for the run (the checker saw one valid stream), every other
        # event numbered from the log's.
        assert [e["type"] for e in rest].count("RUN_STARTED") == 0
        assert all(seq_of(e) is not None for e in rest)
        async with gateway.socket() as other:
            await other.send({"type": "reattach", "threadId": thread, "after": 0})
            replayed = await other.until_end()
        # The log has the run from its RUN_STARTED, which has the number before the rest's.
        assert replayed[0]["type"] == "RUN_STARTED" and replayed[0]["runId"] == asked["runId"]
        logged = seq_of(replayed[0])
        assert logged is not None and (seq_of(rest[0]) or 0) > logged
        assert text_of(replayed) == text_of(rest)


async def test_another_tab_is_sent_the_logged_run_started() -> None:
    async with held_reads() as (gateway, reads):
        reads.let_go.set()
        thread = new_id("t")
        async with gateway.socket() as typist, gateway.socket() as other:
            await typist.run(user_input(thread, "안녕"))
            await other.run({"type": "reattach", "threadId": thread})
            asked = user_input(thread, "고마워")
            mine = await typist.run(asked)
            seen = await other.until_end()
        assert [e["type"] for e in mine].count("RUN_STARTED") == 1
        assert seen[0]["type"] == "RUN_STARTED" and seen[0]["runId"] == asked["runId"]
        assert seq_of(seen[0]) is not None and seq_of(mine[0]) is None


async def test_a_run_past_the_cap_is_started_at_once_and_told_it_waits() -> None:
    async with (
        held_reads(max_runs=1, run_wait=30.0) as (gateway, reads),
        gateway.socket() as first,
        gateway.socket() as second,
    ):
        await first.send(user_input(new_id("t"), "안녕"))
        assert (await first.next())["type"] == "RUN_STARTED"
        await eventually(lambda: reads.waiting == 1, 5, what="the first run reads")
        # The first run holds the one slot while its read is held.
        await second.send(user_input(new_id("t"), "고마워"))
        started, told = await second.next(), await second.next()
        assert started["type"] == "RUN_STARTED"
        assert told["name"] == "gateway.notice" and told["value"]["code"] == "RUNS_FULL"
        assert "GATEWAY_MAX_RUNS" in told["value"]["message"]
        assert reads.waiting == 1  # the second waits for the slot, not for a read
        reads.let_go.set()
        assert outcome(await first.until_end()) == {"type": "success"}
        assert outcome(await second.until_end()) == {"type": "success"}


async def test_a_refusal_after_run_started_ends_that_run_and_logs_nothing() -> None:
    async with running_gateway() as gateway:
        thread = new_id("t")
        async with gateway.socket("alice") as alice:
            said = await alice.run(user_input(thread, "안녕"))
        hub = gateway.app.hub
        assert hub is not None
        await eventually(lambda: thread not in hub.threads, 5, what="the thread is let go")
        # The hub no longer has it in memory: only the read finds it is Alice's.
        async with gateway.socket("mallory") as mallory:
            asked = user_input(thread, "hello")
            started, refused = await mallory.run(asked)
        assert started["type"] == "RUN_STARTED" and started["runId"] == asked["runId"]
        assert refused["type"] == "RUN_ERROR" and refused["code"] == "ACCESS_DENIED"
        async with gateway.socket("alice") as alice:
            await alice.send({"type": "reattach", "threadId": thread, "after": seq_of(said[-1])})
            answer = await alice.until_end()
        [notice] = [e for e in answer if e["type"] == "CUSTOM"]
        assert notice["value"]["code"] == "UP_TO_DATE"


async def test_an_input_refused_before_it_is_admitted_gets_no_run_started() -> None:
    async with running_gateway(scripted_pace_ms=20) as gateway:
        thread = new_id("t")
        async with gateway.socket() as typist, gateway.socket() as other:
            await typist.send(user_input(thread, LONG))
            assert (await typist.next())["type"] == "RUN_STARTED"
            hub = gateway.app.hub
            assert hub is not None

            def running() -> bool:
                known = hub.threads.get(thread)
                return known is not None and known.run is not None

            await eventually(running, 5, what="the run claims its thread")
            busy = user_input(thread, "hello") | {"forwardedProps": {"gateway": {"busy": "reject"}}}
            await other.send(busy)
            refused = await asyncio.wait_for(other.next(), scaled(5))
            assert refused["type"] == "RUN_ERROR" and refused["code"] == "SESSION_BUSY"
            await typist.until_end()


async def test_a_refusal_names_the_input_it_refuses_alone_or_in_a_run_of_its_own() -> None:
    """A client with several inputs in flight (sent again after a reload) tells which one
    a refusal answers by the runId in its metadata: a lone RUN_ERROR belongs to no run."""
    reject = {"forwardedProps": {"gateway": {"busy": "reject"}}}
    async with running_gateway(scripted_pace_ms=20) as gateway:
        thread = new_id("t")
        async with (
            gateway.socket() as typist,
            gateway.socket() as fresh,
            gateway.socket() as streamed,
        ):
            await streamed.run(user_input(new_id("t"), "안녕"))  # its stream has begun
            await typist.send(user_input(thread, LONG))
            assert (await typist.next())["type"] == "RUN_STARTED"
            hub = gateway.app.hub
            assert hub is not None
            await eventually(
                lambda: getattr(hub.threads.get(thread), "run", None) is not None,
                5,
                what="the run claims its thread",
            )
            alone = user_input(thread, "hello") | reject
            [refused] = await fresh.run(alone)
            assert refused["code"] == "SESSION_BUSY"
            assert refused["metadata"] == {p.REFUSED_RUN_ID: alone["runId"]}
            own = user_input(thread, "hello again") | reject
            started, refused = await streamed.run(own)
            assert started["runId"] == own["runId"] and refused["code"] == "SESSION_BUSY"
            assert refused["metadata"] == {p.REFUSED_RUN_ID: own["runId"]}
            await typist.until_end()


async def test_a_cancel_before_the_run_has_its_thread_stops_it() -> None:
    async with held_reads() as (gateway, reads), gateway.socket() as ws:
        thread = new_id("t")
        asked = user_input(thread, LONG)
        await ws.send(asked)
        assert (await ws.next())["type"] == "RUN_STARTED"
        await ws.send({"type": "cancel", "threadId": thread, "runId": asked["runId"]})
        hub = gateway.app.hub
        assert hub is not None

        def cancelled() -> bool:
            return hub.admission.admitted.get(thread, {}).get(asked["runId"], ("", False))[1]

        await eventually(cancelled, 5, what="the cancel reaches the admitted input")
        reads.let_go.set()
        events = await ws.until_end()
        assert outcome(events) == {"type": "cancelled"}
        assert not [e for e in events if e["type"] == "CUSTOM"], "nothing to cancel was not said"


async def test_run_started_goes_out_as_the_frame_is_read_not_in_the_workers_turn() -> None:
    # The connection's worker takes the input a turn of the loop later, behind whatever
    # else is ready then (other runs' work, under load); held here, it does not take it.
    async with running_gateway() as gateway, gateway.socket() as ws:
        hub = gateway.app.hub
        assert hub is not None
        let_go = held_starts(hub)
        asked = user_input(new_id("t"), "안녕")
        await ws.send(asked)
        started = await ws.next()
        assert started["type"] == "RUN_STARTED" and started["runId"] == asked["runId"]
        let_go.set()
        rest = await ws.until_end()
        assert outcome(rest) == {"type": "success"} and text_of(rest)
        assert [e["type"] for e in rest].count("RUN_STARTED") == 0


async def test_an_input_read_while_a_run_streams_is_started_after_it() -> None:
    # Admitted as it is read only on a connection with nothing else to do: a stream
    # carries one run at a time, so the next input's RUN_STARTED waits for this run's end.
    async with running_gateway(scripted_pace_ms=20) as gateway, gateway.socket() as ws:
        first, second = user_input(new_id("t"), LONG), user_input(new_id("t"), "안녕")
        await ws.send(first)
        assert (await ws.next())["runId"] == first["runId"]
        await ws.send(second)
        events = await ws.until_end()  # the checker refuses a RUN_STARTED inside a run
        assert outcome(events) == {"type": "success"}
        then = await ws.until_end()
        assert then[0]["type"] == "RUN_STARTED" and then[0]["runId"] == second["runId"]
        assert outcome(then) == {"type": "success"}


async def test_inputs_whose_connection_closes_at_once_leave_nothing_admitted_and_run() -> None:
    async with running_gateway() as gateway:
        hub = gateway.app.hub
        assert hub is not None
        threads = [new_id("t") for _ in range(10)]
        for thread in threads:
            async with gateway.socket() as ws:
                await ws.send(user_input(thread, "안녕"))
        await eventually(lambda: not hub.admission.admitted, 5, what="nothing left admitted")
        # Each was told it began (an early RUN_STARTED): each ran, its reply stored.
        async with gateway.socket() as ws:
            for thread in threads:
                shown = await ws.run({"type": "reattach", "threadId": thread})
                assert "안녕하세요" in replied(shown), shown


async def test_an_input_whose_connection_closes_after_its_run_started_still_runs() -> None:
    # The browser's answer is acknowledged (its early RUN_STARTED out) and its connection
    # drops before the run has its thread (the read is held). The client was told the run
    # began: it goes on as any run does when its connection closes, and the tab's reattach
    # finds it; the answer is not lost (issue 32: a chaos trial's dropped socket).
    async with held_reads() as (gateway, reads):
        hub = gateway.app.hub
        assert hub is not None
        reads.let_go.set()
        thread = new_id("t")
        async with gateway.socket() as ws:
            [navigate] = tool_calls(await ws.run(user_input(thread, FLAGSHIP)), "navigateToScreen")
            await eventually(
                lambda: thread not in hub.threads or hub.threads[thread].run is None,
                5,
                what="the first run did not let go of the thread",
            )
            reads.let_go.clear()
            answer = tool_answer(thread, [(navigate["id"], {"status": "navigated"})])
            await ws.send(answer)
            started = await ws.next()
            assert started["type"] == "RUN_STARTED" and started["runId"] == answer["runId"]
            await eventually(lambda: reads.waiting == 2, 5, what="the answer's run did not read")
        reads.let_go.set()
        async with gateway.socket() as ws:
            shown = await ws.run({"type": "reattach", "threadId": thread})
            assert outcome(shown) == {"type": "success"} and MOVED in replied(shown), shown


async def test_a_reattach_while_an_acknowledged_input_claims_the_thread_follows_its_run() -> None:
    # A client cut just after it sent its message, told or not that it began, reconnects
    # and reattaches while the input has not claimed the thread yet (held here). The input
    # starts all the same; the reattach waits for its run and follows it. It found the
    # thread idle and empty, and its client sent the message again: a second run beside
    # the first (the load test's kill mode, once in a CI).
    async with running_gateway() as gateway:
        hub = gateway.app.hub
        assert hub is not None
        let_go = held_starts(hub)
        thread = new_id("t")
        asked = user_input(thread, "안녕")
        async with gateway.socket() as ws:
            await ws.send(asked)
            assert (await ws.next())["runId"] == asked["runId"]
        async with gateway.socket() as ws:
            await ws.send({"type": "reattach", "threadId": thread})
            await eventually(
                lambda: thread in hub.admission.claims_awaited,
                5,
                what="the reattach did not wait for the admitted input",
            )
            let_go.set()
            shown = await ws.until_end()
            assert shown[0]["type"] == "RUN_STARTED" and shown[0]["runId"] == asked["runId"]
            assert outcome(shown) == {"type": "success"} and "안녕하세요" in replied(shown)


async def test_an_input_of_an_undeclarable_version_is_refused_with_its_code_as_it_is_read() -> None:
    async with running_gateway() as gateway, gateway.socket() as ws:
        await ws.send(user_input(new_id("t"), "안녕") | {"protocolVersion": "t"})
        refused = await ws.next()
        assert refused["type"] == "RUN_ERROR" and refused["code"] == "VALIDATION_ERROR"
        assert "protocolVersion" in refused["message"]
        # The connection goes on: the next input runs.
        assert outcome(await ws.run(user_input(new_id("t"), "안녕"))) == {"type": "success"}
