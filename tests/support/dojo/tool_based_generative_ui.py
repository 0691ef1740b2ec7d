"""The dojo's tool-based generative UI: the page declares ``generate_haiku`` and renders
the haiku from the call's arguments; the agent only decides to call it."""

from pathlib import Path

from google.adk.agents import LlmAgent

from gateway.models.script import ScriptLlm

root_agent = LlmAgent(
    name="haiku_writer",
    model=ScriptLlm.from_file(Path(__file__).parent / "scripts" / "tool_based_generative_ui.json"),
    instruction="Write haikus by calling generate_haiku with Japanese lines and English ones.",
)
