"""A warehouse assistant whose tools are MCP servers: ADK's ``McpToolset``.

``stock`` (``find_items``, ``count_shelf``) is an MCP server over stdio that the agent's
toolset starts as a child process; ``orders`` (``reserve_stock``) is an MCP server over
streamable HTTP that runs on its own, and every call of it waits for a person's approval.
Both are written with the ``mcp`` package (``pip install 'agent-gateway[mcp]'``). The
agent's model, unless ``GATEWAY_MODEL`` names another, plays ``script.json`` offline.

    python -m gateway.examples.warehouse.orders &
    agent-gateway serve gateway.examples.warehouse.agent
"""
