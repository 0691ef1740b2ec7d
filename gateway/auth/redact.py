"""Keeps credentials out of the server's own log lines.

The gateway never logs a token, but uvicorn logs each WebSocket's path with its query
(``/ws?ticket=...``) and, at debug level, websockets logs every handshake header
(``Authorization``, ``Sec-WebSocket-Protocol: agui, bearer.<jwt>``). This filter rewrites
those records before any handler sees them.
"""

from __future__ import annotations

import logging
import re

# Loggers whose records quote requests: uvicorn's, which websockets' protocol logs through.
QUOTING_LOGGERS = ("uvicorn.error", "uvicorn.access")

_CREDENTIAL = re.compile(r"(?i)(bearer[ .]|ticket=)[^\s&\"',;]+")
# A JWT anywhere else: base64url of '{"' opens every one.
_JWT = re.compile(r"eyJ[\w-]+\.[\w-]*\.[\w-]*")


def redacted(text: str) -> str:
    return _JWT.sub("[token]", _CREDENTIAL.sub(r"\1[redacted]", text))


class RedactCredentials(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redacted(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def install() -> None:
    """Adds the filter to the loggers that quote requests, once."""
    for name in QUOTING_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactCredentials) for f in logger.filters):
            logger.addFilter(RedactCredentials())
