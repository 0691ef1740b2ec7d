"""agent-gateway-chat (gateway/cli/chat.py) against a real gateway: the browser's answer is
what the user hears."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from scripts._bench import LocalGateway, local_gateway
from tests.support.processes import script_report

pytestmark = pytest.mark.process

OPEN_LIST = "업무 요청 목록 화면 열어줘\n"
OPENED = "이동했습니다"


@pytest.fixture(scope="module")
def gateway() -> Iterator[LocalGateway]:
    with local_gateway() as running:
        yield running


def chat(gateway: LocalGateway, line: str, *flags: str) -> str:
    """Runs agent-gateway-chat with ``line`` on stdin until stdin ends; returns what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli.chat", "--url", gateway.ws_url(), *flags],
        input=line,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=30,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_chat_says_the_screen_opened_when_the_browser_navigated(gateway: LocalGateway) -> None:
    output = chat(gateway, OPEN_LIST, "--auto", "navigated")
    assert "[tool call] navigateToScreen" in output
    assert OPENED in output


def test_chat_never_claims_the_screen_opened_when_the_browser_denied(
    gateway: LocalGateway,
) -> None:
    output = chat(gateway, OPEN_LIST, "--auto", "denied")
    # The denial reached the model and was answered, so the absence below means something.
    assert '"status": "denied"' in output
    assert "이동하지 못했습니다" in output
    assert OPENED not in output


def test_the_memory_benchmark_reads_the_servers_rss_after_every_round() -> None:
    report = script_report("scripts.bench_memory", "--rounds 2 --clients 3 --turns 2 --size 20000")
    rounds = [line for line in report.splitlines() if line.startswith("round ")]
    assert len(rounds) == 2 and all("MiB" in line for line in rounds), report
    assert "clients failed" not in report, report
    assert "RSS after the last round / after the first:" in report


def test_the_latency_benchmark_builds_its_long_thread_and_times_both() -> None:
    # Building the thread takes one client hundreds of turns: the rate limit must not stop it.
    report = script_report("scripts.bench_latency", "--cancels 2 --reattaches 2 --messages 200")
    assert "cancel mid-reply" in report and "reattach, 200 messages" in report, report
