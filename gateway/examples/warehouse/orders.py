"""The warehouse's order desk: an MCP server over streamable HTTP, run on its own.

``python -m gateway.examples.warehouse.orders`` serves MCP at http://127.0.0.1:8931/mcp
(``--host``/``--port`` to change it). Reservations live in this process's memory;
``--reserve-seconds`` is how long the desk takes to confirm one.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from gateway.examples.warehouse.stock import ITEMS

HOST = "127.0.0.1"
PORT = 8931
PATH = "/mcp"


def build_server(reserve_seconds: float = 0.0) -> MCPServer:
    server = MCPServer("warehouse-orders", instructions="Reserves stock for orders.")
    numbers = itertools.count(1)
    reserved: dict[str, int] = {}

    @server.tool()
    async def reserve_stock(sku: str, quantity: int, order: str) -> dict[str, Any]:
        """Reserves a quantity of an item for an order; what is reserved cannot be sold."""
        if sku not in ITEMS:
            raise ToolError(f"No item {sku} in this warehouse; find_items lists the skus.")
        name, _, on_hand = ITEMS[sku]
        free = on_hand - reserved.get(sku, 0)
        if not 0 < quantity <= free:
            raise ToolError(f"Cannot reserve {quantity} of {sku}: {free} are free.")
        reserved[sku] = reserved.get(sku, 0) + quantity
        await asyncio.sleep(reserve_seconds)
        return {
            "status": "reserved",
            "reservation": f"RES-{next(numbers)}",
            "sku": sku,
            "name": name,
            "quantity": quantity,
            "order": order,
            "free": free - quantity,
        }

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=HOST)
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--reserve-seconds", type=float, default=0.0)
    args = parser.parse_args(argv)
    server = build_server(args.reserve_seconds)
    server.run("streamable-http", host=args.host, port=args.port, streamable_http_path=PATH)


if __name__ == "__main__":
    main()
