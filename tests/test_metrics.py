"""What ``gateway.metrics`` counts: a run by how its events ended it, every gateway alone,
nothing at all when off; and the settings that would expose metrics to anyone refused."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

import pytest

from gateway import metrics
from gateway import wire as p
from gateway.auth import AuthSettingsError
from gateway.config import Settings, load
from gateway.doors.scrape import check_settings
from gateway.metrics import OFF, Prometheus, sample
from gateway.store import StoreError
from gateway.store.group_commit import GroupCommit
from gateway.store.writes import Probe, Write

pytestmark = pytest.mark.unit

T, R = "t-1", "run-1"


def started() -> p.RunStarted:
    return p.RunStarted(thread_id=T, run_id=R, protocol_version=p.PROTOCOL_VERSION)


def finished(outcome: p.Outcome | None) -> p.RunFinished:
    return p.RunFinished(thread_id=T, run_id=R, outcome=outcome)


@pytest.mark.parametrize(
    ("end", "outcome", "code"),
    [
        (finished(p.SuccessOutcome()), "success", ""),
        (finished(None), "success", ""),
        (finished(p.SuccessOutcome(pending_tool_call_ids=["c1"])), "client_tools", ""),
        (finished(p.CancelledOutcome()), "cancelled", ""),
        (
            finished(p.InterruptOutcome(interrupts=[p.Interrupt(id="i", reason="x")])),
            "interrupt",
            "",
        ),
        (
            p.RunError(message="no", code="SERVICE_QUOTA_EXCEEDED"),
            "error",
            "SERVICE_QUOTA_EXCEEDED",
        ),
        # A code nobody bounded would be a label without end: it counts as "other".
        (p.RunError(message="no", code="made-up-by-a-plugin"), "error", "other"),
    ],
)
def test_a_run_is_counted_by_how_it_ended(end: p.Event, outcome: str, code: str) -> None:
    counted = Prometheus()
    clock = counted.run_clock()
    text = p.TextMessageContent(message_id="m", delta="hi")
    clock.saw([started(), text])
    clock.saw([text, end])
    clock.saw([end])  # told twice, counted once
    assert sample(counted, "gateway_runs_total", outcome=outcome, code=code) == 1
    assert sample(counted, "gateway_run_started_seconds_count") == 1
    assert sample(counted, "gateway_run_first_text_seconds_count") == 1
    assert sample(counted, "gateway_run_seconds_count") == 1


def test_approvals_asked_are_counted_from_the_runs_end() -> None:
    counted = Prometheus()
    asked = [p.Interrupt(id=f"i{n}", reason="tool_call") for n in range(2)]
    counted.run_clock().saw([started(), finished(p.InterruptOutcome(interrupts=asked))])
    assert sample(counted, "gateway_approvals_asked_total") == 2


def test_each_registry_counts_alone() -> None:
    one, other = Prometheus(), Prometheus()
    one.refused("rate")
    assert sample(one, "gateway_limit_refusals_total", limit="rate") == 1
    assert sample(other, "gateway_limit_refusals_total", limit="rate") is None


def test_gauges_read_what_is_counted_elsewhere_at_each_scrape() -> None:
    counted = Prometheus()
    running = [3]
    counted.watch_runs(lambda: running[0])
    assert sample(counted, "gateway_runs_in_progress") == 3
    running[0] = 0
    assert sample(counted, "gateway_runs_in_progress") == 0


def test_metrics_off_count_nothing() -> None:
    assert metrics.for_setting("off") is OFF
    assert OFF.run_clock() is None
    OFF.refused("rate")
    assert OFF.exposition() == b"" and sample(OFF, "gateway_runs_total") is None
    assert isinstance(metrics.for_setting("on"), Prometheus)


def test_the_metrics_setting_takes_on_or_off() -> None:
    assert load(environ={"GATEWAY_METRICS": "on"}).metrics == "on"
    with pytest.raises(SystemExit, match="GATEWAY_METRICS must be one of off, on"):
        load(environ={"GATEWAY_METRICS": "yes"})


def test_metrics_for_token_users_need_a_credential_of_their_own() -> None:
    with pytest.raises(AuthSettingsError, match="needs GATEWAY_METRICS_TOKEN"):
        check_settings(Settings(auth="jwt", metrics="on"))
    with pytest.raises(AuthSettingsError, match="at least 16 bytes"):
        check_settings(Settings(metrics="on", metrics_token="short"))
    check_settings(Settings(auth="jwt", metrics="on", metrics_token="x" * 16))
    check_settings(Settings(auth="dev", metrics="on"))  # this machine only
    check_settings(Settings(auth="jwt"))  # off: nothing to guard


def test_only_the_counting_metrics_import_prometheus_client_and_only_when_made() -> None:
    """With metrics off the gateway never imports prometheus_client: every import of it is
    inside a function of ``gateway.metrics`` (or for the type checker)."""
    package = Path(metrics.__file__).parent
    found = []
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                names += (
                    [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
                )
                if any(name.split(".")[0] == "prometheus_client" for name in names):
                    found.append((path.relative_to(package).as_posix(), node.col_offset))
    assert found and all(where == "metrics.py" and indent > 0 for where, indent in found)


async def test_the_store_writers_transactions_are_timed_and_failures_counted() -> None:
    counted = Prometheus()
    failing = [False]

    async def commit(writes: Sequence[Write]) -> list[object]:
        if failing[0]:
            raise OSError("disk gone")
        return [None for _ in writes]

    writer = GroupCommit(commit, lambda _healthy: None)
    writer.metrics = counted
    await writer.submit(Probe())
    failing[0] = True
    with pytest.raises(StoreError):
        await writer.submit(Probe())
    await writer.close()
    assert sample(counted, "gateway_store_commit_seconds_count") == 2
    assert sample(counted, "gateway_store_writes_total") == 1
    assert sample(counted, "gateway_store_commit_failures_total") == 1
