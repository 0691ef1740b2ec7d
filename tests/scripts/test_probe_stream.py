"""scripts/probe_stream.py on a small budget: the gateway's stamps are read back and each
step of a run's start and of its chunks is found, for both providers.

What it prints is for people; this checks that every stamp is still where it was put (a
gateway or ADK function renamed would leave its step out), never a speed.
"""

from __future__ import annotations

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


@pytest.mark.parametrize(("provider", "db"), [("chat-completions", "file"), ("gemini", "memory")])
def test_the_probe_times_every_step_of_a_start_and_of_a_chunk(provider: str, db: str) -> None:
    flags = f"--provider {provider} --db {db} --runs 3 --pace-ms 2"
    report = script_report("scripts.probe_stream", flags)
    assert f", {db} (" in report
    for step in (
        "door -> admitted",
        "open_thread",
        "adk._preprocess_async -> adk._handle_before_model_callback",
        "commit before the request: AppendEvent+AppendFrames",
        "model called -> first byte written",
        "TOTAL client send -> at the provider",
        "emitted -> delivered (outbox)",
        "TOTAL bytes read -> client reads",
    ):
        assert step in report, step
    assert "the first chunk:" in report and "later chunks:" in report
    # The gateway's CPU beside its steps: the door's is its thread's Python alone.
    assert next(line for line in report.splitlines() if "door -> admitted" in line).count("CPU")
    if provider == "chat-completions":  # its SDK's and httpx's steps to the request's write
        assert "sdk.create -> httpx.send" in report
        assert "httpcore.http11 -> net.write>" in report
    else:  # the gateway's request, google-genai's send, aiohttp's (the test extras have it)
        assert "gemini.request> -> gemini.request<" in report
        assert "genai.request_streamed -> genai.request_once" in report
        assert "aiohttp.request -> aiohttp.connect" in report


def test_gemini_is_probed_through_httpx_as_in_the_image() -> None:
    """``--httpx``: google-genai sends as it does where aiohttp is not installed."""
    flags = "--provider gemini --httpx --side adk --runs 3 --pace-ms 2"
    report = script_report("scripts.probe_stream", flags)
    assert "genai.request_once -> httpx.send" in report
    assert "aiohttp" not in report


def test_a_plain_runner_is_stamped_the_same_way() -> None:
    """``--side adk``: the steps ADK alone takes, to hold against the gateway's."""
    report = script_report("scripts.probe_stream", "--side adk --runs 3 --pace-ms 2")
    assert "a plain ADK Runner" in report
    for step in (
        "Runner called -> adk.run_async",
        "append_event> -> append_event<",
        "adk._preprocess_async -> adk._handle_before_model_callback",
        "sdk.create -> httpx.send",
        "TOTAL Runner called -> at the provider",
    ):
        assert step in report, step


def test_fine_stamps_split_the_door_and_adks_way_to_the_model() -> None:
    """``--fine``: the door's way to the driver, ADK's node runner, agent and flow, and each
    of its request processors, in the order a start reaches them."""
    report = script_report("scripts.probe_stream", "--fine --runs 3 --pace-ms 2")
    for step in (
        "client send -> its bytes at the door",
        "fine.acknowledge -> fine.ws_work",
        "fine.plan -> drive",
        "engine.run -> fine.consume",
        "fine._run_node_async -> append_event>",
        "fine._run_one_step_async -> adk._preprocess_async",
        "proc._agent_tools -> proc._dynamic_instructions",
        "TOTAL client send -> at the provider",
    ):
        assert step in report, step
