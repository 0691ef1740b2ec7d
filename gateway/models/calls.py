"""A run's model calls, watched: a model gone quiet ends the run, a provider's failure says why.

ADK calls a plugin before each model call, after each response it streams and when the
call raises. From those ``ModelCalls`` knows, per run, which calls are open and when each
last heard from its model; ``stalled`` returns once one has heard nothing for the given
seconds (``GATEWAY_MODEL_TIMEOUT``), and the hub stops the run. A call closes with its
error, when a tool starts (the model has had its say: what follows is the tool's time)
or when its agent ends. Calls are keyed by invocation and agent, so parallel agents and an
``AgentTool``'s nested run are watched each on their own.

A failure a user will meet (``gateway.models.failures``) becomes the model's answer, an
``LlmResponse`` with an error code: ADK makes it an error event that ends the agent, and
logs no traceback of its own. The hub takes the failure to tell the client why, in one
log line. Anything else a model raises goes on as ADK handles it (unexpected).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import time

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from gateway import timeline
from gateway.auth import WARM_UP_USER
from gateway.context import run_metadata
from gateway.metrics import OFF, Metrics
from gateway.models.endpoints import called, described, model_name, model_of
from gateway.models.failures import ModelFailure, classify

__all__ = ["MODEL_FAILED", "FailedCall", "ModelCalls", "Stall"]

# The error code of the response that stands for a provider's failure.
MODEL_FAILED = "GATEWAY_MODEL_FAILED"
# Runs whose failures are kept at once; a run takes its own when it ends.
MAX_RUNS = 4096

CallKey = tuple[str, str]


@dataclasses.dataclass(frozen=True)
class Stall:
    """A model call that has sent nothing for ``seconds``, and its model (for the log)."""

    model: str
    seconds: float


@dataclasses.dataclass(frozen=True)
class FailedCall:
    """A provider's failure, and the model it came from (for the log)."""

    failure: ModelFailure
    model: str


class ModelCalls(BasePlugin):
    def __init__(self, metrics: Metrics = OFF) -> None:
        super().__init__(name="agent_gateway_model_calls")
        self.metrics = metrics
        # run id -> its calls under way -> when each began (monotonic), for their latency
        self._began: dict[str, dict[CallKey, float]] = {}
        # run id -> its open calls -> when each last heard from its model (monotonic)
        self._open: dict[str, dict[CallKey, float]] = {}
        # run id -> its open calls -> the model each calls, described for the log only if
        # one stalls (a description reads the model's client: ~20 µs a call in a running
        # gateway, before the call's request can leave)
        self._models: dict[str, dict[CallKey, BaseLlm | None]] = {}
        # each call under way -> its run's open calls (``_open[run id]``), so that a chunk
        # is heard without reading the run's metadata (it was read twice a chunk: ~14 of
        # the ~20 Python calls a chunk made here, ~30 chunks a call)
        self._heard_by: dict[CallKey, dict[CallKey, float]] = {}
        self._failed: collections.OrderedDict[str, FailedCall] = collections.OrderedDict()

    # --- what the hub asks -----------------------------------------------------------------

    async def stalled(self, run_id: str, timeout: float) -> Stall:
        """Returns once an open call of the run has heard nothing from its model for
        ``timeout`` seconds; never, for a run whose calls all keep talking or close."""
        while True:
            calls = self._open.get(run_id)
            if not calls:
                await asyncio.sleep(timeout)
                continue
            key, heard = min(calls.items(), key=lambda item: item[1])
            quiet = time.monotonic() - heard
            if quiet >= timeout:
                return Stall(described(self._models.get(run_id, {}).get(key)), quiet)
            await asyncio.sleep(timeout - quiet)

    def take_failure(self, run_id: str) -> FailedCall | None:
        return self._failed.pop(run_id, None)

    def forget(self, run_id: str) -> None:
        """The run has ended: nothing of it is kept."""
        calls = self._open.pop(run_id, None)
        for key in self._models.pop(run_id, {}):
            if calls is not None and self._heard_by.get(key) is calls:
                del self._heard_by[key]  # a resumed invocation's next run has its own
        self._began.pop(run_id, None)
        self._failed.pop(run_id, None)

    # --- ADK's callbacks -----------------------------------------------------------------

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        if run_id := _run_id(callback_context):
            key = _key(callback_context)
            calls = self._open.setdefault(run_id, {})
            calls[key] = time.monotonic()
            self._heard_by[key] = calls
            timeline.mark("model_called", run_id)
            self._models.setdefault(run_id, {})[key] = called(callback_context)
            if callback_context.user_id != WARM_UP_USER:  # the warm-up's are not counted
                self._began.setdefault(run_id, {})[key] = time.monotonic()
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        # Called at every streamed chunk: ~30 times a model call.
        if llm_response.error_code:
            self._close(callback_context)
        else:
            key = _key(callback_context)
            calls = self._heard_by.get(key)
            if calls is not None:
                calls[key] = time.monotonic()
            if timeline.on():
                timeline.mark("model_chunk", _run_id(callback_context))
        if not llm_response.partial:
            self._answered(callback_context, failed=bool(llm_response.error_code))
        return None

    async def on_model_error_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> LlmResponse | None:
        self._close(callback_context)
        self._answered(callback_context, failed=True)
        failure = classify(error)
        if failure is None:
            return None
        run_id = _run_id(callback_context)
        if run_id:
            self._failed[run_id] = FailedCall(failure, model_of(callback_context))
            while len(self._failed) > MAX_RUNS:
                self._failed.popitem(last=False)
        return LlmResponse(error_code=MODEL_FAILED, error_message=failure.detail)

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, object], tool_context: ToolContext
    ) -> dict[str, object] | None:
        self._close(tool_context)
        return None

    async def after_agent_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext
    ) -> None:
        self._close(callback_context)

    # --- internals -----------------------------------------------------------------------

    def _answered(self, context: CallbackContext, *, failed: bool) -> None:
        """A call's last chunk, or its error: counted with its latency."""
        began = self._began.get(_run_id(context), {}).pop(_key(context), None)
        if began is not None:
            self.metrics.model_called(model_name(context), time.monotonic() - began, failed)

    def _close(self, context: CallbackContext) -> None:
        calls = self._open.get(_run_id(context))
        if calls is not None:
            calls.pop(_key(context), None)


def _run_id(context: CallbackContext) -> str:
    return str(run_metadata(context).get("runId") or "")


def _key(context: CallbackContext) -> CallKey:
    return (context.invocation_id, context.agent_name)
