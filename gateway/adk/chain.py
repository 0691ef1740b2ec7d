"""The gateway's plugins as one ADK plugin, each callback calling only the plugins that have it.

Theory of operation. ADK's ``PluginManager`` awaits every plugin's method for every callback
of a run, whether the plugin has one or inherits ``BasePlugin``'s that does nothing: with
the gateway's ten plugins, each streamed chunk met ten ``after_model_callback`` awaits for
the two plugins that read it, and each event ten ``on_event_callback`` for four (profiled,
over 300 calls a run that do nothing). ``PluginChain`` stands in for them in the App's
plugin list: for each callback, it holds the methods of those of its plugins that override
it, in their order, and calls them as ADK would: the first that returns a value ends the
callback, except for ADK's notifications (``NOTIFICATIONS``: an agent's or a run's error),
which reach every plugin, one's failure logged and not stopping the next. A callback none
of them has stays ``BasePlugin``'s. The plugins themselves are unchanged, and ``plugins``
lists them.

Two callbacks come at every streamed chunk (``STREAMED``: ~30 a model call), and a plugin
with nothing to do with a chunk still costs an await there (~0.3 µs): a plugin's callback
marked ``passes_over_chunks`` is called only for the rest, a response or an event whose
``partial`` is not set.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from google.adk.plugins.base_plugin import BasePlugin

# Every callback ADK's PluginManager may call on a plugin.
CALLBACKS = tuple(
    name for name in dir(BasePlugin) if name.endswith("_callback") and not name.startswith("_")
)

# What ADK's PluginManager tells every plugin of, whatever each returns or raises.
NOTIFICATIONS = frozenset({"on_agent_error_callback", "on_run_error_callback"})
# The callbacks ADK calls at each streamed chunk, and the argument that says it is one.
STREAMED = {"after_model_callback": "llm_response", "on_event_callback": "event"}

Callback = Callable[..., Awaitable[Any]]
C = TypeVar("C", bound=Callback)

log = logging.getLogger(__name__)

# The plugins' callbacks that do nothing for a streamed chunk (``passes_over_chunks``).
_PASSING_OVER_CHUNKS: set[Callback] = set()


def passes_over_chunks(callback: C) -> C:
    """Marks a plugin's ``after_model_callback`` or ``on_event_callback`` that returns None
    at once for a streamed chunk, as it still does itself: a chain calls it only for the
    rest."""
    _PASSING_OVER_CHUNKS.add(callback)
    return callback


class PluginChain(BasePlugin):
    """``plugins`` as one plugin named ``name``, called in their order."""

    def __init__(self, plugins: Sequence[BasePlugin], name: str = "gateway") -> None:
        super().__init__(name=name)
        self.plugins = list(plugins)
        for callback in CALLBACKS:
            methods = [
                getattr(plugin, callback) for plugin in self.plugins if _overrides(plugin, callback)
            ]
            for_chunks = [method for method in methods if not _passes_over_chunks(method)]
            if callback in STREAMED and len(for_chunks) < len(methods):
                setattr(self, callback, _streamed(methods, for_chunks, STREAMED[callback]))
            elif len(methods) == 1:
                setattr(self, callback, methods[0])
            elif methods and callback in NOTIFICATIONS:
                setattr(self, callback, _notifying(methods, callback))
            elif methods:
                setattr(self, callback, _chained(methods))

    async def close(self) -> None:
        for plugin in self.plugins:
            await plugin.close()


def _overrides(plugin: BasePlugin, callback: str) -> bool:
    return getattr(type(plugin), callback) is not getattr(BasePlugin, callback)


def _passes_over_chunks(method: Callback) -> bool:
    return getattr(method, "__func__", method) in _PASSING_OVER_CHUNKS


def _streamed(
    methods: Sequence[Callback], for_chunks: Sequence[Callback], argument: str
) -> Callback:
    """``methods`` chained, only ``for_chunks`` of them for a streamed chunk."""

    async def callback(**kwargs: Any) -> Any:
        for method in for_chunks if kwargs[argument].partial else methods:
            result = await method(**kwargs)
            if result is not None:
                return result
        return None

    return callback


def _chained(methods: Sequence[Callback]) -> Callback:
    async def callback(**kwargs: Any) -> Any:
        for method in methods:
            result = await method(**kwargs)
            if result is not None:
                return result
        return None

    return callback


def _notifying(methods: Sequence[Callback], name: str) -> Callback:
    async def callback(**kwargs: Any) -> None:
        for method in methods:
            try:
                await method(**kwargs)
            except Exception:  # as ADK does: each plugin is told, whatever another did
                plugin = getattr(method, "__self__", None)
                log.exception("%s failed in %s", getattr(plugin, "name", method), name)

    return callback
