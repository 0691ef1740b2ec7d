"""Which agent of a tree is speaking, as AG-UI 1.0 subagent events: part of the translator.

AG-UI 1.0 attributes delegated work with ``subagentRunId`` and announces each invocation
with ``SUBAGENT_STARTED`` / ``SUBAGENT_FINISHED``; ``@ag-ui/client`` 1.0 checks the
lifecycle and keeps the id on the messages it builds. Here, from the marks
``gateway.translate.attribution`` put on ADK's events:

- a sub-agent's run is announced before the first event attributed to it, its parent
  first, and finished by its ``end_of_agent`` event;
- an ``AgentTool`` call announces the agent it runs (``parentToolCallId``), finished by the
  call's result: that agent runs in an invocation of its own, whose events ADK keeps;
- at the end of the run every invocation still open is closed: suspended when the run
  waits on a browser call or an approval, an error when the run was cancelled.

A ``RUN_ERROR`` ends everything; AG-UI expects no closing events after it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from gateway import wire as p
from gateway.translate.attribution import Mark

__all__ = ["CANCELLED", "Subagents"]

CANCELLED = "CANCELLED"


@dataclasses.dataclass(slots=True)
class _Open:
    started: p.SubagentStarted
    interrupts: list[str] = dataclasses.field(default_factory=list)


class Subagents:
    """The subagent invocations one run has announced and not yet closed."""

    def __init__(
        self,
        descriptions: Mapping[str, str] | None = None,
        agent_tools: Mapping[str, str] | None = None,
    ) -> None:
        # agent name -> description; AgentTool name -> the agent it runs
        self.descriptions = descriptions or {}
        self.agent_tools = agent_tools or {}
        self.open: dict[str, _Open] = {}
        self.announced: set[str] = set()

    def enter(self, mark: Mark | None, author: str) -> tuple[str | None, list[p.Event]]:
        """The ``subagentRunId`` of an event so marked, and what must be sent before it."""
        if mark is None:
            return None, []
        if mark.run_id in self.open:
            return mark.run_id, []
        if mark.run_id in self.announced:
            # Finished already, yet more comes: AG-UI forbids reusing the id in a run.
            return None, []
        parent = mark.parent if mark.parent in self.open else None
        return mark.run_id, [self._start(mark.run_id, author, parent)]

    def leave(self, run_id: str | None) -> list[p.Event]:
        """Ends an invocation that finished (its agent's ``end_of_agent``)."""
        if run_id is None or self.open.pop(run_id, None) is None:
            return []
        return [p.SubagentFinished(subagent_run_id=run_id)]

    def tool_call(
        self, call_id: str, tool_name: str, message_id: str, caller: str | None
    ) -> list[p.Event]:
        """Announces the agent an ``AgentTool`` call runs; its result will finish it."""
        agent = self.agent_tools.get(tool_name)
        if agent is None:
            return []
        run_id = _tool_run_id(call_id)
        return [
            self._start(
                run_id, agent, caller, parent_tool_call_id=call_id, parent_message_id=message_id
            )
        ]

    def tool_result(self, call_id: str) -> list[p.Event]:
        return self.leave(_tool_run_id(call_id))

    def interrupted(self, run_id: str | None, interrupt_id: str) -> None:
        """Notes an approval asked inside an invocation, for its suspended outcome."""
        if run_id in self.open:
            self.open[run_id].interrupts.append(interrupt_id)

    def close(self, *, waiting: bool = False, cancelled: bool = False) -> list[p.Event]:
        """Closes every open invocation, innermost first, as the run ends."""
        out: list[p.Event] = []
        for run_id in reversed(list(self.open)):
            invocation = self.open.pop(run_id)
            if cancelled:
                message = f"{invocation.started.name} was stopped: the run was cancelled."
                out.append(p.SubagentError(subagent_run_id=run_id, message=message, code=CANCELLED))
            elif waiting:
                outcome = p.SuspendedOutcome(interrupt_ids=invocation.interrupts or None)
                out.append(p.SubagentFinished(subagent_run_id=run_id, outcome=outcome))
            else:
                out.append(p.SubagentFinished(subagent_run_id=run_id))
        return out

    def replay(self) -> list[p.Event]:
        """What a late subscriber needs first: the invocations open now, parents first."""
        return [invocation.started for invocation in self.open.values()]

    def _start(
        self,
        run_id: str,
        name: str,
        parent: str | None,
        *,
        parent_tool_call_id: str | None = None,
        parent_message_id: str | None = None,
    ) -> p.SubagentStarted:
        started = p.SubagentStarted(
            subagent_run_id=run_id,
            name=name,
            description=self.descriptions.get(name) or None,
            parent_subagent_run_id=parent,
            parent_tool_call_id=parent_tool_call_id,
            parent_message_id=parent_message_id,
        )
        self.open[run_id] = _Open(started)
        self.announced.add(run_id)
        return started


def _tool_run_id(call_id: str) -> str:
    return "tool/" + call_id
