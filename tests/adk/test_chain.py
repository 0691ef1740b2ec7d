"""The gateway's plugins as one: ADK meets each callback once, and it reaches only the plugins
that have it, in their order, the first answer ending it as ADK's own dispatch would."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.plugins.plugin_manager import PluginManager

from gateway.adk import chain
from gateway.adk.chain import PluginChain, passes_over_chunks
from gateway.adk.confirm_changes import ConfirmChangesPlugin
from gateway.adk.resumability import PauseRefusal
from gateway.adk.usage import UsagePlugin

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


class Counting(BasePlugin):
    """Notes each response it is shown."""

    def __init__(self, name: str, seen: list[str]) -> None:
        super().__init__(name=name)
        self.seen = seen

    async def after_model_callback(self, *, llm_response: LlmResponse, **_: Any) -> None:
        self.seen.append(self.name)


class Finals(Counting):
    """Has nothing to do with a streamed chunk, and says so; notes every call all the same."""

    @passes_over_chunks
    async def after_model_callback(self, *, llm_response: LlmResponse, **_: Any) -> None:
        self.seen.append(f"{self.name} ({'chunk' if llm_response.partial else 'final'})")


async def test_a_plugin_that_passes_over_streamed_chunks_is_not_called_for_one() -> None:
    """A chunk comes ~30 times a model call; a plugin with nothing to do with it is not
    awaited for it (docs/performance.md, session 52), and sees the final response."""
    seen: list[str] = []
    manager = PluginManager(plugins=[PluginChain([Finals("usage", seen), Counting("calls", seen)])])
    for partial in (True, True, False):
        response = LlmResponse(partial=partial)
        await manager.run_after_model_callback(callback_context=None, llm_response=response)  # type: ignore[arg-type]
    assert seen == ["calls", "calls", "usage (final)", "calls"]
    assert await manager.run_on_event_callback(invocation_context=None, event=None) is None  # type: ignore[arg-type]


def test_the_gateways_plugins_with_nothing_to_do_at_a_chunk_say_so() -> None:
    assert UsagePlugin.after_model_callback in chain._PASSING_OVER_CHUNKS
    assert ConfirmChangesPlugin.after_model_callback in chain._PASSING_OVER_CHUNKS
    assert PauseRefusal.on_event_callback in chain._PASSING_OVER_CHUNKS
