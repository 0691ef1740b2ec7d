"""The warehouse agent: ADK's ``McpToolset`` on two MCP servers of its own, with an offline
model that plays ``script.json`` ("find tape", "count SKU-100", "reserve SKU-100 for O-1").

    pip install 'agent-gateway[mcp]'
    python -m gateway.examples.warehouse.orders &          # the order desk, on 127.0.0.1:8931
    agent-gateway serve gateway.examples.warehouse.agent   # starts the stock server itself

- The stock server (``stock.py``: ``find_items``, ``count_shelf``) speaks MCP over stdio: its
  toolset starts it as a child process of the gateway the first time a run lists its tools
  (the start-up warm-up does), starts it again if it dies, and stops it with the gateway.
- The order desk (``orders.py``: ``reserve_stock``) speaks MCP over streamable HTTP and runs
  on its own, at ``WAREHOUSE_ORDERS_URL`` if set. Every reservation waits for a person:
  ``require_confirmation`` on its toolset pauses the run as an AG-UI interrupt, and only an
  approval makes the call.

A server that is not up is not a reason not to serve: ADK runs the agent without that
server's tools and logs why. A server that fails during a call ends the run with AGENT_ERROR
(see ``gateway.tools.mcp``). ADK looks for Google credentials (asking the cloud metadata
server too) to try mTLS with an HTTP MCP server; ``GOOGLE_API_USE_CLIENT_CERTIFICATE=false``
skips that for a local one.
"""

from __future__ import annotations

import os
import sys
from importlib.resources import files
from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.tools.mcp_tool import (
    McpToolset,
    StdioConnectionParams,
    StreamableHTTPConnectionParams,
)
from mcp import StdioServerParameters

from gateway.examples.warehouse import orders
from gateway.models.script import ScriptLlm

ORDERS_URL = f"http://{orders.HOST}:{orders.PORT}{orders.PATH}"
# Fast enough for tests, slow enough that a person sees the reply stream.
PACE_MS = 10.0

INSTRUCTION = """\
You help the warehouse team. find_items shows what the warehouse holds, with shelves and
stock; count_shelf counts an item on its shelf again. reserve_stock reserves items for an
order, and a person approves every reservation first: when one is rejected, say that
nothing was reserved and why."""


def stock_server(count_seconds: float = 1.0) -> StdioConnectionParams:
    """The stock server as a child process: this Python, running ``stock.py`` as a file, so
    it starts the same from a checkout or a wheel whatever the child's environment."""
    script = Path(__file__).with_name("stock.py")
    command = [str(script), "--count-seconds", str(count_seconds)]
    return StdioConnectionParams(
        server_params=StdioServerParameters(command=sys.executable, args=command),
        timeout=10.0,
    )


def orders_server(url: str | None = None) -> StreamableHTTPConnectionParams:
    """The order desk at ``url``, else ``WAREHOUSE_ORDERS_URL``, else where orders.py serves."""
    url = url or os.environ.get("WAREHOUSE_ORDERS_URL") or ORDERS_URL
    return StreamableHTTPConnectionParams(url=url, timeout=5.0)


def build_agent(
    model: BaseLlm | str,
    *,
    stock: StdioConnectionParams | None = None,
    orders_at: StreamableHTTPConnectionParams | None = None,
) -> LlmAgent:
    return LlmAgent(
        name="warehouse",
        model=model,
        instruction=INSTRUCTION,
        tools=[
            McpToolset(connection_params=stock or stock_server()),
            # A person approves every call of the order desk's tools.
            McpToolset(connection_params=orders_at or orders_server(), require_confirmation=True),
        ],
    )


root_agent = build_agent(ScriptLlm.from_file(files(__package__) / "script.json", pace_ms=PACE_MS))
