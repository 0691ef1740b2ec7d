"""One frozen settings object, read from CLI flags, environment variables and a settings file.

Every setting has an environment variable ``GATEWAY_<NAME>``, a flag ``--<name>`` and a key
``<name>`` in the optional TOML file that ``GATEWAY_CONFIG`` or ``--config`` names (for what
is awkward in a variable: lists, JSON, PEM keys). A value given in code (``create_app``'s
Settings) wins over a flag, a flag over the variable, the variable over the file, the file
over the default. ``resolve`` keeps where each value came from, and ``announce`` logs it at
start-up in a few lines, secrets redacted, after a warning for each ``GATEWAY_*`` variable
that names no setting (a typo is otherwise silently the default).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import importlib.metadata
import json
import logging
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger(__name__)

# The variable (and flag) naming the settings file.
CONFIG_VARIABLE = "GATEWAY_CONFIG"
# Settings whose values are credentials: the start-up line says only whether they are set.
SECRETS = frozenset({"jwt_secret", "service_token"})
# The longest a value is shown in the start-up lines (a PEM key, a JSON list).
SHOWN_VALUE = 80
# The longest one start-up line grows before the next begins (``gateway.logs`` cuts at 2000).
LINE_LIMIT = 1500

# Where each auth mode listens unless GATEWAY_HOST says: dev trusts whoever connects, so only
# this machine may; jwt is the AgentCore contract, 0.0.0.0:8080.
DEFAULT_HOST = {"dev": "127.0.0.1", "jwt": "0.0.0.0"}
# GATEWAY_WORKERS=auto (docs/multicore.md): worker processes on demand, up to one per core.
AUTO_WORKERS = -1


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    host: str = ""
    port: int = 8080
    db: str = "gateway.db"
    agent: str = ""
    catalog: str = ""
    model: str = ""
    predict_state: str = ""
    scripted_pace_ms: float = 30.0
    auth: str = "dev"
    jwt_secret: str = ""
    jwt_public_key: str = ""
    jwt_jwks_url: str = ""
    jwt_jwks_file: str = ""
    jwt_algorithms: str = ""
    jwt_issuer: str = ""
    jwt_audience: str = ""
    jwt_leeway: float = 30.0
    jwt_jwks_cache_seconds: float = 300.0
    jwt_user_claim: str = "sub"
    jwt_org_claim: str = "org"
    jwt_roles_claim: str = "roles"
    service_token: str = ""
    jwt_claims: str = ""
    ws_ticket_seconds: float = 30.0
    ws_tickets_max: int = 10_000
    durability: str = "normal"
    history_window: int = 24
    client_tool_timeout: float = 120.0
    model_timeout: float = 120.0
    model_probe_interval: float = 30.0
    approval_timeout: float = 900.0
    context_allow: str = "surface,currentScreen,selectedIds"
    client_state: str = "session"
    max_state_bytes: int = 256 << 10
    max_frame_bytes: int = 1 << 20
    live_max_seconds: float = 900.0
    live_turns_per_user: int = 2
    live_reattach_seconds: float = 30.0
    send_buffer_bytes: int = 8 << 20
    receive_buffer_bytes: int = 4 << 20
    snapshot_bytes: int = 512 << 10
    cursor_bytes: int = 1 << 20
    user_rate: float = 5.0
    user_burst: int = 40
    user_reattach_bytes: int = 256 << 10
    user_reattach_burst: int = 4 << 20
    max_runs: int = 200
    workers: int = AUTO_WORKERS
    user_threads: int = 1000
    branches_per_thread: int = 50
    user_stored_bytes: int = 256 << 20
    run_wait: float = 30.0
    max_connections: int = 4096
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keepalive_timeout: int = 5
    ws_handshake_timeout: float = 10.0
    ws_ping_interval: float = 10.0
    ws_ping_timeout: float = 10.0
    allowed_origins: str = ""
    sse_abort: str = "cancel"
    busy: str = "interrupt"
    lease_seconds: float = 10.0
    lease_check_seconds: float = 1.0
    drain_seconds: float = 25.0
    warm_up_runs: int = 3
    warm_up: str = "gateway"
    memory: str = "memory"
    artifacts: str = "memory"
    credentials: str = "memory"
    log_level: str = "info"
    log_format: str = "text"
    metrics: str = "off"
    metrics_token: str = ""
    titles: str = "first"
    timeline: str = ""

    def __post_init__(self) -> None:
        if not self.host:
            object.__setattr__(self, "host", DEFAULT_HOST.get(self.auth, "127.0.0.1"))


# What each setting means, shown by --help and kept next to the defaults.
_HELP: dict[str, str] = {
    "host": "address to listen on (default 127.0.0.1 with --auth dev, 0.0.0.0 with jwt)",
    "port": "port to listen on",
    "db": "where threads live: a SQLite file (':memory:' keeps nothing), or a postgresql:// URL "
    "that several gateway processes may share",
    "agent": "the agent to host: package.module:attr, package.module (its app or root_agent) "
    "or an ADK agent folder (default: the bundled demo)",
    "catalog": "a folder of client-tool declarations (JSON); with one, clients may declare "
    "only those tools, as declared (default: any tool a client declares; the demo has its own)",
    "model": "replaces the model of every LlmAgent hosted: a Gemini name such as "
    "'gemini-2.5-flash', 'openai/<model>', or 'script:<file>' to play a script file offline "
    "(default: the agent's own; the demo's is 'scripted', offline)",
    "predict_state": "predictive state, as the AG-UI dojo's document editor uses it: a JSON list "
    'of {"state_key", "tool", "tool_argument", "emit_confirm_tool"?}; a call of the tool is '
    "preceded by CUSTOM PredictState and, unless emit_confirm_tool is false, followed by a "
    "confirm_changes call the browser answers (default: the ADKAgent's, if AGENT builds one)",
    "scripted_pace_ms": "delay between the streamed chunks of the demo's scripted model and of "
    "a 'script:<file>' model",
    "auth": "'dev': the user comes from ?user= or X-Gateway-User, as sent; "
    "'jwt': from a verified Authorization: Bearer token",
    "jwt_secret": "HS256 secret (32+ bytes) for jwt mode; prefer the env var: flags show in ps",
    "service_token": "the credential (32+ bytes) a backend system sends as Authorization: "
    "Bearer to POST /tool-results, the final results of an agent's long-running tools "
    "(unset: that door is closed); prefer the env var: flags show in ps",
    "jwt_public_key": "PEM public key (the text, or a file path) for RS256/ES256 tokens",
    "jwt_jwks_url": "JWKS URL of the token issuer (cached; unknown key ids refetch)",
    "jwt_jwks_file": "JWKS file holding the issuer's public keys",
    "jwt_algorithms": "accepted signing algorithms, comma-separated; default: the key's "
    "(HS256 for a secret, RS256/ES256 for public keys)",
    "jwt_issuer": "required iss claim (unchecked when empty)",
    "jwt_audience": "accepted aud values, comma-separated (unchecked when empty)",
    "jwt_leeway": "seconds of clock skew allowed on exp, nbf and iat",
    "jwt_jwks_cache_seconds": "how long a fetched JWKS is used before it is fetched again",
    "jwt_user_claim": "claim naming the user (dotted for nested claims)",
    "jwt_org_claim": "claim naming the user's organisation",
    "jwt_roles_claim": "claim listing the user's roles (a list, or a space-separated string)",
    "jwt_claims": "further claims a run's tools and callbacks may read "
    "(gateway.context.caller), comma-separated, dotted for nested claims",
    "ws_ticket_seconds": "lifetime of a single-use /ws ticket from POST /ws-ticket",
    "ws_tickets_max": "most /ws tickets outstanding at once",
    "durability": "'normal' survives a process crash, 'full' also a power loss (on PostgreSQL: "
    "synchronous_commit off or on)",
    "history_window": "recent events a run loads from its thread",
    "client_tool_timeout": "seconds a browser has to answer a client-tool call",
    "model_timeout": "seconds a model call may send nothing (its first chunk included) "
    "before the run is stopped with RUN_ERROR (0: no limit)",
    "model_probe_interval": "seconds between the checks that the hosted agent's models answer "
    "(a models list, no tokens); while one does not, /ping says Unhealthy (0: no checks)",
    "approval_timeout": "seconds an approval request stays open before it counts as rejected",
    "context_allow": "RunAgentInput.context entries the model may see (comma-separated)",
    "client_state": "state scopes a client's RunAgentInput.state may write, comma-separated: "
    "'session' (keys without a prefix), 'user' (user: keys, shared by the user's threads), "
    "'app' (app: keys, shared by every user), or 'none'; temp: keys never",
    "max_state_bytes": "most bytes of JSON a thread's state may hold after a client writes "
    "to it; a larger edit is refused",
    "max_frame_bytes": "largest upstream WebSocket frame or request body",
    "live_max_seconds": "seconds of audio one live turn may hear before it ends (docs/voice.md)",
    "live_turns_per_user": "live turns one user may have open at once (docs/voice.md)",
    "live_reattach_seconds": "seconds a live turn whose connection dropped waits for its "
    "client to reattach before it ends (0: it ends at once; docs/voice.md)",
    "send_buffer_bytes": "events a client may fall behind by, in bytes, before it is cut off",
    "receive_buffer_bytes": "frames one /ws connection may have waiting for earlier runs, in bytes",
    "snapshot_bytes": "most of a thread a reattach sends, in bytes; older messages are paged in",
    "cursor_bytes": "most of each thread's event log kept for reattach by cursor, in bytes "
    "(trimmed when a run ends); an older cursor gets the snapshot",
    "user_rate": "frames and requests a second one user may send, sustained (0: no limit)",
    "user_burst": "frames and requests one user may send at once",
    "user_reattach_bytes": "bytes a second one user's reattaches and /history pages may have "
    "the gateway send, sustained (0: no limit)",
    "user_reattach_burst": "bytes one user's reattaches and /history pages may have the "
    "gateway send at once",
    "max_runs": "runs in progress at once, all users together (paused ones do not count; 0: none)",
    "workers": "worker processes that run the agent's invocations (docs/multicore.md): "
    "'auto' starts up to one per core when the load asks for them (none on one core); "
    "0 or 1: all in this one process; N: N started with the gateway",
    "user_threads": "threads one user may keep (0: no limit)",
    "branches_per_thread": "versions of turns one thread may have from regenerating and editing"
    " (0: no limit)",
    "user_stored_bytes": "bytes of stored events one user's threads may hold (0: no limit)",
    "run_wait": "seconds a run waits for a free slot under max_runs before it is refused",
    "max_connections": "open connections (HTTP and WebSocket) before new ones get a 503",
    "header_timeout": "seconds a new connection has to send a complete request head",
    "body_timeout": "seconds a client has to send a whole request body",
    "keepalive_timeout": "seconds an idle HTTP keep-alive connection stays open",
    "ws_handshake_timeout": "seconds from a WebSocket upgrade request to its accept",
    "ws_ping_interval": "seconds between the server's WebSocket pings",
    "ws_ping_timeout": "seconds a WebSocket client has to answer a ping before it is closed",
    "allowed_origins": "browser origins allowed on /ws and, by CORS, on the HTTP doors, besides "
    "the server's own host (comma-separated, e.g. https://app.example.com)",
    "sse_abort": "what a POST /invocations client that names no ?clientId= and goes away "
    "mid-run means: 'cancel' stops the run as a cancel does (it cannot come back to it), "
    "'keep' lets it finish; a client with a ?clientId= can come back, and keeps its run",
    "busy": "what a new input on a thread with a run going meets, unless its "
    "forwardedProps.gateway.busy says: 'reject' (SESSION_BUSY), 'interrupt' (a new message "
    "stops the run, then runs) or 'enqueue' (it waits for the run to end)",
    "lease_seconds": "on PostgreSQL, seconds a thread's lease outlives its holder's last "
    "heartbeat (sent every third of it) before another process may take the thread over",
    "lease_check_seconds": "on PostgreSQL, seconds between each process's looks for threads "
    "whose holder died (a killed process's threads are taken over within about this)",
    "drain_seconds": "seconds a SIGTERM (or the host app's shutdown) gives runs in progress to "
    "finish, their clients streaming, while new runs are refused; what still runs then is stored "
    "as interrupted (fits Kubernetes' default 30 s terminationGracePeriodSeconds)",
    "warm_up_runs": "greetings run at start-up, before /ping says Healthy (no model that "
    "could cost anything is called for them; 0: none)",
    "warm_up": "what the warm-up's greetings run through: 'gateway' (its own stand-in agent on "
    "an offline model, so none of the hosted agent's code runs) or 'agent' (the hosted agent, "
    "callbacks and tools included, as user __warmup__)",
    "memory": "ADK memory service (load_memory, PreloadMemoryTool): 'memory' (each user's "
    "recent runs in this process), 'none', or package.module:attr naming a service or a "
    "function of the settings returning one",
    "artifacts": "ADK artifact service (save_artifact, load_artifacts): 'memory' (in this "
    "process), 'none', or package.module:attr as for memory",
    "credentials": "ADK credential service (save_credential, load_credential): 'memory' (in "
    "this process), 'none', or package.module:attr as for memory",
    "log_level": "debug, info, warning or error",
    "log_format": "'text' (one escaped line a record) or 'json' (with user, thread and run ids)",
    "metrics": "'on' serves Prometheus metrics at GET /metrics (see the README's Metrics), "
    "'off' counts nothing",
    "metrics_token": "the credential (16+ bytes) a scraper sends as Authorization: Bearer to "
    "GET /metrics; required with --auth jwt, optional with dev; prefer the env var",
    "timeline": "a directory where each process of the gateway writes when each run's steps "
    "to its first text happened, for scripts/load.py --timeline (docs/first-event.md); "
    "empty: off",
    "titles": "'first' titles a thread from its first message; 'model' has the agent's model "
    "improve that title after the first reply (never an offline model)",
}

# Settings that take a word for one of their numbers, as the variable spells it.
_WORDS: dict[str, dict[str, Any]] = {"workers": {"auto": AUTO_WORKERS}}

_CHOICES: dict[str, tuple[str, ...]] = {
    "auth": ("dev", "jwt"),
    "durability": ("normal", "full"),
    "sse_abort": ("cancel", "keep"),
    "busy": ("reject", "interrupt", "enqueue"),
    "log_level": ("debug", "info", "warning", "error"),
    "warm_up": ("gateway", "agent"),
    "log_format": ("text", "json"),
    "metrics": ("off", "on"),
    "titles": ("first", "model"),
}


@functools.cache
def version() -> str:
    """This gateway's version, as installed (``GET /livez`` and the start-up log say it)."""
    try:
        return importlib.metadata.version("agent-gateway")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return "unknown"


def in_memory(db: str) -> bool:
    """Whether a GATEWAY_DB value is SQLite's in-memory database: nothing outlives the process."""
    return db in ("", ":memory:")


def context_allow(settings: Settings) -> frozenset[str]:
    return _names(settings.context_allow)


# The scopes of ADK state a client may be allowed to write (``gateway.hub.client_state``).
STATE_SCOPES = ("session", "user", "app")


def client_state(settings: Settings) -> frozenset[str]:
    """The state scopes clients may write; 'none' (or nothing) for none."""
    scopes = _names(settings.client_state) - {"none"}
    unknown = scopes - set(STATE_SCOPES)
    if unknown:
        raise SystemExit(
            f"{env_name('client_state')} may name {', '.join(STATE_SCOPES)} or none, "
            f"not {', '.join(sorted(unknown))}"
        )
    return frozenset(scopes)


def allowed_origins(settings: Settings) -> frozenset[str]:
    """The allow-list of browser origins, normalized as browsers send them."""
    return frozenset(origin.lower().rstrip("/") for origin in _names(settings.allowed_origins))


def _names(listed: str) -> frozenset[str]:
    return frozenset(name.strip() for name in listed.split(",") if name.strip())


def env_name(field: str) -> str:
    return "GATEWAY_" + field.upper()


def setting_names() -> list[str]:
    return [field.name for field in dataclasses.fields(Settings)]


def add_arguments(
    parser: argparse.ArgumentParser, only: Sequence[str] | None = None, default: Any = None
) -> None:
    """Adds one ``--flag`` per setting (or per setting in ``only``); defaults stay None so
    the environment can fill in. A subcommand's parser passes ``argparse.SUPPRESS``, so a
    flag given before the subcommand is not overwritten by the subcommand's default."""
    for field in dataclasses.fields(Settings):
        if only is not None and field.name not in only:
            continue
        flag = "--" + field.name.replace("_", "-")
        shown = f", default {_spelled(field.name, field.default)}" if field.default != "" else ""
        help_text = f"{_HELP[field.name]} (env {env_name(field.name)}{shown})"
        parser.add_argument(flag, dest=field.name, default=default, help=help_text)


def add_config_argument(parser: argparse.ArgumentParser, default: Any = None) -> None:
    parser.add_argument(
        "--config",
        dest="config",
        default=default,
        metavar="FILE.toml",
        help=f"a TOML file of settings, keys as the flags' names with _ (env {CONFIG_VARIABLE})",
    )


@dataclasses.dataclass(frozen=True)
class Resolved:
    """Settings, where each value came from ('code', 'flag', 'env', the file's path or
    'default'), and a sentence for each GATEWAY_* variable that names no setting."""

    settings: Settings
    sources: Mapping[str, str]
    unknown: Sequence[str] = ()


def load(
    args: argparse.Namespace | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Builds Settings from flags, then environment variables, then the file, then defaults."""
    return resolve(args, environ).settings


def resolve(
    args: argparse.Namespace | None = None,
    environ: Mapping[str, str] | None = None,
    given: Settings | None = None,
) -> Resolved:
    """Settings from code (``given``'s values other than the defaults), flags, environment
    variables, the settings file and defaults, in that order, with where each came from."""
    environ = os.environ if environ is None else environ
    path = (getattr(args, "config", None) if args is not None else None) or environ.get(
        CONFIG_VARIABLE
    )
    in_file = read_file(path) if path else {}
    in_code = _given(given) if given is not None else {}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for field in dataclasses.fields(Settings):
        name, kind = field.name, type(field.default)
        flag = getattr(args, name, None) if args is not None else None
        if name in in_code:
            values[name], sources[name] = in_code[name], "code"
        elif flag is not None:
            values[name], sources[name] = _convert(name, kind, str(flag)), "flag"
        elif (raw := environ.get(env_name(name))) is not None:
            values[name], sources[name] = _convert(name, kind, raw), "env"
        elif name in in_file:
            values[name], sources[name] = (
                _convert(name, kind, in_file[name], f"{path}: {name}"),
                str(path),
            )
        else:
            sources[name] = "default"
    return Resolved(Settings(**values), sources, unknown_variables(environ))


def _given(settings: Settings) -> dict[str, Any]:
    """What code set: every value but the defaults (host's depends on the auth mode)."""
    given = {}
    for field in dataclasses.fields(Settings):
        value = getattr(settings, field.name)
        default = DEFAULT_HOST.get(settings.auth, "127.0.0.1") if field.name == "host" else None
        if value != (field.default if default is None else default):
            given[field.name] = value
    return given


def read_file(path: str) -> dict[str, str]:
    """A TOML settings file's values as the variables would give them: a list is joined
    with commas (or, for predict_state, written as JSON), a table written as JSON."""
    try:
        with open(path, "rb") as file:
            table = tomllib.load(file)
    except OSError as error:
        raise SystemExit(f"{CONFIG_VARIABLE}={path}: cannot be read ({error.strerror})") from None
    except tomllib.TOMLDecodeError as error:
        raise SystemExit(f"{CONFIG_VARIABLE}={path} is not valid TOML: {error}") from None
    known = setting_names()
    values = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        if name not in known:
            raise SystemExit(f"{path}: {key!r} is not a setting{_nearest(name, known)}")
        values[name] = _as_text(name, value)
    return values


def _as_text(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list) and name != "predict_state":
        return ",".join(str(item) for item in value)
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """A sentence for each GATEWAY_* variable no setting reads, with the nearest name."""
    known = [env_name(name) for name in setting_names()] + [CONFIG_VARIABLE]
    return [
        f"{variable} is not a setting and is ignored{_nearest(variable, known, 'GATEWAY_')}"
        for variable in sorted(environ)
        if variable.startswith("GATEWAY_") and variable not in known
    ]


def _nearest(name: str, known: Sequence[str], prefix: str = "") -> str:
    """'; did you mean X?' for the known name closest to ``name``, compared without the
    prefix they share (which would make every name look alike), or nothing."""
    bare = {option.removeprefix(prefix): option for option in known}
    close = difflib.get_close_matches(name.removeprefix(prefix), list(bare), n=1, cutoff=0.6)
    return f"; did you mean {bare[close[0]]}?" if close else ""


def announce(resolved: Resolved) -> None:
    """Logs the unknown variables, then every effective setting by where it came from."""
    for sentence in resolved.unknown:
        log.warning("%s", sentence)
    for line in describe(resolved):
        # The line as the template: an argument would be cut at ``gateway.logs.VALUE_LIMIT``;
        # the formatter still escapes and bounds the whole (no arguments: no % formatting).
        log.info(line)


def describe(resolved: Resolved) -> list[str]:
    """The start-up lines: the version, then ``settings from <source>: name=value ...``,
    secrets redacted, long values cut; a line that grows too long goes on in another."""
    by_source: dict[str, list[str]] = {}
    for name in setting_names():
        shown = _shown(name, getattr(resolved.settings, name))
        by_source.setdefault(resolved.sources[name], []).append(f"{name}={shown}")
    lines = [f"agent-gateway {version()}"]
    # Code, flags and variables first; then the file; then the defaults.
    rank = {"code": 0, "flag": 1, "env": 2, "default": 4}
    order = sorted(by_source, key=lambda source: rank.get(source, 3))
    for source in order:
        head = f"settings from {_source_name(source)}:"
        line = head
        for item in by_source[source]:
            if len(line) + len(item) > LINE_LIMIT and line != head:
                lines.append(line)
                line = head
            line += " " + item
        lines.append(line)
    return lines


def _source_name(source: str) -> str:
    names = {"code": "code", "flag": "flags", "env": "GATEWAY_* variables", "default": "defaults"}
    return names.get(source, source)


def _shown(name: str, value: Any) -> str:
    if name in SECRETS:
        return "[redacted]" if value else '""'
    text = _without_password(value) if isinstance(value, str) else _spelled(name, value)
    if len(text) > SHOWN_VALUE:
        text = text[:SHOWN_VALUE] + f"...({len(text)} chars)"
    return json.dumps(text, ensure_ascii=False) if (not text or " " in text) else text


def _spelled(name: str, value: Any) -> str:
    """A value as its variable spells it: the word for it (``_WORDS``), if it has one."""
    words = {number: word for word, number in _WORDS.get(name, {}).items()}
    return str(words.get(value, value))


def _without_password(value: str) -> str:
    """A URL's password (a database's, a JWKS's), in its authority or its query, redacted."""
    return _QUERY_PASSWORD.sub(r"\1[redacted]", _URL_PASSWORD.sub(r"\1[redacted]@", value))


_URL_PASSWORD = re.compile(r"(://[^/@:\s]*:)[^@/\s]*@")
_QUERY_PASSWORD = re.compile(r"(?i)\b(password=)[^&\s]*")


def _convert(name: str, kind: type, raw: str, where: str = "") -> Any:
    """``raw`` as the setting's type; ``where`` names it in a refusal (default: its variable)."""
    where = where or env_name(name)
    if (word := _WORDS.get(name, {}).get(raw.strip().lower())) is not None:
        return word
    try:
        value: Any = kind(raw)
    except ValueError:
        raise SystemExit(f"{where}={raw!r} is not a valid {kind.__name__}") from None
    choices = _CHOICES.get(name)
    if choices and value not in choices:
        raise SystemExit(f"{where} must be one of {', '.join(choices)}, not {raw!r}")
    return value


def parse(argv: Sequence[str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(prog="agent-gateway", allow_abbrev=False)
    add_arguments(parser)
    add_config_argument(parser)
    return load(parser.parse_args(argv))
