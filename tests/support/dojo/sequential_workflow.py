"""ADK's sequential workflow: three LlmAgents in a SequentialAgent, each handing its words to
the next through ``output_key`` state that the next one's instruction reads."""

from pathlib import Path

from google.adk.agents import LlmAgent, SequentialAgent

from gateway.models.script import ScriptLlm

_scripts = Path(__file__).parent / "scripts"

writer = LlmAgent(
    name="writer",
    model=ScriptLlm.from_file(_scripts / "sequential_writer.json"),
    instruction="Write a first draft of what the user asks for.",
    output_key="draft",
)
reviewer = LlmAgent(
    name="reviewer",
    model=ScriptLlm.from_file(_scripts / "sequential_reviewer.json"),
    instruction="Review this draft:\n{draft}",
    output_key="review",
)
refiner = LlmAgent(
    name="refiner",
    model=ScriptLlm.from_file(_scripts / "sequential_refiner.json"),
    instruction="Improve the draft:\n{draft}\nwith the review:\n{review}",
    output_key="final",
)
root_agent = SequentialAgent(
    name="writing_pipeline",
    description="Writes, reviews and refines.",
    sub_agents=[writer, reviewer, refiner],
)
