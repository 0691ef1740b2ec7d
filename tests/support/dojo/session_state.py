"""Callbacks that keep and check a thread's state, as ADK's session-state sample's do.

Every callback kind writes or asserts on state the others wrote; ``SEEN`` records which
user each callback ran for, so a test can tell that none ran for anyone but a user.
"""

from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse

from gateway.models.script import ScriptLlm

SEEN: list[tuple[str, str]] = []


def count_turn(callback_context: CallbackContext) -> None:
    SEEN.append(("before_agent", callback_context.user_id))
    state = callback_context.state
    state["turns"] = state.get("turns", 0) + 1
    state["temp:asked_model"] = False


def check_turn(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    SEEN.append(("before_model", callback_context.user_id))
    assert callback_context.state["turns"] >= 1, "before_agent_callback did not count"
    callback_context.state["temp:asked_model"] = True


def check_answer(callback_context: CallbackContext, llm_response: LlmResponse) -> None:
    SEEN.append(("after_model", callback_context.user_id))
    assert callback_context.state["temp:asked_model"], "before_model_callback did not run"


def check_reply(callback_context: CallbackContext) -> Any:
    SEEN.append(("after_agent", callback_context.user_id))
    reply = callback_context.state.get("last_reply", "")
    assert reply.startswith("This is turn"), f"unexpected reply in state: {reply!r}"


root_agent = LlmAgent(
    name="stateful",
    model=ScriptLlm.from_file(Path(__file__).with_name("session_state.json")),
    instruction="This is turn {turns} of the conversation.",
    output_key="last_reply",
    before_agent_callback=count_turn,
    before_model_callback=check_turn,
    after_model_callback=check_answer,
    after_agent_callback=check_reply,
)
