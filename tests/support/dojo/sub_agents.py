"""ADK's transfer to sub-agents: a coordinator that answers nothing itself and hands each
request to the sub-agent whose description fits (``transfer_to_agent``), one of which has
a tool of its own. One script serves all three: each agent meets only the rules whose
tools it is offered."""

from pathlib import Path

from google.adk.agents import LlmAgent

from gateway.models.script import ScriptLlm

_model = ScriptLlm.from_file(Path(__file__).parent / "scripts" / "sub_agents.json")


def roll_die(sides: int) -> dict[str, int]:
    """Rolls a die.

    Args:
        sides: how many sides the die has.
    """
    return {"sides": sides, "result": 4 if sides >= 4 else 1}


greeter = LlmAgent(
    name="greeter",
    model=_model,
    description="Greets the user and says goodbye.",
    instruction="Greet the user warmly.",
)
dice_roller = LlmAgent(
    name="dice_roller",
    model=_model,
    description="Rolls dice for the user.",
    instruction="Roll dice with roll_die and say what came up.",
    tools=[roll_die],
)
root_agent = LlmAgent(
    name="coordinator",
    model=_model,
    instruction="Hand greetings to greeter and dice to dice_roller.",
    sub_agents=[greeter, dice_roller],
)
