"""The demo agent, as the gateway hosts it: ``agent-gateway serve`` with no AGENT."""

from __future__ import annotations

import logging
from importlib.resources import files
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.models.base_llm import BaseLlm

from gateway.adk.hosting import Hosted
from gateway.config import Settings
from gateway.context import run_context
from gateway.examples.navigator import work_requests
from gateway.examples.navigator.policy import build_before_tool_callback
from gateway.examples.navigator.screens import catalog as screen_catalog
from gateway.examples.navigator.scripted import ScriptedLlm
from gateway.models import names
from gateway.tools import catalog as tool_catalog
from gateway.tools.adk import server_tools

log = logging.getLogger(__name__)

# Names told to the operator as not the demo's; bounded, as a client picks them.
_UNKNOWN_TOLD: set[str] = set()
UNKNOWN_TOLD_MOST = 100

# Threads are keyed by this name (the App's): another agent on the same database never
# sees them.
APP_NAME = "screen_navigator"

INSTRUCTION = """\
You are the assistant of a business web application, shown in a chat panel beside it.
To open a screen: call find_screen with what the user called it, pick the best result,
then call navigateToScreen with its screenId (and screenName). find_screen returns only
screens that fit; when it returns none, say nothing was found, suggest the menu or other
words, and open nothing. The browser answers with what really happened. Say the screen
opened ("이동했습니다") only when the status is "navigated"; for any other status tell
the user honestly that it did not open and why.
If navigateToScreen is not available, ask the user to open the screen from the menu.
To show a work request (R-1042), call show_work_request: the user may see it as a card,
with 승인 / 거절 buttons while it waits. A press on a card is the user's turn ("User
performed action ..."): approve calls approveWorkRequest, reject calls rejectWorkRequest;
a person confirms either before it runs. When the result's a2ui says the card was not
shown, describe the request in words.
Answer in the user's language."""


def load_catalog() -> tool_catalog.Catalog:
    """The demo's tool catalog, read from the package's data."""
    return tool_catalog.load(files(__package__) / "tools")


def build_agent(model: BaseLlm | str, catalog: tool_catalog.Catalog) -> LlmAgent:
    return LlmAgent(
        name=APP_NAME,
        model=model,
        instruction=instruction_with_context,
        tools=list(server_tools(catalog)),
        # The navigation policy runs on the server before any call reaches the browser.
        before_tool_callback=build_before_tool_callback(screen_catalog.load()),
    )


def instruction_with_context(context: ReadonlyContext) -> str:
    """The instruction, plus what the user's screen shows, from the run's allowed context."""
    entries = run_context(context)
    if not entries:
        return INSTRUCTION
    lines = "\n".join(f"- {key}: {value}" for key, value in sorted(entries.items()))
    return f"{INSTRUCTION}\n\nThe user's screen, as their browser reports it:\n{lines}"


def build_model(settings: Settings) -> BaseLlm | str:
    """GATEWAY_MODEL, or the offline scripted model when it names none or 'scripted'."""
    if settings.model in ("", "scripted"):
        return ScriptedLlm(pace_ms=settings.scripted_pace_ms)
    return names.build(settings.model, pace_ms=settings.scripted_pace_ms)


def profile(user_id: str) -> dict[str, Any]:
    """GET /me: the user, the screens they may open (the web client's menu) and their
    organisation's work requests (its list screen).

    A name the demo's directory lacks (``?user=alice``) may open nothing and sees no work
    request, which looks like a broken demo: the operator is told once, with the names
    it knows."""
    directory = screen_catalog.load()
    unknown = user_id not in directory.users and user_id not in _UNKNOWN_TOLD
    if unknown and len(_UNKNOWN_TOLD) < UNKNOWN_TOLD_MOST:
        _UNKNOWN_TOLD.add(user_id)
        log.warning(
            "%r is not one of the demo's users (%s): they may open no screen and see no"
            " work request (README: The demo's users)",
            user_id,
            ", ".join(directory.users),
        )
    return {**directory.profile(user_id), **work_requests.listed(user_id)}


def hosted(settings: Settings) -> Hosted:
    catalog = load_catalog()
    return Hosted(
        build_agent(build_model(settings), catalog),
        catalog=catalog,
        web=files(__package__) / "web",
        profile=profile,
    )
