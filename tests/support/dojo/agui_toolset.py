"""The dojo's agentic chat, written again: a chat agent that uses the page's own tools.

As the dojo writes it, the agent holds ag-ui-adk's ``AGUIToolset()`` among its tools, the
placeholder for whatever tools the page declares in a run (here ``change_background``,
which the page performs); it has no tool of its own.
"""

from __future__ import annotations

from pathlib import Path

from ag_ui_adk import AGUIToolset
from google.adk.agents import LlmAgent

from gateway.models.script import ScriptLlm

SCRIPT = Path(__file__).with_suffix(".json")

CHANGE_BACKGROUND = {
    "name": "change_background",
    "description": "Changes the page's background to a CSS colour or gradient.",
    "parameters": {
        "type": "object",
        "properties": {"background": {"type": "string"}},
        "required": ["background"],
    },
}


def chat_agent() -> LlmAgent:
    return LlmAgent(
        name="ChatAgent",
        model=ScriptLlm.from_file(SCRIPT),
        instruction="You are a helpful assistant; use the page's tools when they help.",
        tools=[AGUIToolset()],
    )


root_agent = chat_agent()
