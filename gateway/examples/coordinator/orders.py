"""The order desk's one tool: where an order is."""

from __future__ import annotations

from typing import Any

# The example's orders, by id: status and what it means for the customer.
ORDERS = {
    "O-1042": ("shipped", "it left the warehouse on Monday and arrives on Thursday"),
    "O-1077": ("packing", "it is being packed and ships tomorrow"),
    "O-1100": ("delivered", "it was delivered on Friday"),
}


def track_order(order_id: str) -> dict[str, Any]:
    """Tracks an order by its id, such as O-1042: its status and when it arrives."""
    found = ORDERS.get(order_id.upper())
    if found is None:
        return {"error": f"there is no order {order_id}"}
    status, detail = found
    return {"orderId": order_id.upper(), "status": status, "detail": detail}
