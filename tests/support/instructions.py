"""What a model was told: ``watched(agent)`` is the agent on a copy of its script model that
keeps the system instruction of every call, so a test can say what the agent's callbacks
and instruction providers showed the model (the client's state, say), through the gateway
and through ag-ui-adk alike."""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.models.llm_request import LlmRequest
from pydantic import Field

from gateway.models.offline import Reply
from gateway.models.script import ScriptLlm


class InstructedScript(ScriptLlm):
    """A script model that keeps each call's system instruction in ``instructions``."""

    instructions: list[str] = Field(default_factory=list)

    def reply(self, llm_request: LlmRequest) -> Reply:
        told = llm_request.config.system_instruction if llm_request.config else None
        self.instructions.append(told if isinstance(told, str) else str(told or ""))
        return super().reply(llm_request)


def watched(agent: LlmAgent) -> tuple[LlmAgent, InstructedScript]:
    """A copy of ``agent`` (on a script model) whose model keeps what it was told."""
    assert isinstance(agent.model, ScriptLlm)
    model = InstructedScript(model=agent.model.model, script=agent.model.script)
    return agent.clone(update={"model": model}), model
