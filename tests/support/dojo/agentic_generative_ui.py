"""The dojo's agentic generative UI: the agent makes a plan and works through it, and the
page draws the plan's progress from the state (``steps``), which each tool call changes and
the gateway streams as STATE_DELTA. ``create_plan`` returns the plan as a pydantic model,
as the dojo's tools do."""

from pathlib import Path
from typing import Literal

from google.adk.agents import LlmAgent
from google.adk.tools.tool_context import ToolContext
from pydantic import BaseModel

from gateway.models.script import ScriptLlm


class Step(BaseModel):
    description: str
    status: Literal["pending", "completed"] = "pending"


class Plan(BaseModel):
    steps: list[Step]


def create_plan(steps: list[str], tool_context: ToolContext) -> Plan:
    """Starts a plan with these steps, all pending.

    Args:
        steps: what to do, in order, a few words each.
    """
    plan = Plan(steps=[Step(description=step) for step in steps])
    tool_context.state["steps"] = plan.model_dump()["steps"]
    return plan


def update_plan_step(index: int, status: str, tool_context: ToolContext) -> dict[str, object]:
    """Marks one step of the plan.

    Args:
        index: the step's position, from 0.
        status: "pending" or "completed".
    """
    steps = [dict(step) for step in tool_context.state.get("steps", [])]
    if not 0 <= index < len(steps):
        return {"error": f"there is no step {index}"}
    steps[index]["status"] = status
    tool_context.state["steps"] = steps
    return {
        "index": index,
        "status": status,
        "left": sum(s["status"] != "completed" for s in steps),
    }


root_agent = LlmAgent(
    name="planner",
    model=ScriptLlm.from_file(Path(__file__).parent / "scripts" / "agentic_generative_ui.json"),
    instruction=(
        "Plan with create_plan, then complete each step with update_plan_step. Do not repeat "
        "the plan in a message."
    ),
    tools=[create_plan, update_plan_step],
)
