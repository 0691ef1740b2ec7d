"""Identity at every door of a real jwt-mode gateway: SSE, /ws (header, subprotocol,
ticket), /me, /ws-ticket; refusals as HTTP 401/403 before anything else; tenancy."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from gateway.auth.tokens import TokenVerifier
from tests.support.agui import (
    AgUiSocket,
    new_id,
    outcome,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.auth import JWT, bearer, post_run, ticket_for
from tests.support.flagship import FLAGSHIP
from tests.support.servers import RunningGateway, running_gateway
from tests.support.tokens import SECRET, token

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
async def gateway() -> AsyncIterator[RunningGateway]:
    async with running_gateway(**JWT) as running:
        yield running


def socket(
    gateway: RunningGateway,
    query: str = "",
    *,
    subprotocols: list[str] | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    url = f"ws://127.0.0.1:{gateway.port}/ws{query}"
    return connect(url, subprotocols=subprotocols, additional_headers=headers, max_size=None)  # type: ignore[arg-type]


async def refused_upgrade(gateway: RunningGateway, query: str = "", **options: Any) -> Any:
    with pytest.raises(InvalidStatus) as refused:
        async with socket(gateway, query, **options):
            pass
    return refused.value.response


# --- SSE ---------------------------------------------------------------------------------


async def test_sse_without_a_token_is_401_with_a_challenge_and_run_error(
    gateway: RunningGateway,
) -> None:
    response, events = await post_run(gateway, user_input(new_id("t"), "안녕"), {})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="agent-gateway"'
    assert response.headers["content-type"] == "text/event-stream"
    assert [e["code"] for e in events] == ["UNAUTHORIZED"]
    assert events[0]["type"] == "RUN_ERROR" and "Bearer" in events[0]["message"]


# Each bad token is minted as its test runs: one minted at import would have expired (for
# every reason but its own) by the time a long suite reached it.
@pytest.mark.parametrize(
    ("mint", "words"),
    [
        (lambda: token(exp=1_000_000), "expired"),
        (lambda: token(SECRET + "-not"), "signature"),
        (lambda: token(aud="elsewhere"), "audience"),
        (lambda: "garbage", "well-formed"),
    ],
    ids=["expired", "signature", "audience", "garbage"],
)
async def test_sse_with_a_bad_token_is_401_invalid_token(
    gateway: RunningGateway, mint: Callable[[], str], words: str
) -> None:
    credential = mint()
    response, events = await post_run(gateway, user_input(new_id("t"), "안녕"), bearer(credential))
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="agent-gateway", error="invalid_token"')
    assert words in challenge and credential not in challenge
    assert events[0]["code"] == "UNAUTHORIZED" and words in events[0]["message"]


async def test_sse_with_another_scheme_is_invalid_request(gateway: RunningGateway) -> None:
    response, events = await post_run(
        gateway, user_input(new_id("t"), "안녕"), {"Authorization": "Basic ZGVtbzpkZW1v"}
    )
    assert response.status_code == 401
    assert 'error="invalid_request"' in response.headers["www-authenticate"]
    assert events[0]["code"] == "UNAUTHORIZED"


async def test_sse_with_a_token_runs_as_the_token_user(gateway: RunningGateway) -> None:
    thread = new_id("t")
    # X-Gateway-User is not trusted in jwt mode: naming someone else is refused.
    response, events = await post_run(
        gateway, user_input(thread, "안녕"), {**bearer(token()), "X-Gateway-User": "demo"}
    )
    assert response.status_code == 403 and events[0]["code"] == "ACCESS_DENIED"
    response, events = await post_run(gateway, user_input(thread, "안녕"), bearer(token()))
    assert response.status_code == 200
    assert text_of(events).startswith("안녕하세요")
    assert gateway.app.hub is not None
    assert await gateway.app.hub.engine.thread_owner(thread) == "alice"


# --- /ws ---------------------------------------------------------------------------------


async def test_a_refused_upgrade_is_an_http_401_not_an_accept_then_close(
    gateway: RunningGateway,
) -> None:
    response = await refused_upgrade(gateway, "?user=demo")
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="agent-gateway"'
    body = json.loads(response.body)
    assert body["type"] == "RUN_ERROR" and body["code"] == "UNAUTHORIZED"
    assert "bearer.<token>" in body["message"] and "ticket" in body["message"]
    expired = await refused_upgrade(gateway, headers=bearer(token(exp=1_000_000)))
    assert expired.status_code == 401
    assert 'error="invalid_token"' in expired.headers["WWW-Authenticate"]


async def test_ws_by_subprotocol_selects_agui_never_the_token(gateway: RunningGateway) -> None:
    credential = token(sub="demo")
    async with socket(gateway, subprotocols=["agui", f"bearer.{credential}"]) as ws:
        assert ws.subprotocol == "agui"
        first = await AgUiSocket(ws).run(user_input(new_id("t"), FLAGSHIP))
        [navigate] = tool_calls(first, "navigateToScreen")
        assert navigate["args"]["screenId"] == "MNU-3120"


async def test_ws_token_offered_without_agui_is_refused(gateway: RunningGateway) -> None:
    response = await refused_upgrade(gateway, subprotocols=[f"bearer.{token()}"])
    assert response.status_code == 401
    assert 'error="invalid_request"' in response.headers["WWW-Authenticate"]
    assert '"agui"' in json.loads(response.body)["message"]


async def test_ws_by_bearer_header(gateway: RunningGateway) -> None:
    async with socket(gateway, headers=bearer(token())) as ws:
        assert ws.subprotocol is None
        events = await AgUiSocket(ws).run(user_input(new_id("t"), "hello"))
        assert outcome(events) == {"type": "success"}


async def test_two_credentials_at_once_are_refused(gateway: RunningGateway) -> None:
    response = await refused_upgrade(
        gateway, subprotocols=["agui", f"bearer.{token()}"], headers=bearer(token())
    )
    assert response.status_code == 401
    assert "one credential" in json.loads(response.body)["message"]


@pytest.mark.parametrize("way", ["header", "subprotocol"])
async def test_a_token_over_8_kib_on_ws_is_refused_as_on_http(
    gateway: RunningGateway, way: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Not a bare 400 from the protocol engine: a 401 with its challenge, a log line and an
    audit row, as the HTTP doors answer the same token."""
    caplog.set_level("INFO", logger="gateway.doors.access")
    oversize = "a" * 20_000
    options: dict[str, Any] = (
        {"headers": bearer(oversize)}
        if way == "header"
        else {"subprotocols": ["agui", f"bearer.{oversize}"]}
    )
    response = await refused_upgrade(gateway, "?clientId=" + way, **options)
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert 'error="invalid_request"' in challenge and "longer than 8192 bytes" in challenge
    assert json.loads(response.body)["code"] == "UNAUTHORIZED"
    assert any("refused WS /ws" in r.getMessage() for r in caplog.records)
    assert gateway.app.hub.audit is not None
    rows = await gateway.app.hub.audit.query_access(user="")
    assert any(r.door == "ws" and "longer than 8192" in (r.detail or "") for r in rows), rows


async def test_an_upgrade_the_engine_cannot_read_is_logged(
    gateway: RunningGateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="gateway.doors.transport")
    response = await refused_upgrade(gateway, headers={"X-Huge": "a" * 100_000})
    assert response.status_code in (400, 431)
    assert any("cannot read" in r.getMessage() for r in caplog.records)


async def test_a_ticket_opens_one_connection_once(gateway: RunningGateway) -> None:
    issued = await ticket_for(gateway, token())
    assert issued.status_code == 200
    assert issued.headers["cache-control"] == "no-store"
    body = issued.json()
    assert body["expiresIn"] == 30 and len(body["ticket"]) >= 40
    async with socket(gateway, f"?ticket={body['ticket']}") as ws:
        events = await AgUiSocket(ws).run(user_input(new_id("t"), "hello"))
        assert outcome(events) == {"type": "success"}
    used = await refused_upgrade(gateway, f"?ticket={body['ticket']}")
    assert used.status_code == 401
    assert "unknown, used or expired" in json.loads(used.body)["message"]


async def test_a_ticket_expires(gateway: RunningGateway) -> None:
    tickets = gateway.app.auth.tickets
    tickets.lifetime = 0.05
    try:
        ticket = (await ticket_for(gateway, token())).json()["ticket"]
    finally:
        tickets.lifetime = 30
    await asyncio.sleep(0.1)
    assert (await refused_upgrade(gateway, f"?ticket={ticket}")).status_code == 401


async def test_a_ticket_expires_no_later_than_its_token(gateway: RunningGateway) -> None:
    """A ticket opens no door its token could not: it ends at the token's exp plus the
    leeway the token itself is accepted with, however long tickets live otherwise."""
    tickets = gateway.app.auth.tickets
    # exp 19.5 s ago, accepted for 20 s (the verifier's 30 s leeway is the real one).
    tickets.leeway = 20
    try:
        issued = await ticket_for(gateway, token(exp=time.time() - 19.5))
    finally:
        tickets.leeway = gateway.app.settings.jwt_leeway
    body = issued.json()
    assert 0 < body["expiresIn"] <= 0.5
    await asyncio.sleep(0.6)
    refused = await refused_upgrade(gateway, f"?ticket={body['ticket']}")
    assert refused.status_code == 401
    assert "unknown, used or expired" in json.loads(refused.body)["message"]


async def test_a_ninth_ticket_replaces_the_oldest(gateway: RunningGateway) -> None:
    """README: a user holds at most 8 unused tickets; a ninth replaces their oldest."""
    credential = token(sub="ninth")
    issued = [(await ticket_for(gateway, credential)).json()["ticket"] for _ in range(9)]
    assert (await refused_upgrade(gateway, f"?ticket={issued[0]}")).status_code == 401
    async with socket(gateway, f"?ticket={issued[1]}"), socket(gateway, f"?ticket={issued[8]}"):
        pass


async def test_a_ticket_needs_a_token_and_is_not_one(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        refused = await client.post(gateway.http + "/ws-ticket")
        assert refused.status_code == 401 and refused.headers["www-authenticate"]
        assert refused.json()["code"] == "UNAUTHORIZED"
        assert (await client.get(gateway.http + "/ws-ticket")).status_code == 405
    ticket = (await ticket_for(gateway, token())).json()["ticket"]
    # A ticket opens /ws only; it is no bearer token for the HTTP doors.
    response, events = await post_run(gateway, user_input(new_id("t"), "안녕"), bearer(ticket))
    assert response.status_code == 401 and events[0]["code"] == "UNAUTHORIZED"


# --- public doors and /me ----------------------------------------------------------------


async def test_ping_and_tools_stay_public(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        assert (await client.get(gateway.http + "/ping")).json()["status"] == "Healthy"
        assert (await client.get(gateway.http + "/tools")).json()["tools"]


async def test_me_answers_only_for_the_caller(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        guest = bearer(token(sub="guest"))
        mine = await client.get(gateway.http + "/me", headers=guest)
        assert mine.status_code == 200 and mine.json()["userId"] == "guest"
        named = await client.get(gateway.http + "/me?user=guest", headers=guest)
        assert named.json()["userId"] == "guest"
        other = await client.get(gateway.http + "/me?user=demo", headers=guest)
        assert other.status_code == 403 and other.json()["code"] == "ACCESS_DENIED"
        anonymous = await client.get(gateway.http + "/me?user=demo")
        assert anonymous.status_code == 401 and anonymous.json()["code"] == "UNAUTHORIZED"


# --- tenancy -----------------------------------------------------------------------------


async def test_one_token_user_cannot_read_or_answer_another_users_thread(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    owner, intruder = bearer(token(sub="demo")), bearer(token(sub="guest"))
    async with socket(gateway, headers=owner) as raw:
        ws = AgUiSocket(raw)
        first = await ws.run(user_input(thread, FLAGSHIP))
        [navigate] = tool_calls(first, "navigateToScreen")
        answer = tool_answer(thread, [(navigate["id"], {"status": "navigated", "message": "ok"})])

        # Claiming the owner's name beside one's own token is refused at the door.
        assert (await refused_upgrade(gateway, "?user=demo", headers=intruder)).status_code == 403
        async with socket(gateway, headers=intruder) as other_raw:
            other = AgUiSocket(other_raw)
            await other.send({"type": "reattach", "threadId": thread})
            assert (await other.next())["code"] == "ACCESS_DENIED"
            denied = await other.run(answer)
            assert denied[-1]["code"] == "ACCESS_DENIED"
        refused = await refused_upgrade(gateway, f"?threadId={thread}", headers={})
        assert refused.status_code == 401
        response, events = await post_run(gateway, answer, intruder)
        assert response.status_code == 403 and events[0]["code"] == "ACCESS_DENIED"

        # The owner's run is untouched: their answer resumes it.
        second = await ws.run(answer)
        assert text_of(second) == "업무 요청 목록 화면으로 이동했습니다."


async def test_a_connection_lives_no_longer_than_its_token() -> None:
    async with running_gateway(**JWT, jwt_leeway=0) as gateway:
        expiring = token(exp=int(time.time()) + 2)
        async with socket(gateway, headers=bearer(expiring)) as raw:
            ws = AgUiSocket(raw)
            assert outcome(await ws.run(user_input(new_id("t"), "hello"))) == {"type": "success"}
            expired = await ws.next(timeout=5)
            assert expired["code"] == "UNAUTHORIZED" and "expired" in expired["message"]
            with pytest.raises(ConnectionClosed) as closed:
                await ws.next()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


async def test_a_failure_while_checking_a_token_is_an_internal_error_with_an_id(
    gateway: RunningGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: TokenVerifier, credential: str, via: str) -> None:
        raise RuntimeError("the key store is on fire")

    monkeypatch.setattr(TokenVerifier, "verify", broken)
    credential = token()
    response, events = await post_run(gateway, user_input(new_id("t"), "안녕"), bearer(credential))
    assert response.status_code == 500 and events[0]["code"] == "INTERNAL_ERROR"
    assert "error id" in events[0]["message"] and credential not in events[0]["message"]
    upgrade = await refused_upgrade(gateway, headers=bearer(credential))
    assert upgrade.status_code == 500
    assert json.loads(upgrade.body)["code"] == "INTERNAL_ERROR"
