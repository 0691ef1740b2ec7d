"""A gateway that asks who you are: its settings in jwt mode, and the requests that carry a
credential (a bearer header, a run posted to the SSE door, a ticket for /ws).

The keys and tokens themselves are ``tests.support.tokens``'.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.agui import sse_events
from tests.support.budgets import scaled
from tests.support.servers import RunningGateway
from tests.support.tokens import AUDIENCE, ISSUER, SECRET

JWT = {"auth": "jwt", "jwt_secret": SECRET, "jwt_issuer": ISSUER, "jwt_audience": AUDIENCE}


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


async def post_run(
    gateway: RunningGateway, body: dict[str, Any], headers: dict[str, str]
) -> tuple[httpx.Response, list[dict[str, Any]]]:
    async with httpx.AsyncClient(timeout=scaled(20)) as client:
        response = await client.post(
            gateway.http + "/invocations",
            content=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", **headers},
        )
    return response, sse_events(response.content)


async def ticket_for(gateway: RunningGateway, credential: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=scaled(10)) as client:
        return await client.post(gateway.http + "/ws-ticket", headers=bearer(credential))
