"""Memory across a user's threads, as ADK's memory samples use it: ``PreloadMemoryTool``
puts what the user said before into every model call, and the model may ``load_memory``
to look something up.

Say "my favourite colour is teal" in one thread; ask "what is my favourite colour?" in
another and the agent looks it up. Another user asking gets no answer from it.
"""

from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.tools import load_memory
from google.adk.tools.preload_memory_tool import PreloadMemoryTool

from gateway.models.script import ScriptLlm

root_agent = LlmAgent(
    name="recall",
    model=ScriptLlm.from_file(Path(__file__).with_name("memory.json")),
    instruction="Answer from what the user told you in earlier conversations.",
    tools=[PreloadMemoryTool(), load_memory],
)
