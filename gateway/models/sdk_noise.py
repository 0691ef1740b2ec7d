"""google-genai's noise about a client it never finished building, kept out of the log.

When google-genai cannot build its client (no API key, no Vertex AI project), the half-built
client is collected and its ``__del__`` schedules ``aclose()``, which fails at once on an
attribute its constructor never set; asyncio then logs "Task exception was never retrieved"
with a traceback, once or twice for every client tried: every model probe, every run. What
went wrong is the missing credential, and the gateway says that in one line of its own
(``gateway.models.failures``), so these records are dropped; any other task's are kept.
"""

from __future__ import annotations

import logging

__all__ = ["install_log_filter"]

# The coroutine of the orphaned task, as asyncio names it in the record.
ORPHANED_CLOSE = "BaseApiClient.aclose()"


class HalfBuiltClientClose(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, AttributeError) and ORPHANED_CLOSE in record.getMessage())


def install_log_filter() -> None:
    """Adds ``HalfBuiltClientClose`` to asyncio's logger, once."""
    logger = logging.getLogger("asyncio")
    if not any(isinstance(f, HalfBuiltClientClose) for f in logger.filters):
        logger.addFilter(HalfBuiltClientClose())
