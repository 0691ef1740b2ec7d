"""An App built without resumability, as many are: nothing in a plain turn pauses, so it is
served as it is. A browser tool, an approval or a long-running tool (an editor's review)
would pause its run, which it cannot do.
"""

from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.tools import FunctionTool, LongRunningFunctionTool

from gateway.models.script import ScriptLlm

NOTES: list[str] = []


def save_note(text: str) -> dict[str, str]:
    """Saves a note."""
    NOTES.append(text)
    return {"saved": text}


def delete_notes() -> dict[str, int]:
    """Deletes every note."""
    count = len(NOTES)
    NOTES.clear()
    return {"deleted": count}


def ask_editor(note: str) -> dict[str, str]:
    """Asks an editor to review a note; the answer comes later."""
    NOTES.append(f"review requested: {note}")
    return {"status": "pending", "ticket": "R-1"}


app = App(
    name="notes",
    root_agent=LlmAgent(
        name="notes",
        model=ScriptLlm.from_file(Path(__file__).with_name("notes.json")),
        instruction="Keep the user's notes.",
        tools=[
            save_note,
            FunctionTool(delete_notes, require_confirmation=True),
            LongRunningFunctionTool(ask_editor),
        ],
    ),
)
