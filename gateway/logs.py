"""Log records a client cannot forge: every value escaped and cut, in one place.

Values in log records come from clients (thread ids, context keys, user ids, paths), so the
formatters here, not the call sites, make them safe: control characters, newlines and the
Unicode line and direction marks are shown escaped (``\\n``, ``\\x1b``, ``\\u2028``), each
value is cut to ``VALUE_LIMIT`` characters with a marker saying how much was cut, and a
record is one line (a traceback follows it, every line indented, so a line that starts at
column 0 always starts a record).

``GATEWAY_LOG_FORMAT=json`` writes one JSON object a line instead, with the user, thread and
run ids of the connection or run the record was made in. The doors and the hub's run task
``bind`` them; asyncio copies them into every task started from there.
"""

from __future__ import annotations

import contextvars
import datetime
import logging
import re
import sys
import time
import traceback
from collections.abc import Mapping
from typing import IO, Any

import msgspec

from gateway.config import Settings

# The longest a single value of a record is shown.
VALUE_LIMIT = 200
# The longest a whole message is shown: its template and every value.
MESSAGE_LIMIT = 2000
# The longest a traceback line is shown, and how many lines of one are kept.
TRACEBACK_LINE_LIMIT = 1000
TRACEBACK_LINES = 200

_user = contextvars.ContextVar[str | None]("user_id", default=None)
_thread = contextvars.ContextVar[str | None]("thread_id", default=None)
_run = contextvars.ContextVar[str | None]("run_id", default=None)

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

_UNSET: Any = object()


def bind(
    *, user: str | None = _UNSET, thread: str | None = _UNSET, run: str | None = _UNSET
) -> None:
    """Sets the ids that records made from here on (and in tasks started here) carry."""
    for var, value in ((_user, user), (_thread, thread), (_run, run)):
        if value is not _UNSET:
            var.set(value)


def bound() -> dict[str, str]:
    """The ids known where a record is made, as the JSON format names them."""
    ids = {"userId": _user.get(), "threadId": _thread.get(), "runId": _run.get()}
    return {name: shown(value) for name, value in ids.items() if value is not None}


def bound_run() -> str | None:
    """The run the records made here name (``bind``), as it was bound."""
    return _run.get()


def shown(text: str, limit: int = VALUE_LIMIT) -> str:
    """``text`` with its unsafe characters escaped, cut to ``limit`` with a marker."""
    # Every unsafe character is unprintable, and most texts are printable: one C check
    # spares them the regular expression.
    safe = text if text.isprintable() else _UNSAFE.sub(_escape, text)
    if len(safe) <= limit:
        return safe
    return f"{safe[:limit]}…[{len(safe) - limit} more chars]"


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (
        f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    )


class _Shown:
    """A record argument, formatted by ``%s`` or ``%r`` as the original would be, but safe."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __str__(self) -> str:
        return shown(str(self.value))

    def __repr__(self) -> str:
        return shown(repr(self.value))


def _safe_arg(value: object) -> object:
    # Numbers stay numbers, for %d and %.1f; they cannot carry text. A short printable
    # string is safe as it is, and its repr too (the ids most records carry).
    if isinstance(value, (int, float)):
        return value
    if type(value) is str and len(value) <= VALUE_LIMIT and value.isprintable():
        return value
    return _Shown(value)


def message(record: logging.LogRecord) -> str:
    """The record's message with every argument made safe, and the whole cut short."""
    template = str(record.msg)
    args = record.args
    if args:
        safe: tuple[object, ...] | Mapping[str, object]
        if isinstance(args, Mapping):
            safe = {key: _safe_arg(value) for key, value in args.items()}
        else:
            safe = tuple(_safe_arg(value) for value in args)
        try:
            text = template % safe
        except (TypeError, ValueError, KeyError):
            text = record.getMessage()  # an argument the template wants as it is
    else:
        text = template
    return shown(text.rstrip(), MESSAGE_LIMIT)


def traceback_lines(record: logging.LogRecord) -> list[str]:
    """The record's traceback and stack, each line escaped and cut, at most so many lines.

    An exception's own message (client text, often) stays on one line, escaped like a value.
    """
    lines: list[str] = []
    if record.exc_info and record.exc_info[1] is not None:
        for chunk in traceback.TracebackException.from_exception(record.exc_info[1]).format():
            if chunk.startswith(_TRACEBACK_FRAME):
                lines += chunk.rstrip("\n").split("\n")
            else:
                lines.append(chunk.rstrip("\n"))
    if record.stack_info:
        lines += record.stack_info.splitlines()
    lines = [shown(line, TRACEBACK_LINE_LIMIT) for line in lines]
    if len(lines) > TRACEBACK_LINES:
        half = TRACEBACK_LINES // 2
        lines[half:-half] = [f"…[{len(lines) - 2 * half} more lines]"]
    return lines


# How the chunks of a formatted traceback that are not an exception's message begin.
_TRACEBACK_FRAME = ("  ", "Traceback ", "\nThe above exception", "\nDuring handling")


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message``, one line; a traceback follows, indented. A worker
    process's (``docs/multicore.md``) say which: ``time LEVEL [worker 2] logger: message``."""

    def __init__(self, worker: int | None = None) -> None:
        named = f"[worker {worker}] " if worker is not None else ""
        super().__init__(f"%(asctime)s %(levelname)s {named}%(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        record.message = message(record)
        record.asctime = self.formatTime(record, self.datefmt)
        line = self.formatMessage(record)
        if not (record.exc_info or record.stack_info):
            return line
        return "\n".join([line, *("    " + text for text in traceback_lines(record))])

    # The second a time was last formatted in, and how: under load many records share
    # one, and its strftime was a quarter of a record's formatting.
    _second: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        """``logging.Formatter``'s time, with its date and time made once a second."""
        if datefmt or not self.default_msec_format:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if self._second[0] != second:
            made = time.strftime(self.default_time_format, self.converter(record.created))
            self._second = (second, made)
        return self.default_msec_format % (self._second[1], record.msecs)


class JsonFormatter(logging.Formatter):
    """One JSON object a record, with the ids bound where it was made, and the worker
    process's number in a worker's (``"worker": 2``)."""

    def __init__(self, worker: int | None = None) -> None:
        super().__init__()
        self.worker = {"worker": worker} if worker is not None else {}

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": message(record),
            **bound(),
            **self.worker,
        }
        if lines := traceback_lines(record):
            fields["traceback"] = "\n".join(lines)
        return msgspec.json.encode(fields).decode()


def configure(
    settings: Settings, stream: IO[str] | None = None, *, worker: int | None = None
) -> logging.Handler:
    """Sends every record (uvicorn's too) to ``stream``, stderr by default, in the set format;
    ``worker``: this is that worker process, which every record names."""
    handler = logging.StreamHandler(stream or sys.stderr)
    json = settings.log_format == "json"
    handler.setFormatter(JsonFormatter(worker) if json else TextFormatter(worker))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(settings.log_level.upper())
    return handler
