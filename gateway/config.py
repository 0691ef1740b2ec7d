"""One frozen settings object, read from environment variables and CLI flags.

Every setting has an environment variable ``GATEWAY_<NAME>`` and a flag ``--<name>``;
a flag wins over the variable, the variable over the default.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    host: str = "0.0.0.0"
    port: int = 8080
    db: str = "gateway.db"
    model: str = "scripted"
    scripted_pace_ms: float = 30.0
    auth: str = "dev"
    durability: str = "normal"
    history_window: int = 24
    client_tool_timeout: float = 120.0
    approval_timeout: float = 900.0
    context_allow: str = "surface,currentScreen,selectedIds"
    max_frame_bytes: int = 1 << 20
    send_buffer_bytes: int = 8 << 20
    receive_buffer_bytes: int = 4 << 20
    user_rate: float = 5.0
    user_burst: int = 40
    max_runs: int = 200
    run_wait: float = 30.0
    max_connections: int = 4096
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keepalive_timeout: int = 5
    ws_handshake_timeout: float = 10.0
    ws_ping_interval: float = 10.0
    ws_ping_timeout: float = 10.0
    allowed_origins: str = ""
    log_level: str = "info"
    log_format: str = "text"


# What each setting means, shown by --help and kept next to the defaults.
_HELP: dict[str, str] = {
    "host": "address to listen on",
    "port": "port to listen on",
    "db": "SQLite file for sessions (':memory:' keeps nothing)",
    "model": "'scripted' (offline), a Gemini name such as 'gemini-2.5-flash', "
    "or 'openai/<model>' for an OpenAI-compatible endpoint",
    "scripted_pace_ms": "delay between the scripted model's streamed chunks",
    "auth": "'dev': the user comes from ?user= or X-Gateway-User",
    "durability": "'normal' survives a process crash, 'full' also a power loss",
    "history_window": "recent events a run loads from its thread",
    "client_tool_timeout": "seconds a browser has to answer a client-tool call",
    "approval_timeout": "seconds an approval request stays open before it counts as rejected",
    "context_allow": "RunAgentInput.context entries the model may see (comma-separated)",
    "max_frame_bytes": "largest upstream WebSocket frame or request body",
    "send_buffer_bytes": "events a client may fall behind by, in bytes, before it is cut off",
    "receive_buffer_bytes": "frames one /ws connection may have waiting for earlier runs, in bytes",
    "user_rate": "frames and requests a second one user may send, sustained (0: no limit)",
    "user_burst": "frames and requests one user may send at once",
    "max_runs": "runs in progress at once, all users together (paused ones do not count; 0: none)",
    "run_wait": "seconds a run waits for a free slot under max_runs before it is refused",
    "max_connections": "open connections (HTTP and WebSocket) before new ones get a 503",
    "header_timeout": "seconds a new connection has to send a complete request head",
    "body_timeout": "seconds a client has to send a whole request body",
    "keepalive_timeout": "seconds an idle HTTP keep-alive connection stays open",
    "ws_handshake_timeout": "seconds from a WebSocket upgrade request to its accept",
    "ws_ping_interval": "seconds between the server's WebSocket pings",
    "ws_ping_timeout": "seconds a WebSocket client has to answer a ping before it is closed",
    "allowed_origins": "browser origins allowed on /ws besides the server's own host "
    "(comma-separated, e.g. https://app.example.com)",
    "log_level": "debug, info, warning or error",
    "log_format": "'text' (one escaped line a record) or 'json' (with user, thread and run ids)",
}

_CHOICES: dict[str, tuple[str, ...]] = {
    "auth": ("dev",),
    "durability": ("normal", "full"),
    "log_level": ("debug", "info", "warning", "error"),
    "log_format": ("text", "json"),
}


def in_memory(db: str) -> bool:
    """Whether a GATEWAY_DB value is SQLite's in-memory database: nothing outlives the process."""
    return db in ("", ":memory:")


def context_allow(settings: Settings) -> frozenset[str]:
    return _names(settings.context_allow)


def allowed_origins(settings: Settings) -> frozenset[str]:
    """The allow-list of browser origins, normalized as browsers send them."""
    return frozenset(origin.lower().rstrip("/") for origin in _names(settings.allowed_origins))


def _names(listed: str) -> frozenset[str]:
    return frozenset(name.strip() for name in listed.split(",") if name.strip())


def env_name(field: str) -> str:
    return "GATEWAY_" + field.upper()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds one ``--flag`` per setting; defaults stay None so the environment can fill in."""
    for field in dataclasses.fields(Settings):
        flag = "--" + field.name.replace("_", "-")
        help_text = f"{_HELP[field.name]} (env {env_name(field.name)}, default {field.default})"
        parser.add_argument(flag, dest=field.name, default=None, help=help_text)


def load(
    args: argparse.Namespace | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Builds Settings from flags, then environment variables, then defaults."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for field in dataclasses.fields(Settings):
        raw = getattr(args, field.name, None) if args is not None else None
        if raw is None:
            raw = environ.get(env_name(field.name))
        if raw is None:
            continue
        values[field.name] = _convert(field.name, type(field.default), str(raw))
    return Settings(**values)


def _convert(name: str, kind: type, raw: str) -> Any:
    try:
        value: Any = kind(raw)
    except ValueError:
        raise SystemExit(f"{env_name(name)}={raw!r} is not a valid {kind.__name__}") from None
    choices = _CHOICES.get(name)
    if choices and value not in choices:
        raise SystemExit(f"{env_name(name)} must be one of {', '.join(choices)}, not {raw!r}")
    return value


def parse(argv: Sequence[str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(prog="agent-gateway", allow_abbrev=False)
    add_arguments(parser)
    return load(parser.parse_args(argv))
