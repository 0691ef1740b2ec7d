"""The dojo's agentic chat: a plain assistant with nothing but its instruction, and the
frontend's own tools (a page may declare one, such as changing its background colour),
which the gateway offers to every agent without the agent naming them."""

from pathlib import Path

from google.adk.agents import LlmAgent

from gateway.models.script import ScriptLlm

root_agent = LlmAgent(
    name="agentic_chat",
    model=ScriptLlm.from_file(Path(__file__).parent / "scripts" / "agentic_chat.json"),
    instruction="You are a helpful assistant. Keep answers short.",
)
