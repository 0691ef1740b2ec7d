"""Trees of agents that each speak a script, for the tests of who said what: ``speaker``
makes one (a Speaker behind an LlmAgent), ``parallel_tree`` runs two at once and a third
after them, and ``workflow_agents`` quiets ADK's warning about its workflow agents."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent, ParallelAgent, SequentialAgent

from tests.support.speakers import Speaker, say


@contextmanager
def workflow_agents() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # ADK 2 prefers its Workflow
        yield


def speaker(name: str, *turns: list[Any], description: str = "", **kw: Any) -> LlmAgent:
    return LlmAgent(
        name=name,
        model=Speaker(turns=[list(t) for t in turns], **kw),
        instruction=f"You are {name}.",
        description=description,
    )


def parallel_tree() -> BaseAgent:
    with workflow_agents():
        return SequentialAgent(
            name="research",
            sub_agents=[
                ParallelAgent(
                    name="fan_out",
                    sub_agents=[
                        speaker("left", [say("one two three four five six")], pace=0.003),
                        speaker("right", [say("alpha beta gamma delta epsilon")], pace=0.004),
                    ],
                ),
                speaker("summary", [say("both done")]),
            ],
        )
