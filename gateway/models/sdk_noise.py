"""What the model SDKs log that the gateway says better: kept out of the log.

When google-genai cannot build its client (no API key, no Vertex AI project), the half-built
client is collected and its ``__del__`` schedules ``aclose()``, which fails at once on an
attribute its constructor never set; asyncio then logs "Task exception was never retrieved"
with a traceback, once or twice for every client tried: every model probe, every run. What
went wrong is the missing credential, and the gateway says that in one line of its own
(``gateway.models.failures``), so these records are dropped; any other task's are kept.

httpx, which both SDKs and the gateway's ``openai/<model>`` send through, logs a line at INFO
for every request: one or more a model call, hundreds a second under load, each saying what
``gateway_model_calls`` and the run's span already count. They show when the log is at DEBUG,
where a request's line is what one is looking for. ADK's Gemini does the same: "Sending out
request, model: …" at INFO for every model call, written before the request can leave (a
formatted line and a write to the log's stream on the way to the first token; no other
model of ADK's says it), and it goes the same way.

Those two loggers say an INFO line only where they would say DEBUG (``quiet_below_debug``):
``info`` asks ``isEnabledFor`` before it makes a record, so none is made. A filter, as
these lines had until session 51, sees a record made already (the caller's frame found,
the time, thread and process read): ~40 µs of a quiet start's way from ADK's model call
to Gemini's request (``scripts/probe_stream.py``), and httpx's line comes between a
response's head and its first chunk.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

__all__ = ["install_log_filter"]

# The logger httpx writes its line for every request to.
REQUESTS_LOGGER = "httpx"
# The logger ADK's Gemini writes its line for every model call to.
MODEL_CALLS_LOGGER = "google_adk.google.adk.models.google_llm"

# The coroutine of the orphaned task, as asyncio names it in the record.
ORPHANED_CLOSE = "BaseApiClient.aclose()"


class HalfBuiltClientClose(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, AttributeError) and ORPHANED_CLOSE in record.getMessage())


def quiet_below_debug(logger: logging.Logger) -> None:
    """Has ``logger`` say a line at INFO (or below) only when it would say DEBUG, whatever
    its level is set to now or later: no record is made for a line it would not say. What
    it warns of (or worse) is said as its level says. Once per logger."""
    if getattr(logger.isEnabledFor, "quiet_below_debug", False):
        return
    enabled: Callable[[int], bool] = logging.Logger.isEnabledFor.__get__(logger)

    def is_enabled_for(level: int) -> bool:
        return enabled(logging.DEBUG if level <= logging.INFO else level)

    is_enabled_for.quiet_below_debug = True  # type: ignore[attr-defined]
    logger.isEnabledFor = is_enabled_for  # type: ignore[method-assign]


def install_log_filter() -> None:
    """Adds ``HalfBuiltClientClose`` to asyncio's logger, once, and has httpx's and ADK's
    Gemini's loggers say their line of each request at DEBUG only (``quiet_below_debug``)."""
    logger = logging.getLogger("asyncio")
    if not any(isinstance(f, HalfBuiltClientClose) for f in logger.filters):
        logger.addFilter(HalfBuiltClientClose())
    for name in (REQUESTS_LOGGER, MODEL_CALLS_LOGGER):
        quiet_below_debug(logging.getLogger(name))
