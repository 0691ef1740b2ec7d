"""Tools that return typed objects, as ADK's samples often do: a pydantic model and a
dataclass. A client is shown each as the JSON object it is, as ag-ui-adk shows it."""

import dataclasses
from pathlib import Path

import pydantic
from google.adk.agents import LlmAgent

from gateway.models.script import ScriptLlm


class Weather(pydantic.BaseModel):
    city: str
    celsius: float
    sky: str = "clear"


@dataclasses.dataclass
class Forecast:
    city: str
    days: list[str]


def get_weather(city: str) -> Weather:
    """The weather in a city now."""
    return Weather(city=city, celsius=21.5)


def get_forecast(city: str) -> Forecast:
    """The next days' skies in a city."""
    return Forecast(city=city, days=["sun", "rain"])


root_agent = LlmAgent(
    name="weather",
    model=ScriptLlm.from_file(Path(__file__).with_name("results.json")),
    instruction="Use the tools.",
    tools=[get_weather, get_forecast],
)
