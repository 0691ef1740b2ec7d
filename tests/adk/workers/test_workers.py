"""With GATEWAY_WORKERS=2 the agent's invocations run in worker processes, and the story a
user lives through over /ws is the same: the flagship, and a worker killed mid-run."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from google.adk.events import Event as AdkEvent

from gateway import api
from gateway.adk.engine import Engine
from gateway.adk.workers import WorkerPool
from gateway.adk.workers import pool as pool_module
from gateway.adk.workers.credit import WINDOW
from gateway.audit import read_audit
from gateway.config import Settings
from gateway.examples.navigator import work_requests
from gateway.metrics import sample
from gateway.store import adk_json, codec
from gateway.store.cut_off import FINISHING, FINISHING_ATTEMPTS
from gateway.wire import bounds
from tests.support.agui import (
    AgUiSocket,
    new_id,
    outcome,
    snapshot_of,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.backends import rows
from tests.support.budgets import scaled
from tests.support.counting import counting
from tests.support.damage import nested
from tests.support.flagship import FLAGSHIP, MOVED, flagship_navigated_then_honest_reply
from tests.support.providers import Fault
from tests.support.providers.chat_completions import ChatCompletions
from tests.support.servers import RunningGateway, running_gateway
from tests.support.surfaces import BASIC, CARD
from tests.support.traces import OtlpReceiver, named, of_threads, recorded_spans
from tests.support.workers import killed, pool_of

pytestmark = pytest.mark.server

# Worker processes import ADK and the agent on a shared machine: seconds, not milliseconds.
START = scaled(60)
# GATEWAY_MODEL_TIMEOUT where a model stalls: a worker's first model call imports the
# provider's SDK on its loop, which on a busy machine is a second of silence.
STALL = scaled(3.0)


async def every_worker_killed(pool: WorkerPool, ws: AgUiSocket) -> list[int]:
    """SIGKILLs every worker mid-run: the run ends RUN_INTERRUPTED. Their process ids."""
    pids = pool.pids()
    killed(pids)
    cut = await ws.until_end(START)
    assert cut[-1]["type"] == "RUN_ERROR", cut[-1]
    assert cut[-1]["code"] == "RUN_INTERRUPTED"
    return pids


async def owed_when_every_worker_is_killed(
    pool: WorkerPool, ws: AgUiSocket, thread: str
) -> list[int]:
    """The browser's answer is stored and the model is replying to it (a slow model's first
    text came) when every worker is killed: the model owes that reply. Their process ids."""
    first = await ws.run(user_input(thread, FLAGSHIP))
    [navigate] = tool_calls(first, "navigateToScreen")
    await ws.send(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
    while (await ws.next(START))["type"] != "TEXT_MESSAGE_CONTENT":
        pass
    return await every_worker_killed(pool, ws)


async def test_the_flagship_story_runs_in_worker_processes(tmp_path: Path) -> None:
    async with running_gateway(workers=2, db=str(tmp_path / "threads.db")) as gateway:
        pool = pool_of(gateway)
        assert len(pool.pids()) == 2 and os.getpid() not in pool.pids()
        await flagship_navigated_then_honest_reply(gateway)


async def test_the_main_process_parses_a_workers_events_without_genais_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ADK event a worker sends (its appends, its streamed chunks) and every one the
    reply's run reads back is parsed by ``parse_event``, never by pydantic's own validator,
    whose genai hook was a fifth of the main process's thread (docs/multicore.md)."""
    slow = counting(monkeypatch, AdkEvent, "model_validate_json")
    fast = [
        counting(monkeypatch, module, "parse_event") for module in (adk_json, pool_module, codec)
    ]
    async with running_gateway(workers=2, db=str(tmp_path / "threads.db")) as gateway:
        await flagship_navigated_then_honest_reply(gateway)
    assert slow == []
    # The worker's appends and the reply's first chunk (the reply's run takes the events
    # the appends made; the next chunks cross as their text: ``chunks``).
    assert sum(len(calls) for calls in fast) >= 8


async def test_the_main_process_dumps_no_adk_event_of_a_workers_story(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's append is stored as the JSON it sent (the row holds ADK's dump, which it
    is), and the reply's run is handed the first run's events as the rows they were read
    from: the main process dumps none of them again (docs/multicore.md)."""
    dump = AdkEvent.model_dump_json
    dumped = counting(monkeypatch, AdkEvent, "model_dump_json")
    db = str(tmp_path / "threads.db")
    async with running_gateway(workers=2, db=db) as gateway:
        await flagship_navigated_then_honest_reply(gateway)
    assert dumped == []
    # Every row is what ADK's dump of the event it holds gives: a worker's text is that.
    stored = rows(db, "SELECT data FROM events")
    assert len(stored) >= 6
    for (data,) in stored:
        assert dump(adk_json.parse_event(data), exclude_none=True, by_alias=True) == data


async def test_a_replys_chunks_after_its_first_cross_as_their_text_and_the_pipe_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A streamed chunk like the one before it crosses as its text (``Streamed``), not as
    ADK's JSON of the whole event: the main process parses one chunk of the reply, and
    builds the rest from it (``gateway.adk.workers.chunks``). What crossed is counted, by
    message type, and exposed as ``gateway_worker_pipe_*``."""
    parsed = counting(monkeypatch, pool_module, "parse_event")
    async with running_gateway(workers=2, db=str(tmp_path / "t.db"), metrics="on") as gateway:
        counts = pool_of(gateway).counts
        await flagship_navigated_then_honest_reply(gateway)
        metrics = gateway.app.metrics
    chunks_parsed = [call for call in parsed if adk_json.parse_event(call.args[0]).partial]
    assert len(chunks_parsed) == 1  # the reply's first chunk
    streamed, streamed_bytes = counts.received["Streamed"]
    assert streamed >= 3  # the flagship's reply streams a few words at a time
    assert streamed_bytes < streamed * len(chunks_parsed[0].args[0]) / 4
    # Each run's Start, each append's answer; each run's Finished, each append, each event.
    assert counts.sent["Start"][0] == counts.received["Finished"][0] == 2
    assert counts.sent["Appended"][0] == counts.received["Append"][0]
    for direction, counted in (("to_worker", counts.sent), ("from_worker", counts.received)):
        for kind, (messages, size) in counted.items():
            labels = {"direction": direction, "message": kind}
            assert sample(metrics, "gateway_worker_pipe_messages_total", **labels) == messages
            assert sample(metrics, "gateway_worker_pipe_bytes_total", **labels) == size


async def test_the_reply_takes_the_events_its_worker_appended_and_parses_none_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first run's events were parsed here as its worker appended them; the reply's
    run reads them back a moment later and takes those events instead of parsing their
    rows again (``gateway.store.parsed``)."""
    read = counting(monkeypatch, codec, "parse_event")
    async with running_gateway(workers=2, db=str(tmp_path / "threads.db")) as gateway:
        await flagship_navigated_then_honest_reply(gateway)
        assert gateway.app.hub is not None
        taken = gateway.app.hub.engine.sessions.recently_parsed.taken
    assert read == []
    assert taken >= 4  # the message, the two calls, their answers


async def test_the_replys_run_goes_without_the_events_its_worker_kept_of_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reply's run goes to the worker that ran the story's first run, which kept that
    run's session: its Start leaves those events out, and the worker puts its own copy of
    them first (``gateway.adk.workers.kept``). The story is the same."""
    starts = counting(monkeypatch, pool_module, "start_of")
    async with running_gateway(workers=2, db=str(tmp_path / "threads.db")) as gateway:
        counts = pool_of(gateway).counts
        await flagship_navigated_then_honest_reply(gateway)
    first, reply = (call.args[2] for call in starts)
    assert first == 0
    assert reply >= 4  # the message, the two calls, find_screen's answer
    assert "Unkept" not in counts.received


async def test_gateway_workers_in_the_environment_runs_a_tests_gateway_with_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # How the server tier runs with workers (docs/multicore.md): the test says nothing.
    monkeypatch.setenv("GATEWAY_WORKERS", "2")
    async with running_gateway() as gateway:
        assert len(pool_of(gateway).pids()) == 2
    async with running_gateway(workers=0) as gateway:  # a test that says otherwise
        assert gateway.app.hub is not None and gateway.app.hub.engine.workers is None


async def test_a_workers_tool_calls_are_audited_and_its_model_calls_counted_here(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "threads.db")
    async with running_gateway(workers=2, db=db, metrics="on") as gateway:
        await flagship_navigated_then_honest_reply(gateway)
        metrics = gateway.app.metrics
        # The demo's scripted model: find_screen, navigateToScreen, then the reply.
        assert sample(metrics, "gateway_model_calls_total", model="scripted", result="ok") == 3
        assert sample(metrics, "gateway_model_call_seconds_count", model="scripted") == 3
        for direction in ("input", "output"):
            assert sample(
                metrics, "gateway_model_tokens_total", model="scripted", direction=direction
            )
    # The audit file is the main process's (written out by its close): the server tool the
    # worker ran is in it, with the browser's answer the hub recorded.
    recorded = [(r.tool, r.executor, r.outcome) for r in await read_audit(db)]
    assert sorted(recorded) == [
        ("find_screen", "server", "ok"),
        ("navigateToScreen", "client", "navigated"),
    ]


async def test_a_worker_killed_mid_run_interrupts_the_run_and_the_thread_goes_on(
    tmp_path: Path,
) -> None:
    # A slow model, so that the run is still going when its worker is killed.
    db = str(tmp_path / "threads.db")
    async with running_gateway(workers=2, db=db, scripted_pace_ms=150.0) as gateway:
        pool = pool_of(gateway)
        thread = new_id("t")
        async with gateway.socket() as ws:
            await ws.send(user_input(thread, FLAGSHIP))
            while (await ws.next(START))["type"] != "TOOL_CALL_START":
                pass
            dead = await every_worker_killed(pool, ws)

            # The thread is whole: every call of the agent's own has its result, and a call
            # without one is the browser's, left for the browser to answer (never asked of
            # it twice). Had find_screen returned before the kill, the model owed its reply
            # to that result, and the thread asks for it by itself, as after a restart: this
            # tab follows that run live, and the reattach's snapshot comes once it has ended.
            reattached = await ws.run({"type": "reattach", "threadId": thread})
            if reattached[0].get("runId", "").startswith(FINISHING):
                reattached = await ws.until_end(START)
            shown = snapshot_of(reattached)
            answered = {m["toolCallId"] for m in shown if m["role"] == "tool"}
            open_calls = [
                call["function"]["name"]
                for message in shown
                for call in message.get("toolCalls") or []
                if call["id"] not in answered
            ]
            assert set(open_calls) <= {"navigateToScreen"}, shown

            # The next input runs on a new worker, and the story ends honestly (after the
            # thread's own run for the owed reply, if it started only now: the tab follows it).
            again = user_input(thread, FLAGSHIP)
            await ws.send(again)
            before: list[dict[str, Any]] = []
            while (event := await ws.next(START))["type"] != "RUN_STARTED" or (
                event["runId"] != again["runId"]
            ):
                before.append(event)
            started = [e["runId"] for e in before if e["type"] == "RUN_STARTED"]
            assert all(run_id.startswith(FINISHING) for run_id in started), started
            first = [event, *await ws.until_end(START)]
            [navigate] = tool_calls(first, "navigateToScreen")
            second = await ws.run(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
            assert text_of(second) == MOVED
        assert len(pool.pids()) == 2 and not set(pool.pids()) & set(dead)


async def test_a_worker_whose_main_process_is_gone_exits_with_one_line_not_a_traceback(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # A worker started in place of a dead one while the gateway stops: by the time it has
    # loaded the agent, nobody listens on the pool's socket (here: one bound, not listening).
    path = str(tmp_path / "pipe")
    with socket.socket(socket.AF_UNIX) as unheard:
        unheard.bind(path)
        settings = Settings(log_level="info", warm_up_runs=0)
        process = api._spawn_worker(None, settings, path, 7)
        await asyncio.get_running_loop().run_in_executor(None, process.join, START)
    assert process.exitcode == 0
    said = capfd.readouterr().err
    assert "Traceback" not in said and "ConnectionRefusedError" not in said, said
    [line] = [line for line in said.splitlines() if "main process is gone" in line]
    assert "worker 7" in line


async def test_a_run_its_worker_cannot_read_ends_with_a_coded_error_not_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A browser's answer nested past pydantic's parse limit, let through the door (a bound
    # a bug lets through, tests/store/test_damaged_threads.py): the worker cannot parse the
    # run it is handed. The run ends with the agent's coded error, the worker runs on.
    monkeypatch.setattr(bounds, "MAX_DEPTH", 10_000)
    thread = new_id("t")
    async with running_gateway(workers=2, db=str(tmp_path / "threads.db")) as gateway:
        pids = pool_of(gateway).pids()
        async with gateway.socket() as ws:
            [navigate] = tool_calls(await ws.run(user_input(thread, FLAGSHIP)), "navigateToScreen")
            answer = {"status": "navigated", "detail": nested(200)}
            answered = await ws.run(tool_answer(thread, [(navigate["id"], answer)]))
            assert answered[-1]["type"] == "RUN_ERROR" and answered[-1]["code"] == "AGENT_ERROR"
            assert "ValidationError" not in answered[-1]["message"]
            again = await ws.run(user_input(thread, "고마워"))
            assert again[-1]["type"] == "RUN_FINISHED"
        assert pool_of(gateway).pids() == pids


async def test_a_reply_its_worker_cut_off_is_asked_for_again_as_after_a_restart(
    tmp_path: Path,
) -> None:
    # The browser's answer is stored and the model is replying to it when the worker dies:
    # the model owes that reply, so the thread asks for it again by itself.
    db = str(tmp_path / "threads.db")
    async with running_gateway(workers=2, db=db, scripted_pace_ms=150.0) as gateway:
        pool = pool_of(gateway)
        thread = new_id("t")
        async with gateway.socket() as ws:
            await owed_when_every_worker_is_killed(pool, ws, thread)

            # The thread's next run is the gateway's own, followed live by the tab (it waits
            # for a new worker: both are dead before the pool picks one).
            cut, again = await owed_reply_followed(ws)
            assert not cut
            assert text_of(again) == MOVED
            assert not tool_calls(again)  # the screen is not opened twice

            # The thread ends with that reply; the next input runs at once.
            shown = snapshot_of(await ws.run({"type": "reattach", "threadId": thread}))
            assert shown[-1]["role"] == "assistant" and shown[-1]["content"] == MOVED
            assert text_of(await ws.run(user_input(thread, "안녕하세요")))


async def test_the_run_asking_again_cut_off_with_its_worker_asks_again_and_is_answered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The reply is owed after a worker's death, and the worker running the gateway's own
    # run that asks for it dies too, mid-reply: the thread asks once more, and ends with it.
    caplog.set_level(logging.INFO, logger="gateway.adk.workers.pool")
    db = str(tmp_path / "threads.db")
    async with running_gateway(workers=2, db=db, scripted_pace_ms=150.0) as gateway:
        pool = pool_of(gateway)
        thread = new_id("t")
        async with gateway.socket() as ws:
            gone = set(await owed_when_every_worker_is_killed(pool, ws, thread))
            # The asking run's text comes (so its turn is stored, and it runs in a worker
            # that said hello): every such worker is killed (not one still starting, which
            # a pool of fixed size would wait for).
            asking = [await ws.next(START)]
            assert asking[0]["type"] == "RUN_STARTED", asking[0]
            assert asking[0]["runId"].startswith(FINISHING), asking[0]
            while asking[-1]["type"] != "TEXT_MESSAGE_CONTENT":
                asking.append(await ws.next(START))
            killed(ready_pids(caplog) - gone)
            asking += await ws.until_end(START)
            assert asking[-1]["type"] == "RUN_ERROR" and asking[-1]["code"] == "RUN_INTERRUPTED"

            cut, again = await owed_reply_followed(ws)
            assert not cut  # the workers it may meet now are all alive
            assert again[0]["runId"] != asking[0]["runId"]
            assert text_of(again) == MOVED and not tool_calls(again)
            shown = snapshot_of(await ws.run({"type": "reattach", "threadId": thread}))
            assert shown[-1]["role"] == "assistant" and shown[-1]["content"] == MOVED
            assert sum(m["role"] == "tool" for m in shown if m.get("toolCallId")) == 2


def ready_pids(caplog: pytest.LogCaptureFixture) -> set[int]:
    """The workers the pool said were ready (``WorkerPool._connected``'s line), by pid."""
    said = (re.search(r"\(pid (\d+)\) is ready", r.getMessage()) for r in caplog.records)
    return {int(match[1]) for match in said if match}


async def owed_reply_followed(
    ws: AgUiSocket,
) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
    """The gateway's own runs that ask again for an owed reply, as a tab follows them, up to
    the one that finishes: those cut off before it (their worker died), and that one."""
    cut: list[list[dict[str, Any]]] = []
    while True:
        run = await ws.until_end(START)
        assert run[0]["type"] == "RUN_STARTED", run[0]
        assert run[0]["runId"].startswith(FINISHING), run[0]
        if run[-1]["type"] == "RUN_FINISHED":
            return cut, run
        assert run[-1]["code"] == "RUN_INTERRUPTED", run[-1]
        cut.append(run)
        assert len(cut) < FINISHING_ATTEMPTS, "asked again past the bound"


@asynccontextmanager
async def workers_calling(
    provider: ChatCompletions,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    **settings: Any,
) -> AsyncIterator[RunningGateway]:
    """Two workers whose model is the local ``provider``: they inherit its address from
    the environment, as a deployment's workers inherit the gateway's."""
    for name, value in provider.env().items():
        monkeypatch.setenv(name, value)
    async with (
        provider.running(),
        running_gateway(
            workers=2, db=str(tmp_path / "threads.db"), model=provider.model_name, **settings
        ) as gateway,
    ):
        yield gateway


async def test_a_model_that_stalls_in_a_worker_is_stopped_as_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # The workers call a local provider (its address in the environment they inherit),
    # which sends a reply's first chunks and then nothing.
    provider = ChatCompletions()
    async with (
        workers_calling(
            provider,
            tmp_path,
            monkeypatch,
            model_timeout=STALL,
            log_format="json",
            log_level="info",
        ) as gateway,
        gateway.socket() as ws,
    ):
        pool_of(gateway)
        thread = new_id("t")
        # A first turn, so that the worker's first model call is not the one timed.
        assert outcome(await ws.run(user_input(thread, "안녕"))) == {"type": "success"}
        provider.fail_next(Fault.STALLS)
        started = time.perf_counter()
        events = await ws.run(user_input(thread, "자기소개를 길게 해 주세요"))
        elapsed = time.perf_counter() - started
        error = events[-1]
        assert error["type"] == "RUN_ERROR" and error["code"] == "AGENT_ERROR", error
        assert f"The model sent nothing for {STALL:g} s" in error["message"]
        assert any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events)
        assert STALL <= elapsed < STALL + scaled(3)
        assert provider.abandoned == 1, "the stalled stream was closed"
        after = await ws.run(user_input(thread, "안녕"))
        assert outcome(after) == {"type": "success"} and text_of(after).startswith("안녕하세요")
    # The worker's log line names it, and the run, as a line of the main process would.
    lines = [json.loads(line) for line in capfd.readouterr().err.splitlines() if line[:1] == "{"]
    [stalled] = [line for line in lines if "sent nothing" in line["message"]]
    assert stalled["worker"] in (1, 2) and stalled["logger"] == "gateway.adk.workers.worker"
    assert (stalled["threadId"], stalled["runId"]) == (thread, events[0]["runId"])
    assert {line["worker"] for line in lines if "serves runs" in line["message"]} == {1, 2}


async def test_a_provider_failure_in_a_worker_is_the_coded_error_of_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What tests/models/test_failures.py checks in one process: the provider's failure,
    # which the model-call plugin records in the worker, is the run's code and sentence.
    provider = ChatCompletions()
    async with (
        workers_calling(provider, tmp_path, monkeypatch) as gateway,
        gateway.socket() as ws,
    ):
        pool_of(gateway)
        thread = new_id("t")
        failures = [
            (Fault.UNAUTHORIZED, "AGENT_ERROR", "refused the gateway's credentials"),
            (Fault.RATE_LIMITED, "RATE_LIMIT_EXCEEDED", "try again in 7 s"),
            (Fault.SERVER_ERROR, "AGENT_ERROR", "The model provider failed (HTTP 500)"),
        ]
        for fault, code, sentence in failures:
            provider.fail_next(fault)
            error = (await ws.run(user_input(thread, "안녕")))[-1]
            assert error["type"] == "RUN_ERROR" and error["code"] == code, error
            assert sentence in error["message"] and "error id" not in error["message"]
        await provider.stop()
        error = (await ws.run(user_input(thread, "안녕")))[-1]
        assert error["message"] == "The model cannot be reached right now; try again in a moment."
        await provider.start()
        assert outcome(await ws.run(user_input(thread, "안녕"))) == {"type": "success"}


async def test_a_hub_that_takes_events_slowly_holds_a_window_of_them_not_the_whole_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hub takes each event of a run 20 ms after the last, while the worker's model
    # streams a reply of ~80 chunks at once: the worker waits instead of sending it all.
    run = Engine.run

    def slowly(engine: Engine, **order: Any) -> AsyncGenerator[Any, None]:
        async def taken_slowly() -> AsyncGenerator[Any, None]:
            async with aclosing(run(engine, **order)) as events:
                async for event in events:
                    yield event
                    await asyncio.sleep(0.02)

        return taken_slowly()

    monkeypatch.setattr(Engine, "run", slowly)
    db = str(tmp_path / "threads.db")
    async with running_gateway(workers=2, db=db, scripted_pace_ms=0.0) as gateway:
        pool = pool_of(gateway)
        async with gateway.socket() as ws:
            events = await ws.run(user_input(new_id("t"), "자기소개를 길게 해 주세요"))
        chunks = sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events)
        assert outcome(events) == {"type": "success"} and chunks > 2 * WINDOW
        assert 0 < pool.most_held <= WINDOW


async def test_adks_spans_in_a_worker_are_children_of_the_runs_span_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This process records its spans in memory; the workers export theirs by OTEL_*, as
    # the main process of a real server would, to a collector on loopback.
    spans = recorded_spans()
    with OtlpReceiver() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
        thread = new_id("t")
        async with running_gateway(workers=2, db=str(tmp_path / "threads.db")) as gateway:
            async with gateway.socket() as ws:
                first = await ws.run(user_input(thread, FLAGSHIP))
            assert tool_calls(first, "navigateToScreen")
        # The workers sent what they had batched as they exited, with the gateway.
        [run] = named(of_threads(spans.get_finished_spans(), thread), "gateway_run")
        assert run.context is not None
        # The worker's appends are committed here, in the run's context: on its span.
        assert [e for e in run.events if e.name == "store_commit"]
        trace_id, run_id = f"{run.context.trace_id:032x}", f"{run.context.span_id:016x}"
        under_run = [s for s in collector.spans if s.parent_span_id == run_id]
        assert under_run and all(s.trace_id == trace_id for s in under_run)
        [tool] = collector.named("execute_tool find_screen")
        assert tool.trace_id == trace_id


async def test_a2ui_runs_in_a_worker_and_its_card_is_checked_against_the_threads_surfaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The card of R-1042, a press on its approve button, a person's approval: the update
    # the tool then shows is checked against the card as the thread holds it, which the
    # worker asks the main process for. The decision is made in a worker, not here.
    decided_here: list[str] = []
    decide = work_requests._decide

    async def here(request_id: str, decision: str, tool_context: Any) -> dict[str, Any]:
        decided_here.append(request_id)
        return await decide(request_id, decision, tool_context)

    monkeypatch.setattr(work_requests, "_decide", here)
    thread = new_id("t")
    pressed = {
        "name": "approve",
        "surfaceId": CARD,
        "sourceComponentId": "approve",
        "timestamp": "2026-12-05T10:00:00Z",
        "context": {"requestId": "R-1042", "status": "pending"},
    }
    press = user_input(thread, "", context=BASIC) | {
        "messages": [],
        "forwardedProps": {"a2uiAction": {"userAction": pressed}},
    }
    async with (
        running_gateway(workers=2, db=str(tmp_path / "threads.db")) as gateway,
        gateway.socket() as ws,
    ):
        shown = await ws.run(user_input(thread, "R-1042 보여줘", context=BASIC))
        assert [e["activityType"] for e in shown if e["type"] == "ACTIVITY_SNAPSHOT"] == [
            "a2ui-surface"
        ]
        [interrupt] = outcome(await ws.run(press))["interrupts"]
        answer = user_input(thread, "", context=BASIC) | {"messages": []}
        answer["resume"] = [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        ]
        approved = await ws.run(answer)
    assert text_of(approved) == "R-1042 요청을 승인했습니다."
    [update] = [e for e in approved if e["type"] == "ACTIVITY_SNAPSHOT"]
    changed = [
        op["updateDataModel"] for op in update["content"]["operations"] if "updateDataModel" in op
    ]
    assert changed[0]["value"]["status"] == "approved"
    assert decided_here == []
