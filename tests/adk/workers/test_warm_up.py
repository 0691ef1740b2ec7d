"""A worker warms up before it says it is ready: one greeting through the App the main
process's warm-up meets, as the warm-up user, stored nowhere; a warm-up that fails leaves
the worker serving cold, never not at all."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.plugins.base_plugin import BasePlugin

from gateway.adk.chain import PluginChain
from gateway.adk.hosting import GATEWAY_PLUGINS, Hosted, prepare, resumable_app
from gateway.adk.invocation import Invocation
from gateway.adk.services import Services
from gateway.adk.stand_in import stand_in
from gateway.adk.workers.warm_up import warm_up
from gateway.auth import WARM_UP_USER
from gateway.tools.client import ClientTool, ClientToolset

pytestmark = pytest.mark.unit


class Seen(BasePlugin):
    """Who the model calls were made for."""

    def __init__(self) -> None:
        super().__init__(name="seen")
        self.users: list[str] = []

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> None:
        self.users.append(callback_context.user_id)


class Refusing(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="refusing")

    async def before_model_callback(self, **_: Any) -> None:
        raise RuntimeError("the model is not there")


async def no_surfaces(user_id: str, thread_id: str) -> Any:
    raise AssertionError("the warm-up shows no surface")


def hosted_app(*plugins: BasePlugin) -> Any:
    agent = LlmAgent(name="assistant", model="gemini-2.5-flash", instruction="Help.")
    return resumable_app(agent, name="hosted", plugins=list(plugins))


async def test_a_worker_warms_up_with_one_greeting_as_the_warm_up_user() -> None:
    seen = Seen()
    tools = ClientToolset()
    app = stand_in(hosted_app(), tools, [seen])
    offered = {"openPage": ClientTool("openPage", "Opens a page.", {"type": "object"})}
    await warm_up(app, Invocation(tools, None, no_surfaces), Services(), offered)
    assert seen.users == [WARM_UP_USER]


async def test_a_warm_up_that_fails_is_logged_and_the_worker_serves_anyway(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = ClientToolset()
    app = stand_in(hosted_app(), tools, [Refusing()])
    with caplog.at_level(logging.WARNING, logger="gateway.adk.workers.warm_up"):
        await warm_up(app, Invocation(tools, None, no_surfaces), Services(), {})
    [failed] = [r for r in caplog.records if r.name == "gateway.adk.workers.warm_up"]
    assert "warm-up failed" in failed.getMessage()


def test_the_stand_in_calls_the_gateways_plugins_as_one_chain_as_the_hosted_app_does() -> None:
    tools, ours = ClientToolset(), [Seen(), Refusing()]
    own = Seen()
    hosted = prepare(Hosted(hosted_app(own)), tools, ours)
    warmed = stand_in(hosted, tools, ours)
    [chain] = warmed.plugins  # not the App's own plugin, and ADK dispatches to one
    assert isinstance(chain, PluginChain) and chain.name == GATEWAY_PLUGINS
    assert hosted.plugins[0] is own and isinstance(hosted.plugins[-1], PluginChain)
    assert chain.plugins == ours == hosted.plugins[-1].plugins
