"""The warehouse's stock server: an MCP server over stdio, started by the agent's toolset.

``python -m gateway.examples.warehouse.stock`` speaks MCP on its stdin and stdout, so the
gateway (ADK's ``McpToolset``) starts it as a child process and stops it with the gateway.
``--count-seconds`` is how long a shelf count takes (a person walks to the shelf).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# What the warehouse holds: sku -> (name, shelf, on hand).
ITEMS: dict[str, tuple[str, str, int]] = {
    "SKU-100": ("Pallet jack", "A-01", 4),
    "SKU-200": ("Packing tape, 50 m", "B-07", 320),
    "SKU-300": ("Cardboard box, large", "B-12", 85),
    "SKU-400": ("Label printer", "C-03", 2),
}


def build_server(count_seconds: float = 1.0) -> MCPServer:
    server = MCPServer("warehouse-stock", instructions="The warehouse's stock, by shelf.")

    @server.tool()
    def find_items(query: str) -> dict[str, Any]:
        """Finds items whose name or sku contains the query, with their shelf and stock."""
        words = query.casefold().split()
        found = [
            {"sku": sku, "name": name, "shelf": shelf, "onHand": on_hand}
            for sku, (name, shelf, on_hand) in ITEMS.items()
            if all(word in f"{sku} {name}".casefold() for word in words)
        ]
        summary = "; ".join(
            f"{item['sku']} {item['name']} ({item['onHand']} on shelf {item['shelf']})"
            for item in found
        )
        return {"query": query, "count": len(found), "items": found, "summary": summary}

    @server.tool()
    async def count_shelf(sku: str) -> dict[str, Any]:
        """Counts an item on its shelf again, which takes a while; returns what was counted."""
        if sku not in ITEMS:
            raise ToolError(f"No item {sku} in this warehouse; find_items lists the skus.")
        name, shelf, on_hand = ITEMS[sku]
        await asyncio.sleep(count_seconds)
        return {"sku": sku, "name": name, "shelf": shelf, "counted": on_hand}

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count-seconds", type=float, default=1.0)
    args = parser.parse_args(argv)
    build_server(args.count_seconds).run("stdio")


if __name__ == "__main__":
    main()
