"""ADK's session state: tools write it (the session's own keys, the user's ``user:`` keys,
and ``temp:`` scratch that lives for one invocation), a callback gives it defaults, and the
instruction reads it through ``{key}`` templates on every turn."""

from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.tools.tool_context import ToolContext

from gateway.models.script import ScriptLlm


def remember_name(name: str, tool_context: ToolContext) -> dict[str, str]:
    """Remembers what the user is called.

    Args:
        name: the user's name.
    """
    tool_context.state["user_name"] = name
    tool_context.state["user:greeting"] = f"Hi {name}"
    tool_context.state["temp:raw_name"] = name
    return {"name": name}


def who_am_i(tool_context: ToolContext) -> dict[str, object]:
    """Tells the user what is remembered about them."""
    return {
        "name": tool_context.state.get("user_name"),
        "greeting": tool_context.state.get("user:greeting"),
    }


def defaults(callback_context: CallbackContext) -> None:
    if "user_name" not in callback_context.state:
        callback_context.state["user_name"] = "stranger"


root_agent = LlmAgent(
    name="name_keeper",
    model=ScriptLlm.from_file(Path(__file__).parent / "scripts" / "instruction_state.json"),
    instruction="You are talking to {user_name}. Greet them with '{user:greeting?}'.",
    tools=[remember_name, who_am_i],
    before_agent_callback=defaults,
)
