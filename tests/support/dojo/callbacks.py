"""ADK's callbacks, every kind: before and after the agent, the model and each tool, and
on a tool's error, each leaving its mark in the session's state (as ADK's samples keep
counts and flags there), one of them in ``temp:`` state that stays on the server."""

from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from gateway.models.script import ScriptLlm


def look_up_order(order_id: str) -> dict[str, str]:
    """Finds an order.

    Args:
        order_id: the order's number, such as A-100.
    """
    if order_id != "A-100":
        raise LookupError(f"no order {order_id}")
    return {"order_id": order_id, "status": "shipped"}


def before_agent(callback_context: CallbackContext) -> None:
    callback_context.state["agent_runs"] = callback_context.state.get("agent_runs", 0) + 1


def after_agent(callback_context: CallbackContext) -> None:
    callback_context.state["last_agent"] = callback_context.agent_name


def before_model(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    callback_context.state["model_calls"] = callback_context.state.get("model_calls", 0) + 1
    callback_context.state["temp:request_size"] = len(llm_request.contents)


def after_model(callback_context: CallbackContext, llm_response: LlmResponse) -> None:
    if llm_response.content and not llm_response.partial:
        callback_context.state["model_replies"] = callback_context.state.get("model_replies", 0) + 1


def before_tool(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> None:
    tool_context.state["last_tool"] = tool.name
    args["order_id"] = str(args.get("order_id", "")).upper()


def after_tool(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: dict[str, Any]
) -> dict[str, Any]:
    tool_context.state["tool_calls"] = tool_context.state.get("tool_calls", 0) + 1
    return {**tool_response, "checked": True}


def on_tool_error(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, error: Exception
) -> dict[str, Any]:
    tool_context.state["tool_errors"] = tool_context.state.get("tool_errors", 0) + 1
    return {"order_id": args.get("order_id", ""), "status": "unknown"}


root_agent = LlmAgent(
    name="order_desk",
    model=ScriptLlm.from_file(Path(__file__).parent / "scripts" / "callbacks.json"),
    instruction="Look orders up with look_up_order.",
    tools=[look_up_order],
    before_agent_callback=before_agent,
    after_agent_callback=after_agent,
    before_model_callback=before_model,
    after_model_callback=after_model,
    before_tool_callback=before_tool,
    after_tool_callback=after_tool,
    on_tool_error_callback=on_tool_error,
)
