"""A recipe the user and the agent edit together: AG-UI's shared state as the dojo's
shared-state example uses it, written here for the gateway's tests.

The recipe lives in the session's state under ``recipe``. Before the agent runs,
``start_recipe`` puts a starter recipe there if the thread has none; before each model
call, ``show_recipe`` puts the recipe as it is now into the system instruction, so the
model works from whatever the user changed on the page (sent back as
``RunAgentInput.state``). ``rename_recipe`` is how the model changes it; the page sees
that as a STATE_DELTA. Serve it with
``agent-gateway serve tests.support.dojo.shared_state:root_agent``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.tools.tool_context import ToolContext

from gateway.models.script import ScriptLlm

RECIPE = "recipe"

STARTER_RECIPE: dict[str, Any] = {
    "title": "Weeknight pancakes",
    "servings": 2,
    "ingredients": [
        {"name": "flour", "amount": "1 cup"},
        {"name": "milk", "amount": "1 cup"},
        {"name": "egg", "amount": "1"},
    ],
    "steps": ["Whisk everything together.", "Cook on a hot pan until golden."],
}


def start_recipe(callback_context: CallbackContext) -> None:
    """A new thread starts from the starter recipe; an existing one keeps its own."""
    if RECIPE not in callback_context.state:
        callback_context.state[RECIPE] = STARTER_RECIPE


def show_recipe(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    """The model sees the recipe as the page shows it now, the user's edits included."""
    recipe = callback_context.state.get(RECIPE, STARTER_RECIPE)
    llm_request.append_instructions(
        ["The recipe on the user's screen right now:\n" + json.dumps(recipe, ensure_ascii=False)]
    )


def rename_recipe(title: str, tool_context: ToolContext) -> dict[str, str]:
    """Gives the recipe on the user's screen a new title, keeping everything else."""
    recipe = dict(tool_context.state.get(RECIPE) or STARTER_RECIPE)
    recipe["title"] = title
    tool_context.state[RECIPE] = recipe
    return {"status": "renamed", "title": title}


root_agent = LlmAgent(
    name="recipe_helper",
    model=ScriptLlm.from_file(Path(__file__).with_suffix(".json")),
    instruction="You help the user improve the recipe on their screen. Be brief.",
    tools=[rename_recipe],
    before_agent_callback=start_recipe,
    before_model_callback=show_recipe,
)
