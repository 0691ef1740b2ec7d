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

Those two loggers' ``info`` makes a record only where they would say DEBUG
(``quiet_below_debug``): the filter alone, as these lines had until session 51, dropped a
record made already (the caller's frame found, the time, thread and process read): ~30-40
µs of a quiet start's way from ADK's model call to Gemini's request
(``scripts/probe_stream.py``), and httpx's line comes between a response's head and its
first chunk. The filter stays, for a line that comes another way.
"""

from __future__ import annotations

import logging
from typing import Any

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


class EveryRequest(logging.Filter):
    """Drops an INFO line of a request (httpx's) or a model call (ADK's Gemini's) unless its
    logger would show DEBUG too: what it warns of (or worse) is kept. Its ``info`` makes no
    such record to begin with (``quiet_below_debug``); this is for any other way in."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or logging.getLogger(record.name).isEnabledFor(
            logging.DEBUG
        )


def quiet_below_debug(logger: logging.Logger) -> None:
    """Has ``logger.info`` make a record only when the logger would say DEBUG, whatever its
    level is set to now or later; the record is the one ``info`` makes, at INFO, naming its
    caller. Its other methods, and its level checks (ADK asks for DEBUG at every chunk),
    are left as they are. Once per logger."""
    if getattr(logger.info, "quiet_below_debug", False):
        return

    def info(msg: object, *args: object, **kwargs: Any) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            # One frame more than ``Logger.info``'s between the caller and the record.
            kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
            logger._log(logging.INFO, msg, args, **kwargs)

    info.quiet_below_debug = True  # type: ignore[attr-defined]
    logger.info = info  # type: ignore[method-assign]


def install_log_filter() -> None:
    """Adds ``HalfBuiltClientClose`` to asyncio's logger and ``EveryRequest`` to httpx's and
    ADK's Gemini's, once each, and has those two make their INFO lines only where they
    would say DEBUG (``quiet_below_debug``)."""
    for name, kind in (
        ("asyncio", HalfBuiltClientClose),
        (REQUESTS_LOGGER, EveryRequest),
        (MODEL_CALLS_LOGGER, EveryRequest),
    ):
        logger = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in logger.filters):
            logger.addFilter(kind())
        if kind is EveryRequest:
            quiet_below_debug(logger)
