"""ag-ui-adk as an oracle: the same ADK agent served by AG-UI's own ADK middleware, on a
loopback port, so a test can put what a dojo frontend sees from it beside what it sees
from the gateway.

``running_agui_adk(agent, **options)`` yields the endpoint's URL; ``options`` go to
``ag_ui_adk.ADKAgent`` as a team leaving it would have written them (``predict_state=…``).
Drive it with ``tests.support.official_client.run_http_agent(url, …)``. ``serving(by,
agent, **options)`` is either side, for a test that runs both: the gateway (``by ==
"gateway"``, options as ``running_gateway`` takes them) or ag-ui-adk.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from google.adk.agents.base_agent import BaseAgent

from tests.support.budgets import eventually
from tests.support.ports import free_port
from tests.support.servers import RunningGateway, running_gateway

SIDES = ("gateway", "ag-ui-adk")


@asynccontextmanager
async def running_agui_adk(agent: BaseAgent, **options: Any) -> AsyncIterator[str]:
    """ag-ui-adk serving ``agent`` at ``http://127.0.0.1:<port>/`` until the block ends."""
    from ag_ui_adk import ADKAgent, create_adk_app

    with warnings.catch_warnings():  # its in-memory credential service is "experimental"
        warnings.simplefilter("ignore", UserWarning)
        middleware = ADKAgent(
            adk_agent=agent, app_name=options.pop("app_name", "oracle"), user_id="demo", **options
        )
    port = free_port()
    config = uvicorn.Config(
        create_adk_app(middleware, path="/"),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: server.started or task.done(), 30, what="ag-ui-adk to listen")
        if task.done():
            task.result()
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        await task


@asynccontextmanager
async def serving(by: str, agent: BaseAgent, **options: Any) -> AsyncIterator[RunningGateway | str]:
    """``agent`` served by the gateway or by ag-ui-adk (``SIDES``), with ``options`` each
    side takes the same way (``predict_state=[PredictStateMapping(...)]``)."""
    if by == "gateway":
        async with running_gateway(agent=agent, **options) as gateway:
            yield gateway
    else:
        async with running_agui_adk(agent, **options) as url:
            yield url
