"""A real ``agent-gateway`` started with the standard OTEL_* variables exports its spans
over OTLP/HTTP to a collector (here a local one, ``tests.support.traces.OtlpReceiver``):
a frontend's trace arrives continued from its traceparent down to the browser tool, and
what was still batched when SIGTERM stopped the process arrives too."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.agui import new_id, tool_calls, user_input
from tests.support.flagship import FLAGSHIP
from tests.support.processes import gateway_process, run_over_ws
from tests.support.traces import OtlpReceiver

pytestmark = pytest.mark.process

TRACE_ID = "4bf92f3577b34da6a3ce929d0eabcd02"
PARENT_ID = "00f067aa0ba90202"


async def test_a_frontends_trace_reaches_the_collector_down_to_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OtlpReceiver() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        # Nothing leaves the batch on its own before the process stops: SIGTERM sends it.
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")
        monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
        async with gateway_process(tmp_path / "g.db", tmp_path / "g.log") as (_, port):
            run_input = user_input(new_id("t"), FLAGSHIP) | {
                "forwardedProps": {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
            }
            events = await run_over_ws(port, run_input)
            assert tool_calls(events, "navigateToScreen")
            assert not collector.spans
        [run] = collector.named("gateway_run")
        assert (run.trace_id, run.parent_span_id) == (TRACE_ID, PARENT_ID)
        assert run.attributes["gateway.run_id"] == run_input["runId"]
        assert run.attributes["gateway.thread_id"] == run_input["threadId"]
        assert run.attributes["enduser.id"] == "demo"
        assert run.service == "agent-gateway"
        [tool] = collector.named("execute_tool navigateToScreen")
        assert tool.trace_id == TRACE_ID
        by_id = {span.span_id: span for span in collector.spans}
        chain, span = [], tool
        while span.parent_span_id in by_id:
            span = by_id[span.parent_span_id]
            chain.append(span.name)
        assert chain[-1] == "gateway_run" and span is run
        # The operator is told where the spans go, once, at start.
        assert (
            f"traces: spans are exported to {collector.endpoint}"
            in (tmp_path / "g.log").read_text()
        )
