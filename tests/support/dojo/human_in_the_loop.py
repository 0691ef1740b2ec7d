"""The dojo's human in the loop: the agent breaks a task into steps through a tool the
page declares and renders (``generate_task_steps``, a checklist the user edits), and goes on
with the steps the user kept. The agent carries no tool of its own: the page's tool comes
with each run, and its result is the user's choice."""

from pathlib import Path

from google.adk.agents import Agent

from gateway.models.script import ScriptLlm

root_agent = Agent(
    name="task_planner",
    model=ScriptLlm.from_file(Path(__file__).parent / "scripts" / "human_in_the_loop.json"),
    instruction=(
        "Break every task into steps by calling generate_task_steps, each step a couple of "
        "words in imperative form. Then carry out only the steps the user kept enabled."
    ),
)
