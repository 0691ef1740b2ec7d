"""The dojo's predictive state updates, written again: an agent that writes a document.

The page shows the document as the model writes it: ag-ui-adk is told, with
``ADKAgent(predict_state=[PredictStateMapping(...)])``, that ``write_document_local``'s
``document`` argument is the state's ``document``, and sends ``PredictState`` before the
call; after it, a ``confirm_changes`` call opens the page's confirm dialog. The module is
laid out as a dojo server module is: the ADK agent (``AGUIToolset()`` among its tools, for
the page's own tools), the ``ADKAgent`` around it, and a FastAPI ``app`` serving that.

``agent-gateway serve tests.support.dojo.predictive_state`` serves it unchanged;
``document_agent()`` makes a fresh agent for a test that serves it some other way.
"""

from __future__ import annotations

from pathlib import Path

from ag_ui_adk import ADKAgent, AGUIToolset, PredictStateMapping, add_adk_fastapi_endpoint
from fastapi import FastAPI
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.tools import ToolContext

from gateway.models.script import ScriptLlm

SCRIPT = Path(__file__).with_suffix(".json")

PREDICTIONS = [
    PredictStateMapping(state_key="document", tool="write_document_local", tool_argument="document")
]


def write_document_local(tool_context: ToolContext, document: str) -> dict[str, str]:
    """Writes the whole document, in markdown, even to change a few words of it.

    Args:
        document: the document, whole, in markdown
    """
    tool_context.state["document"] = document
    return {"status": "success", "message": "Document written."}


def start_with_an_empty_document(callback_context: CallbackContext) -> None:
    if "document" not in callback_context.state:
        callback_context.state["document"] = None


def document_agent() -> LlmAgent:
    return LlmAgent(
        name="DocumentAgent",
        model=ScriptLlm.from_file(SCRIPT),
        instruction=(
            "You help write documents. Write with the write_document_local tool, always the "
            "whole document; then say in one sentence what you changed."
        ),
        tools=[AGUIToolset(), write_document_local],
        before_agent_callback=start_with_an_empty_document,
    )


root_agent = document_agent()

adk_document_agent = ADKAgent(
    adk_agent=root_agent,
    app_name="demo_app",
    user_id="demo_user",
    session_timeout_seconds=3600,
    predict_state=PREDICTIONS,
)

app = FastAPI(title="Predictive state updates")
add_adk_fastapi_endpoint(app, adk_document_agent, path="/")
