"""agent-gateway-chat (gateway/cli/chat.py) against a real gateway: the browser's answer is
what the user hears, an approval is answered by the next line typed, piped input ends the
chat, and the gateway is found from an http:// address or the configured port."""

from __future__ import annotations

import os
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


def chat(gateway: LocalGateway, line: str, *flags: str, env: dict[str, str] | None = None) -> str:
    """Runs agent-gateway-chat with ``line`` on stdin until stdin ends; returns what it printed.

    ``--url`` is the gateway's socket unless ``flags`` name one, or ``env`` is given (the
    chat then finds the gateway itself)."""
    url = [] if env is not None or "--url" in flags else ["--url", gateway.ws_url()]
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli.chat", *url, *flags],
        input=line,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=30,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
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


def test_a_yes_approves_the_request_instead_of_superseding_it(gateway: LocalGateway) -> None:
    output = chat(gateway, "R-1042 승인해줘\nyes\n", "--user", "approver")
    # The interrupt reads as a sentence, in Hangul, not JSON with \\u escapes.
    assert "[approval] 업무 요청 R-1042 건을 승인합니다." in output
    assert "\\u" not in output
    assert "[approval] approved" in output
    assert '"approvedBy": "approver"' in output
    assert "R-1042 요청을 승인했습니다" in output


def test_a_no_rejects_with_the_reason_the_model_then_reads(gateway: LocalGateway) -> None:
    output = chat(gateway, "R-1042 승인해줘\nno\n이번 주는 안 됩니다\n", "--user", "approver")
    assert "[approval] rejected: 이번 주는 안 됩니다" in output
    assert "거절되어 진행하지 않았습니다 (이번 주는 안 됩니다)" in output


def test_piped_input_that_ends_at_a_question_ends_the_chat(gateway: LocalGateway) -> None:
    # No --auto and no --approve: stdin ends while the chat waits for an answer. It quits
    # (within chat()'s timeout, code 0), leaving the call and the approval open.
    assert "[tool call] navigateToScreen" in chat(gateway, OPEN_LIST)
    assert "[approval left open]" in chat(gateway, "R-1042 승인해줘\n", "--user", "approver")


def test_the_chat_takes_an_http_address(gateway: LocalGateway) -> None:
    output = chat(
        gateway, OPEN_LIST, "--auto", "navigated", "--url", f"http://127.0.0.1:{gateway.port}"
    )
    assert OPENED in output


def test_without_a_url_the_chat_finds_the_gateway_on_the_configured_port(
    gateway: LocalGateway,
) -> None:
    output = chat(
        gateway, OPEN_LIST, "--auto", "navigated", env={"GATEWAY_PORT": str(gateway.port)}
    )
    assert OPENED in output


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


def test_an_address_the_chat_cannot_use_is_a_sentence_not_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli.chat", "--url", "127.0.0.1:8080"],
        input="",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "is not a gateway address" in done.stdout and "Traceback" not in done.stderr
