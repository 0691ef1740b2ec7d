"""Finding the agent a user names: ``agent-gateway serve AGENT`` or ``GATEWAY_AGENT``.

AGENT is one of:

- ``package.module:attr``, naming an ADK agent (``LlmAgent``, ``SequentialAgent``, any
  ``BaseAgent``), an ``App``, a ``gateway.Hosted``, ag-ui-adk's ``ADKAgent``, or a
  function that returns one of these, given the gateway's ``Settings`` if it takes a
  parameter (the demo's does, to choose its model); an ``async def`` function is awaited
  once, as the agent is loaded (``call_factory``);
- ``package.module``: the ``ADKAgent`` it builds, else its ``app``, else its
  ``root_agent``, as ``adk web`` looks. A module written for ag-ui-adk has an
  ``ADKAgent`` and a FastAPI ``app``: the gateway serves the ``ADKAgent``'s agent with the
  settings it can keep (``gateway.adk.agui_adk``) and logs each one it cannot; a module
  whose ``app`` is a web app with no ``ADKAgent`` beside it is refused, naming the agents
  it holds;
- ``path/to/agent.py[:attr]``: that file's module, as ``package.module[:attr]`` (its
  package's folders named from the file's, the folder above them first on ``sys.path``);
- a folder laid out for ``adk web`` / ``adk api_server`` (a package whose ``agent.py``
  defines ``root_agent`` or ``app``), loaded by ADK's own loader, ``.env`` included;
- nothing: the bundled demo, the screen navigator.

Every way this can fail stops start-up with one sentence saying what was found where.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import importlib
import inspect
import logging
import os
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from google.adk.agents import BaseAgent
from google.adk.apps import App

from gateway import models
from gateway.adk import agui_adk
from gateway.adk.hosting import Hosted, HostingError, first_line, resumable_app
from gateway.config import Settings
from gateway.models import names

__all__ = ["DEMO", "call_factory", "load", "named"]

log = logging.getLogger(__name__)

# The demo is named, never imported, so the core depends on nothing of it.
DEMO = "gateway.examples.navigator.agent:hosted"


def load(target: object, settings: Settings) -> Hosted:
    """The ``Hosted`` for ``target``: a spec string as above (None or "": the demo), or an
    agent, App, ``Hosted`` or factory given in Python. HostingError if it is none of these.

    ``settings.model``, when set, becomes the model of every LlmAgent, except for what a
    factory given the settings made: it chose its model itself.
    """
    if target is None or isinstance(target, str):
        spec = (target or "").strip() or DEMO
        where = f"AGENT {spec!r}"
        if _is_file(spec):
            found = _from_module(_module_of_file(spec, where), where)
        elif _is_folder(spec):
            found = _from_folder(Path(spec), where)
        else:
            found = _from_module(spec, where)
    else:
        found, where = target, "the agent given to create_app"
    # A factory given the settings chose its model itself; one of no parameters did not.
    chose = inspect.isfunction(found) and _takes_settings(found)
    model = _model(settings) if settings.model and not chose else None
    if inspect.isfunction(found):
        made = call_factory(found, settings, where)
        return _as_hosted(made, f"{where} (what the function returned)", model)
    return _as_hosted(found, where, model)


def named(spec: str, where: str) -> object:
    """What ``package.module:attr`` names; HostingError saying what is missing where."""
    return _from_module(spec, where)


def _is_file(spec: str) -> bool:
    return spec.partition(":")[0].endswith(".py")


def _module_of_file(spec: str, where: str) -> str:
    """``path/to/agent.py[:attr]`` as a module spec: the file's module, named from the
    outermost folder above it that is not a package, which goes first on ``sys.path`` (as
    ``python path/to/agent.py`` puts its folder), so its relative imports work. A worker
    process loads the same spec the same way."""
    path, colon, attribute = spec.partition(":")
    file = Path(path).resolve()
    if not file.is_file():
        raise HostingError(f"{where}: {file} is not a file.")
    parts, root = [file.stem], file.parent
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return ".".join(parts) + colon + attribute


def _is_folder(spec: str) -> bool:
    return os.sep in spec or spec.startswith(".") or Path(spec).is_dir()


def _from_module(spec: str, where: str) -> object:
    module_name, colon, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # the user's module may raise anything while importing
        raise HostingError(
            f"{where}: module {module_name!r} cannot be imported "
            f"({type(error).__name__}: {first_line(error)})."
        ) from error
    if colon:
        if not hasattr(module, attribute):
            raise HostingError(
                f"{where}: module {module_name!r} ({_origin(module)}) has no attribute "
                f"{attribute!r}."
            )
        return getattr(module, attribute)
    wrappers = [name for name, value in vars(module).items() if agui_adk.is_adk_agent(value)]
    if len(wrappers) == 1:
        return getattr(module, wrappers[0])
    if wrappers:
        raise HostingError(
            f"{where}: module {module_name!r} ({_origin(module)}) builds "
            f"{len(wrappers)} ADKAgents; serve one of them: {_choices(module_name, wrappers)}."
        )
    for default in ("app", "root_agent"):
        found = getattr(module, default, None)
        if isinstance(found, BaseAgent | App | Hosted) or inspect.isfunction(found):
            return found
    agents = [
        name
        for name, value in vars(module).items()
        if isinstance(value, BaseAgent | App) and not name.startswith("_")
    ]
    app = getattr(module, "app", None)
    if app is not None:
        instead = (
            f"serve one of its agents instead: {_choices(module_name, agents)}"
            if agents
            else "name an ADK agent as module:attribute"
        )
        raise HostingError(
            f"{where}: module {module_name!r} ({_origin(module)}) holds {_kind(app)} as "
            f"'app', not an ADK agent or App; {instead}."
        )
    raise HostingError(
        f"{where}: module {module_name!r} ({_origin(module)}) has neither 'app' nor "
        "'root_agent'; name the agent as module:attribute."
    )


def _choices(module_name: str, names: list[str]) -> str:
    return " or ".join(f"{module_name}:{name}" for name in names)


def _from_folder(folder: Path, where: str) -> object:
    from google.adk.cli.utils.agent_loader import AgentLoader

    folder = folder.resolve()
    if not folder.is_dir():
        raise HostingError(f"{where}: {folder} is not a folder.")
    if not (folder / "agent.py").is_file() and not (folder / "root_agent.yaml").is_file():
        raise HostingError(
            f"{where}: {folder} is not an ADK agent folder: it has no agent.py defining "
            "root_agent (or root_agent.yaml)."
        )
    try:
        return AgentLoader(str(folder)).load_agent(folder.name)
    except Exception as error:  # ADK's loader re-raises whatever the agent's code raised
        raise HostingError(f"{where}: ADK could not load {folder}: {first_line(error)}") from error


def call_factory(factory: Any, settings: Settings, where: str) -> object:
    """What a function the user named returns, given the settings if it takes them (a
    parameter it must be given, or one named ``settings``), else called with nothing, as
    ``create_agent()`` factories are written; what it returns awaited if it is awaitable
    (an ``async def`` factory, as ADK samples write some: ``_awaited``); HostingError if it
    raises."""
    try:
        made = factory(settings) if _takes_settings(factory) else factory()
        return _awaited(made) if inspect.isawaitable(made) else made
    except (HostingError, models.ModelError):
        raise
    except Exception as error:  # the user's factory may raise anything
        raise HostingError(
            f"{where}: the function raised {type(error).__name__}: {first_line(error)}"
        ) from error


def _awaited(made: Awaitable[object]) -> object:
    """What an ``async def`` factory's coroutine comes to, run on an event loop of its own
    (``asyncio.run``) that is closed once it returns, before the gateway's loop runs: in the
    main process and in each worker alike (both load before they serve). When this thread
    runs a loop already (``create_app`` called from async code), the factory's loop runs in
    a thread of its own: a loop cannot wait for its own coroutine without returning to it.
    What the factory opens that belongs to its loop (a connection, a client session) is
    closed with it; an agent's toolsets open theirs when a run first needs them."""

    async def result() -> object:
        return await made

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(result())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="agent-factory") as pool:
        return pool.submit(asyncio.run, result()).result()


def _takes_settings(factory: Any) -> bool:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature to read: as before, given the settings
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(
        p.kind in positional and (p.default is inspect.Parameter.empty or p.name == "settings")
        for p in parameters
    ) or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)


def _as_hosted(found: object, where: str, model: Any) -> Hosted:
    if agui_adk.is_adk_agent(found):
        return _unwrapped(found, where, model)
    if isinstance(found, Hosted):
        return found if model is None else _with_model(found, model)
    if isinstance(found, BaseAgent | App):
        return Hosted(found, model=model)
    raise HostingError(
        f"{where} is {_kind(found)}, not an ADK agent, an App or a gateway.Hosted "
        "(or a function of the Settings returning one)."
    )


def _unwrapped(adk_agent: object, where: str, model: Any) -> Hosted:
    """ag-ui-adk's ``ADKAgent``: its agent, with the settings the gateway keeps; each one
    it does not keep is logged with why and what to set instead."""
    try:
        unwrapped = agui_adk.unwrap(adk_agent)
    except ValueError as error:
        raise HostingError(f"{where}: an ADKAgent the gateway cannot serve: {error}.") from None
    agent = unwrapped.agent
    if isinstance(agent, BaseAgent) and unwrapped.app_name and unwrapped.app_name != agent.name:
        agent = resumable_app(agent, unwrapped.app_name)
    kept = [name for name in ("app_name", "predict_state") if getattr(unwrapped, name)]
    log.info(
        "%s: serving the agent an ADKAgent wraps, as App %r (settings kept: %s)",
        where,
        agent.name,
        ", ".join(kept) or "none",
    )
    for setting, value, why in unwrapped.dropped:
        log.warning("%s: ADKAgent's %s=%r is not kept: %s", where, setting, value, why)
    return Hosted(agent, model=model, predict_state=unwrapped.predict_state)


def _with_model(hosted: Hosted, model: Any) -> Hosted:
    return dataclasses.replace(hosted, model=model)


def _model(settings: Settings) -> Any:
    try:
        return names.build(settings.model, pace_ms=settings.scripted_pace_ms)
    except models.ModelError as error:
        raise HostingError(str(error)) from None


def _kind(found: object) -> str:
    if inspect.ismodule(found):
        return f"the module {found.__name__}"
    return f"a {type(found).__module__}.{type(found).__qualname__}"


def _origin(module: Any) -> str:
    return str(getattr(module, "__file__", None) or "a namespace package")
