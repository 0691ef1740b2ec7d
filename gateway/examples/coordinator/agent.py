"""The help desk and its order desk, as ``agent-gateway serve
gateway.examples.coordinator.agent`` hosts them."""

from __future__ import annotations

from importlib.resources import files

from google.adk.agents import LlmAgent

from gateway.examples.coordinator import orders
from gateway.models.script import ScriptLlm

# Fast enough for tests, slow enough that a person sees the reply stream.
PACE_MS = 10.0
# One model object for both agents: the script tells them apart by what each is offered.
MODEL = ScriptLlm.from_file(files(__package__) / "script.json", pace_ms=PACE_MS)

order_desk = LlmAgent(
    name="order_desk",
    model=MODEL,
    description="Tracks orders and answers anything about an order's delivery.",
    instruction=(
        "You answer questions about orders. Call track_order with the order id (such as "
        "O-1042) and say what it reports; ask for the id if the user gave none. Transfer "
        "anything that is not about an order back to help_desk."
    ),
    tools=[orders.track_order],
)

root_agent = LlmAgent(
    name="help_desk",
    model=MODEL,
    description="The first point of contact: greets users and routes their questions.",
    instruction=(
        "You are the help desk. Transfer every question about an order, a package or a "
        "delivery to order_desk; answer anything else yourself, briefly."
    ),
    sub_agents=[order_desk],
)
