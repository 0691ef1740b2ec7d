"""Which run of which agent made each event, marked on the event for the stream and the store.

ADK runs a whole tree of agents (transfers between ``sub_agents``, Sequential, Parallel and
Loop agents) in one invocation, and tags each event with its author only. An agent that
runs twice in one invocation (a LoopAgent's iterations) is the same author both times, and
a ParallelAgent's children interleave. ``AttributionPlugin`` reads the events in the order
ADK yields them, the order the translator and the store see, and marks each sub-agent
event with the run of that agent it belongs to (``custom_metadata["agui"]["subagent"]``):

- the root agent speaks for itself: its events carry no mark;
- an agent's run begins with its first event and is named after it (``name/event id``);
  its parent is the run of its nearest ancestor below the root that is running;
- the run ends with the agent's ``end_of_agent`` event: ADK ends every agent of a
  resumable App so (a paused agent does not end, and a resumed invocation starts anew).

A mark rides on the event into the store, so a snapshot shows who said what exactly as the
live stream did (``gateway.translate.history``), and the translator needs no second reading of it.
"""

from __future__ import annotations

import collections
import dataclasses

from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.plugins.base_plugin import BasePlugin

from gateway.context import event_metadata, stamp

__all__ = ["AttributionPlugin", "Mark", "mark_of"]

# Where the mark is, under the gateway's key of custom_metadata.
SUBAGENT_KEY = "subagent"
# Invocations remembered at once: a paused one is never ended, so the oldest are dropped.
MAX_INVOCATIONS = 1024


@dataclasses.dataclass(frozen=True, slots=True)
class Mark:
    """The run of a sub-agent an event belongs to, and the run of its parent (None: the root)."""

    run_id: str
    parent: str | None


def mark_of(event: Event) -> Mark | None:
    """The mark ``AttributionPlugin`` put on an event; None for the root's and the user's."""
    found = event_metadata(event).get(SUBAGENT_KEY)
    if not isinstance(found, dict) or not isinstance(found.get("id"), str):
        return None
    parent = found.get("parent")
    return Mark(found["id"], parent if isinstance(parent, str) else None)


class AttributionPlugin(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="agent_gateway_attribution")
        # invocation id -> agent name -> the id of that agent's run in progress
        self._running: collections.OrderedDict[str, dict[str, str]] = collections.OrderedDict()

    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        if not isinstance(invocation_context.agent, BaseAgent):
            return None  # a workflow node, not an agent of a tree
        root = invocation_context.agent.root_agent
        agent = root.find_agent(event.author) if event.author != root.name else None
        if agent is None:
            return None  # the root, the user, or an author outside the tree
        running = self._invocation(event.invocation_id)
        run_id = running.get(agent.name)
        if run_id is None:
            run_id = running[agent.name] = f"{agent.name}/{event.id}"
        parent = _running_ancestor(agent, root, running)
        stamp(event, SUBAGENT_KEY, {"id": run_id, "parent": parent})
        if event.actions and event.actions.end_of_agent:
            del running[agent.name]
        return None  # changed in place: later plugins still see the event

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        self._running.pop(invocation_context.invocation_id, None)

    def _invocation(self, invocation_id: str) -> dict[str, str]:
        running = self._running.get(invocation_id)
        if running is None:
            running = self._running[invocation_id] = {}
            while len(self._running) > MAX_INVOCATIONS:
                self._running.popitem(last=False)
        return running


def _running_ancestor(agent: BaseAgent, root: BaseAgent, running: dict[str, str]) -> str | None:
    parent = agent.parent_agent
    while parent is not None and parent is not root:
        if parent.name in running:
            return running[parent.name]
        parent = parent.parent_agent
    return None
