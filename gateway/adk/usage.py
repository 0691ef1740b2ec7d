"""Token usage: ADK's ``usage_metadata`` as AG-UI 1.0 ``TokenUsage``, counted per run.

``RUN_FINISHED.usage`` (and ``RUN_ERROR.usage``) covers every model call of the run, one
entry per model: a sub-agent's calls, and those of an agent behind an ``AgentTool`` (which
runs in an invocation of its own, whose events never reach the stream) included.
``UsagePlugin`` sees the final response of each call whichever invocation makes it, and
files it under the run's id, which ADK hands nested runs with the rest of
``RunConfig.custom_metadata``. A run that resumes a paused invocation counts its own calls.

AG-UI's accounting, from ADK's fields (whose adapters disagree on whether thoughts are
inside ``candidates_token_count``; the total does not depend on it):

    input     = prompt + tool-use prompt         (cached input is part of it)
    output    = total - input, or candidates + thoughts when no total is given
    reasoning = thoughts                         (part of output)
    total     = input + output

A count that is not a whole number within JSON's safe range is left out, never sent.
"""

from __future__ import annotations

import collections
import logging
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from gateway import wire as p
from gateway.adk.chain import passes_over_chunks
from gateway.auth import WARM_UP_USER
from gateway.context import run_metadata
from gateway.metrics import OFF, Metrics

__all__ = ["MissingUsage", "UsagePlugin", "install_log_filter", "token_usage"]

MAX_COUNT = 2**53 - 1
# Where ADK warns of a model call that reported no usage (ADK 2.13).
METRICS_LOGGER = "google_adk.google.adk.telemetry._metrics"
_NO_USAGE = "Skipping missing token usage metadata"
# Runs whose usage is kept at once; a run takes its own when it ends.
MAX_RUNS = 4096
COUNTS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "reasoning_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
)


def token_usage(
    usage: types.GenerateContentResponseUsageMetadata, model: str | None = None
) -> p.TokenUsage | None:
    """One call's usage; None when it reports no count."""
    prompt = _count(usage.prompt_token_count)
    tool_prompt = _count(usage.tool_use_prompt_token_count)
    given_total = _count(usage.total_token_count)
    thoughts = _count(usage.thoughts_token_count)
    input_tokens = (
        None if prompt is None and tool_prompt is None else (prompt or 0) + (tool_prompt or 0)
    )
    if given_total is not None and input_tokens is not None and given_total >= input_tokens:
        output_tokens: int | None = given_total - input_tokens
    else:
        candidates = _count(usage.candidates_token_count)
        output_tokens = (
            None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
        )
    counts = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "reasoning_tokens": thoughts,
        "cached_input_tokens": _count(usage.cached_content_token_count),
        # Not a field of genai's type: ADK's Anthropic and LiteLLM adapters set it.
        "cache_write_input_tokens": _count(getattr(usage, "cache_creation_input_tokens", None)),
    }
    if input_tokens is not None or output_tokens is not None:
        counts["total_tokens"] = (input_tokens or 0) + (output_tokens or 0)
    if all(value is None for value in counts.values()):
        return None
    return _entry(model, {name: value for name, value in counts.items() if value is not None})


def _entry(model: str | None, counts: dict[str, int]) -> p.TokenUsage:
    return p.TokenUsage(
        model=model,
        input_tokens=counts.get("input_tokens"),
        output_tokens=counts.get("output_tokens"),
        total_tokens=counts.get("total_tokens"),
        reasoning_tokens=counts.get("reasoning_tokens"),
        cached_input_tokens=counts.get("cached_input_tokens"),
        cache_write_input_tokens=counts.get("cache_write_input_tokens"),
    )


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_COUNT else None


class UsagePlugin(BasePlugin):
    def __init__(self, metrics: Metrics = OFF) -> None:
        super().__init__(name="agent_gateway_usage")
        self.metrics = metrics
        # run id -> model -> summed counts
        self._runs: collections.OrderedDict[str, dict[str | None, dict[str, int]]] = (
            collections.OrderedDict()
        )

    @passes_over_chunks
    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        if llm_response.partial or llm_response.usage_metadata is None:
            return None  # a streamed chunk's usage is repeated, summed, by the final response
        # Read only for a response that counts: the chunks before it are most of a call's.
        run_id = run_metadata(callback_context).get("runId")
        if not run_id:
            return None
        entry = token_usage(
            llm_response.usage_metadata, _model_name(callback_context, llm_response)
        )
        if entry is not None:
            self._add(str(run_id), entry)
            if callback_context.user_id != WARM_UP_USER:  # the warm-up's are not counted
                self.metrics.tokens_used(
                    entry.model or "unknown", entry.input_tokens, entry.output_tokens
                )
        return None

    def take(self, run_id: str) -> list[p.TokenUsage] | None:
        """The run's usage so far, one entry per model, and forgets it; None: no call counted."""
        models = self._runs.pop(run_id, None)
        if not models:
            return None
        return [_entry(model, counts) for model, counts in models.items()]

    def _add(self, run_id: str, entry: p.TokenUsage) -> None:
        models = self._runs.setdefault(run_id, {})
        while len(self._runs) > MAX_RUNS:
            self._runs.popitem(last=False)
        counts = models.setdefault(entry.model, {})
        for name in COUNTS:
            value = getattr(entry, name)
            if value is not None:
                counts[name] = min(counts.get(name, 0) + value, MAX_COUNT)


def _model_name(context: CallbackContext, response: LlmResponse) -> str | None:
    if response.model_version:
        return response.model_version
    try:  # an LlmAgent's own model, or the one it inherits
        model = getattr(context._invocation_context.agent, "canonical_model", None)
    except ValueError:  # no model anywhere up the tree
        return None
    name = getattr(model, "model", None)
    return name if isinstance(name, str) and name else None


class MissingUsage(logging.Filter):
    """Drops ADK's warning that a model call reported no token usage, unless at debug level.

    ADK warns on every call whose responses carry none: each stream a failure or a cancel
    cuts short (OpenAI-style streams count at their end), and every call of a server that
    never counts. The run says what was counted on RUN_FINISHED; a failure has its own line.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(_NO_USAGE):
            return True
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def install_log_filter() -> None:
    """Adds ``MissingUsage`` to ADK's metrics logger, once."""
    logger = logging.getLogger(METRICS_LOGGER)
    if not any(isinstance(f, MissingUsage) for f in logger.filters):
        logger.addFilter(MissingUsage())
