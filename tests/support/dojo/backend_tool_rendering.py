"""The dojo's backend tool rendering: a server tool (``get_weather``) whose result the page
draws as a card from the tool call's result, while the agent sums it up in words. A page
that declares a tool of its own (``change_background``) may get both called in one turn."""

from pathlib import Path

from google.adk.agents import LlmAgent

from gateway.models.script import ScriptLlm

_WEATHER = {
    "seoul": {"temperature": 21, "conditions": "sunny", "humidity": 40},
    "london": {"temperature": 12, "conditions": "rain", "humidity": 85},
}


def get_weather(location: str) -> dict[str, object]:
    """Gets the current weather of a city.

    Args:
        location: the city's name.
    """
    found = _WEATHER.get(
        location.lower(), {"temperature": 18, "conditions": "cloudy", "humidity": 60}
    )
    return {"location": location, **found}


root_agent = LlmAgent(
    name="weather_reporter",
    model=ScriptLlm.from_file(Path(__file__).parent / "scripts" / "backend_tool_rendering.json"),
    instruction="Answer weather questions with get_weather; the page shows its result.",
    tools=[get_weather],
)
