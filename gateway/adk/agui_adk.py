"""Leaving ag-ui-adk: its ``ADKAgent`` unwrapped, its ``AGUIToolset`` recognised.

A team moving from AG-UI's ADK middleware has modules that build an ``ADKAgent`` around
their ADK agent, with settings, and agents whose tools hold ``AGUIToolset()``, the
placeholder ag-ui-adk swaps for the browser's tools on every run. The gateway serves the
same agent (``unwrap``): what ``ADKAgent`` wrapped (its agent, or the App of
``ADKAgent.from_app``), each setting that has a gateway equivalent, and for every other
setting the owner changed from ag-ui-adk's default a sentence saying why it is not kept
and what to set instead (``SETTINGS`` is the whole table; the README shows it). The
gateway's own client toolset stands in for ``AGUIToolset`` (``gateway.adk.hosting``).

ag-ui-adk is optional: it is never imported here. A module that built an ``ADKAgent`` has
imported it already, so its classes are looked up in ``sys.modules``, and an object is
one of them only if ag-ui-adk is loaded and it is an instance.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable
from typing import Any

from google.adk.agents import BaseAgent
from google.adk.apps import App

from gateway.translate.predictions import Prediction, PredictionError, predictions

__all__ = ["SETTINGS", "Setting", "Unwrapped", "is_adk_agent", "is_agui_toolset", "unwrap"]


def _ag_ui_adk(module: str, name: str) -> type | None:
    found = getattr(sys.modules.get(f"ag_ui_adk.{module}"), name, None)
    return found if isinstance(found, type) else None


def is_adk_agent(value: object) -> bool:
    """Whether ``value`` is ag-ui-adk's ``ADKAgent`` (or a subclass's instance)."""
    kind = _ag_ui_adk("adk_agent", "ADKAgent")
    return kind is not None and isinstance(value, kind)


def is_agui_toolset(value: object) -> bool:
    """Whether ``value`` is ag-ui-adk's ``AGUIToolset`` placeholder."""
    kind = _ag_ui_adk("agui_toolset", "AGUIToolset")
    return kind is not None and isinstance(value, kind)


@dataclasses.dataclass(frozen=True)
class Setting:
    """One ``ADKAgent`` option: where its value is, and what the gateway makes of it.

    ``kept``: how the gateway keeps it (or None: it is not kept, and ``why`` says why and
    what to set instead; ``{value}`` is the owner's value). ``read``: its value on an
    ``ADKAgent`` (None: it leaves no trace there to read)."""

    name: str
    read: Callable[[Any], Any] | None
    why: str = ""
    kept: str | None = None


def _attribute(*path: str) -> Callable[[Any], Any]:
    def read(agent: Any) -> Any:
        value = agent
        for name in path:
            value = getattr(value, name, _ABSENT)
            if value is _ABSENT:
                return _ABSENT
        return value

    return read


def _service(path: str) -> Callable[[Any], Any]:
    """A service the owner gave: ADK's in-memory ones are what ag-ui-adk makes by default."""

    def read(agent: Any) -> Any:
        service = _attribute(*path.split("."))(agent)
        service = getattr(service, "_inner", service)  # ag-ui-adk's request-state wrapper
        if service is _ABSENT or service is None or type(service).__name__.startswith("InMemory"):
            return None
        return service

    return read


def _own_run_config(agent: Any) -> Any:
    factory = getattr(agent, "_run_config_factory", None)
    return None if getattr(factory, "__self__", None) is agent else factory


_ABSENT = object()
_SESSIONS = "threads are durable in the gateway's store: nothing expires them"

# Every option of ADKAgent (and of ADKAgent.from_app), in its order.
SETTINGS: tuple[Setting, ...] = (
    Setting("adk_agent", _attribute("_adk_agent"), kept="the agent the gateway hosts"),
    Setting("app_name", _attribute("_static_app_name"), kept="the name of the App hosted"),
    Setting(
        "session_timeout_seconds",
        _attribute("_session_manager", "_timeout"),
        _SESSIONS + " (GATEWAY_USER_THREADS and GATEWAY_USER_STORED_BYTES bound a user's)",
    ),
    Setting(
        "app_name_extractor",
        _attribute("_app_name_extractor"),
        "one gateway serves one App; run a gateway for each",
    ),
    Setting(
        "user_id",
        _attribute("_static_user_id"),
        "the user is whoever each request authenticates as (GATEWAY_AUTH)",
    ),
    Setting(
        "user_id_extractor",
        _attribute("_user_id_extractor"),
        "the user comes from each request's identity: GATEWAY_AUTH=jwt with "
        "GATEWAY_JWT_USER_CLAIM naming the claim",
    ),
    Setting(
        "session_service",
        _service("_session_manager._session_service"),
        "threads live in the gateway's own store (GATEWAY_DB: SQLite or PostgreSQL)",
    ),
    Setting(
        "session_manager",
        None,
        "threads live in the gateway's own store (GATEWAY_DB)",
    ),
    Setting(
        "artifact_service",
        _service("_artifact_service"),
        "the gateway gives its runner its own artifact service (README: ADK services)",
    ),
    Setting(
        "memory_service",
        _service("_memory_service"),
        "the gateway gives its runner the memory service GATEWAY_MEMORY names",
    ),
    Setting(
        "credential_service",
        _service("_credential_service"),
        "the gateway gives its runner its own credential service (README: ADK services)",
    ),
    Setting(
        "run_config_factory",
        _own_run_config,
        "the gateway makes each run's RunConfig; a tool or callback reads the run's "
        "context with gateway.context.run_context",
    ),
    Setting(
        "use_in_memory_services",
        None,
        "the gateway's store is durable unless GATEWAY_DB=':memory:'",
    ),
    Setting(
        "plugin_close_timeout",
        _attribute("_plugin_close_timeout"),
        "the gateway closes its runner, plugins included, when it stops",
    ),
    Setting(
        "execution_timeout_seconds",
        _attribute("_execution_timeout"),
        "a run is stopped when a model call sends nothing for GATEWAY_MODEL_TIMEOUT "
        "seconds, or by a cancel",
    ),
    Setting(
        "tool_timeout_seconds",
        _attribute("_tool_timeout"),
        "a browser has GATEWAY_CLIENT_TOOL_TIMEOUT seconds to answer a call: set that to {value}",
    ),
    Setting(
        "max_concurrent_executions",
        _attribute("_max_concurrent"),
        "GATEWAY_MAX_RUNS bounds the runs in progress: set that to {value}",
    ),
    Setting(
        "cleanup_interval_seconds", _attribute("_session_manager", "_cleanup_interval"), _SESSIONS
    ),
    Setting(
        "max_sessions_per_user",
        _attribute("_session_manager", "_max_per_user"),
        "GATEWAY_USER_THREADS bounds the threads a user keeps: set that to {value}",
    ),
    Setting(
        "delete_session_on_cleanup",
        _attribute("_session_manager", "_delete_session_on_cleanup"),
        _SESSIONS,
    ),
    Setting(
        "save_session_to_memory_on_cleanup",
        _attribute("_session_manager", "_save_session_to_memory_on_cleanup"),
        _SESSIONS,
    ),
    Setting(
        "hitl_max_wait_seconds",
        _attribute("_session_manager", "_hitl_max_wait"),
        "a browser call left unanswered expires after GATEWAY_CLIENT_TOOL_TIMEOUT seconds: "
        "set that to {value}",
    ),
    Setting(
        "predict_state",
        _attribute("_predict_state"),
        kept="served as the gateway's predictive state (GATEWAY_PREDICT_STATE)",
    ),
    Setting(
        "emit_messages_snapshot",
        _attribute("_emit_messages_snapshot"),
        "a client gets MESSAGES_SNAPSHOT when it reattaches, and GET /history any time",
    ),
    Setting(
        "streaming_function_call_arguments",
        _attribute("_streaming_function_call_arguments"),
        "the gateway sends a tool call once the model has made it whole, under its stored id",
    ),
    Setting(
        "use_thread_id_as_session_id",
        _attribute("_session_manager", "_use_thread_id_as_session_id"),
        kept="always: a thread's id is its session's",
    ),
    Setting(
        "allow_scoped_state_keys",
        _attribute("_allow_scoped_state_keys"),
        "the state scopes a client may write are GATEWAY_CLIENT_STATE's (README: State); "
        "set it to session,user,app to allow scoped keys",
    ),
    Setting(
        "capabilities",
        _attribute("_capabilities"),
        "GET /capabilities says what the gateway serves, from the agent itself",
    ),
    Setting(
        "a2ui",
        _attribute("_a2ui_config"),
        "the gateway serves A2UI surfaces its own way (README: A2UI)",
    ),
    Setting(
        "emit_interrupt_outcome",
        _attribute("_emit_interrupt_outcome"),
        "an approval always ends its run with an interrupt outcome, answered through "
        "resume; a browser call (confirm_changes too) ends it with pendingToolCallIds",
    ),
    Setting(
        "seed_first_run_history",
        _attribute("_seed_first_run_history"),
        kept="not needed: the thread's store is its history; a new thread starts from its "
        "first user message",
    ),
)


@dataclasses.dataclass(frozen=True)
class Unwrapped:
    """What an ``ADKAgent`` held that the gateway serves, and what it cannot keep."""

    agent: BaseAgent | App
    # The name its sessions were kept under (``app_name``), when it set one.
    app_name: str | None
    predict_state: tuple[Prediction, ...]
    # (setting, value, why) for each setting the owner changed that is not kept.
    dropped: list[tuple[str, Any, str]]


def unwrap(adk_agent: Any) -> Unwrapped:
    """The agent (or App) an ``ADKAgent`` wraps, the ``app_name`` it set, its predictive
    state, and the settings it changed that the gateway does not keep.

    ValueError if it wraps nothing the gateway can host, or its predictive state cannot
    be read."""
    agent = getattr(adk_agent, "_app", None) or getattr(adk_agent, "_adk_agent", None)
    if not isinstance(agent, BaseAgent | App):
        raise ValueError(f"it wraps {type(agent).__name__}, not an ADK agent or App")
    app_name = getattr(adk_agent, "_static_app_name", None)
    try:
        predicted = predictions(getattr(adk_agent, "_predict_state", None))
    except PredictionError as error:
        raise ValueError(f"its predict_state: {error}") from None
    defaults = _defaults(type(adk_agent))
    dropped = []
    for setting in SETTINGS:
        if setting.kept is not None or setting.read is None:
            continue
        value = setting.read(adk_agent)
        if value is _ABSENT or value is None or value == defaults.get(setting.name, None):
            continue
        dropped.append((setting.name, value, setting.why.format(value=value)))
    return Unwrapped(agent, app_name if isinstance(app_name, str) else None, predicted, dropped)


def _defaults(kind: type) -> dict[str, Any]:
    """ag-ui-adk's defaults, read from the installed version's signatures."""
    found: dict[str, Any] = {}
    for function in (getattr(kind, "__init__", None), getattr(kind, "from_app", None)):
        if function is None:
            continue
        for name, parameter in inspect.signature(function).parameters.items():
            if parameter.default is not inspect.Parameter.empty:
                found.setdefault(name, parameter.default)
    return found
