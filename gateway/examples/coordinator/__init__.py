"""A help desk that hands order questions to an order desk: ADK's ``transfer_to_agent``.

The coordinator (``help_desk``) answers what it can and transfers anything about an order
to its sub-agent, the specialist (``order_desk``), which tracks the order with a tool of
its own and answers in the same run. The next turn goes to whichever agent ADK picks: the
order desk keeps the conversation while it is about orders and hands anything else back.
Both agents' model, unless ``GATEWAY_MODEL`` names another, plays ``script.json`` offline:
one script for both, each agent meeting the rules its tools let it follow.

    agent-gateway serve gateway.examples.coordinator.agent
"""
