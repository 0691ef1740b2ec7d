"""The gateway's plugins as one: ADK meets each callback once, and it reaches only the plugins
that have it, in their order, the first answer ending it as ADK's own dispatch would."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.plugins.plugin_manager import PluginManager

from gateway.adk.chain import PluginChain

pytestmark = pytest.mark.unit


class Noting(BasePlugin):
    """Notes each event it sees; answers with ``answer`` (None: lets the next one see it)."""

    def __init__(self, name: str, seen: list[str], answer: Any = None) -> None:
        super().__init__(name=name)
        self.seen = seen
        self.answer = answer
        self.closed = False

    async def on_event_callback(self, **kwargs: Any) -> Any:
        self.seen.append(self.name)
        return self.answer

    async def close(self) -> None:
        self.closed = True


class Silent(BasePlugin):
    """Has no callback of its own."""


async def test_a_callback_reaches_the_plugins_that_have_it_until_one_answers() -> None:
    seen: list[str] = []
    plugins = [Noting("a", seen), Silent(name="s"), Noting("b", seen, "b's"), Noting("c", seen)]
    manager = PluginManager(plugins=[PluginChain(plugins)])
    answer = await manager.run_on_event_callback(invocation_context=None, event=None)  # type: ignore[arg-type]
    assert answer == "b's"
    assert seen == ["a", "b"]


async def test_a_callback_nobody_has_does_nothing_and_one_that_one_has_is_its_own() -> None:
    seen: list[str] = []
    only = Noting("only", seen)
    chain = PluginChain([only, Silent(name="s")])
    assert chain.on_event_callback == only.on_event_callback
    assert await chain.after_model_callback(callback_context=None, llm_response=None) is None  # type: ignore[arg-type]


async def test_closing_the_chain_closes_each_plugin() -> None:
    plugins = [Noting("a", []), Noting("b", [])]
    await PluginChain(plugins).close()
    assert all(plugin.closed for plugin in plugins)


class Failing(BasePlugin):
    async def on_run_error_callback(self, **kwargs: Any) -> None:
        raise RuntimeError("this plugin fails")


class Told(BasePlugin):
    def __init__(self, name: str) -> None:
        super().__init__(name=name)
        self.told = False

    async def on_run_error_callback(self, **kwargs: Any) -> None:
        self.told = True


async def test_a_runs_error_reaches_every_plugin_though_one_fails() -> None:
    """ADK tells each plugin of a run's error whatever another does: so does the chain."""
    told = Told("told")
    manager = PluginManager(plugins=[PluginChain([Failing(name="failing"), told])])
    await manager.run_on_run_error_callback(invocation_context=None, error=ValueError())  # type: ignore[arg-type]
    assert told.told
