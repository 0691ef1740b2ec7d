"""What a jwt-mode gateway writes down about its callers: one log line per request or
connection (user, address, AgentCore session), never a token; and the audit's door rows."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from gateway.audit import AccessRecord
from tests.support.agui import AgUiSocket, new_id, outcome, resume, user_input
from tests.support.approvals import APPROVE
from tests.support.auth import JWT, bearer, post_run, ticket_for
from tests.support.servers import post_run as post_as_user
from tests.support.servers import running_gateway
from tests.support.tokens import SECRET, token

pytestmark = pytest.mark.server

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
# Where log records start: the gateway's own loggers reach the root, uvicorn's stop at "uvicorn".
LOGGERS = ("", "uvicorn")


# The test's own clients log what they send; only the server's records count.
CLIENT_LOGGERS = ("websockets.client", "httpx", "httpcore")


class Lines(logging.Handler):
    """The server's records, formatted with any traceback, from the loggers it is on."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith(CLIENT_LOGGERS):
            self.lines.append(self.format(record))


@contextlib.contextmanager
def every_log_line() -> Iterator[list[str]]:
    handler = Lines()
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.DEBUG)
    for name in LOGGERS:
        logging.getLogger(name).addHandler(handler)
    try:
        yield handler.lines
    finally:
        for name in LOGGERS:
            logging.getLogger(name).removeHandler(handler)
        root.setLevel(level)


async def ws_run(port: int, query: str = "", **options: object) -> None:
    url = f"ws://127.0.0.1:{port}/ws{query}"
    async with connect(url, max_size=None, **options) as raw:  # type: ignore[arg-type]
        events = await AgUiSocket(raw).run(user_input(new_id("t"), "hello"))
        assert outcome(events) == {"type": "success"}


async def ws_refused(port: int, query: str = "", **options: object) -> int:
    try:
        async with connect(f"ws://127.0.0.1:{port}/ws{query}", **options):  # type: ignore[arg-type]
            pass
    except InvalidStatus as refused:
        return refused.response.status_code
    raise AssertionError("the upgrade was accepted")


async def test_no_token_or_ticket_reaches_any_log_line_even_at_debug_level() -> None:
    good, expired, forged = token(), token(exp=1_000_000), token(SECRET + "-forged")
    async with running_gateway(**JWT, log_level="debug") as gateway:
        with every_log_line() as lines:
            port = gateway.port
            await post_run(gateway, user_input(new_id("t"), "안녕"), bearer(good))
            for bad in (expired, forged, "not-a-token"):
                await post_run(gateway, user_input(new_id("t"), "안녕"), bearer(bad))
                assert await ws_refused(port, additional_headers=bearer(bad)) == 401
            await ws_run(port, subprotocols=["agui", f"bearer.{good}"])
            await ws_run(port, additional_headers=bearer(good))
            ticket = (await ticket_for(gateway, good)).json()["ticket"]
            await ws_run(port, f"?ticket={ticket}")
            assert await ws_refused(port, f"?ticket={ticket}") == 401
    secrets = [good, expired, forged, ticket, *(t.rsplit(".", 1)[1] for t in (good, forged))]
    assert lines, "nothing was logged"
    for line in lines:
        for secret in secrets:
            assert secret not in line, line
    # The handshake headers were logged at debug level, with the credentials cut out.
    assert any("bearer.[redacted]" in line for line in lines)
    assert any("ticket=[redacted]" in line for line in lines)


async def test_each_request_and_connection_logs_user_address_and_agentcore_session() -> None:
    async with running_gateway(**JWT) as gateway:
        with every_log_line() as lines:
            headers = {**bearer(token()), SESSION_HEADER: "sess 42 user=root"}
            await post_run(gateway, user_input(new_id("t"), "안녕"), headers)
            await ws_run(gateway.port, additional_headers={**headers, SESSION_HEADER: "s" * 500})
            refused = {SESSION_HEADER: "sess-9"}
            await post_run(gateway, user_input(new_id("t"), "안녕"), refused)
    doors = [line for line in lines if "client=" in line]
    assert len(doors) == 3, doors
    sse, ws, anonymous = doors
    # A space could forge a key=value pair: it is escaped, and a long value is cut.
    assert sse.endswith(
        "POST /invocations user=alice via=bearer client=127.0.0.1 session=sess\\x2042\\x20user=root"
    )
    cut = f"{'s' * 64}…[436 more chars]"
    assert ws.endswith(f"WS /ws user=alice via=bearer client=127.0.0.1 session={cut}")
    assert "refused POST /invocations user=- client=127.0.0.1 session=sess-9: Sign in" in anonymous


async def test_the_audit_records_who_did_what_from_where() -> None:
    async with running_gateway(**JWT) as gateway:
        assert gateway.app.hub is not None and gateway.app.hub.audit is not None
        audit = gateway.app.hub.audit
        thread = new_id("t")
        # The demo's requests are ORG-01's: only its users see them.
        owner = bearer(token(sub="demo", org="ORG-01"))
        intruder = bearer(token(sub="guest", org="other"))
        url = f"ws://127.0.0.1:{gateway.port}/ws"
        async with connect(url, additional_headers=owner) as raw:
            ws = AgUiSocket(raw)
            asked = await ws.run(user_input(thread, APPROVE))
            [interrupt] = outcome(asked)["interrupts"]
            async with connect(url, additional_headers=intruder) as other_raw:
                other = AgUiSocket(other_raw)
                denied = await other.run(
                    resume(thread, interrupt["id"], payload={"approved": True})
                )
                assert denied[-1]["code"] == "ACCESS_DENIED"
                refused = await other.refused({"type": "reattach", "threadId": thread})
                assert refused["code"] == "ACCESS_DENIED"
            approved = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
            assert outcome(approved) == {"type": "success"}
            await ws.send({"type": "cancel", "threadId": thread})
            await ws.until_end()
            await ws.send({"type": "reattach", "threadId": thread})
            await ws.until_end()
        await post_run(gateway, user_input(thread, "안녕"), {})
        rows = await audit.query_access(thread=thread)
        refusals = await audit.query_access(user="")

    def row(user: str, action: str, outcome: str, **fields: object) -> AccessRecord:
        [found] = [r for r in rows if (r.user_id, r.action, r.outcome) == (user, action, outcome)]
        for name, value in fields.items():
            assert getattr(found, name) == value, (name, found)
        assert found.client == "127.0.0.1"
        return found

    row("guest", "approval", "ACCESS_DENIED", target=interrupt["id"], org="other", via="bearer")
    row("guest", "reattach", "ACCESS_DENIED", door="ws")
    row("demo", "approval", "ok", target=interrupt["id"], detail="approved", org="ORG-01")
    row("demo", "cancel", "nothing_to_cancel")
    row("demo", "reattach", "ok")
    assert [(r.door, r.action, r.via) for r in refusals] == [("sse", "run", "-")]
    assert refusals[0].outcome == "UNAUTHORIZED" and "Sign in" in (refusals[0].detail or "")


async def test_a_refused_upgrade_is_audited_with_its_address() -> None:
    async with running_gateway(**JWT) as gateway:
        assert gateway.app.hub is not None and gateway.app.hub.audit is not None
        assert await ws_refused(gateway.port, additional_headers=bearer("nope")) == 401
        async with httpx.AsyncClient() as client:
            await client.get(gateway.http + "/me?user=demo", headers=bearer(token()))
        rows = await gateway.app.hub.audit.query_access(client="127.0.0.1")
    assert [(r.door, r.action, r.outcome, r.user_id) for r in rows] == [
        ("ws", "connect", "UNAUTHORIZED", ""),
        ("http", "profile", "ACCESS_DENIED", "alice"),
    ]


async def test_an_approval_answer_is_audited_as_the_hub_decided_it() -> None:
    """An answer the hub ignores (already answered) or overrules (expired: rejected) is not
    audited as "ok": the row is the hub's decision, on /ws and the SSE door."""
    async with running_gateway(approval_timeout=0.3) as gateway:
        assert gateway.app.hub.audit is not None
        answered, expired = new_id("t"), new_id("t")
        async with gateway.socket() as ws:
            [first] = outcome(await ws.run(user_input(answered, APPROVE)))["interrupts"]
            [late] = outcome(await ws.run(user_input(expired, APPROVE)))["interrupts"]
            yes = {"approved": True}
            assert outcome(await ws.run(resume(answered, first["id"], payload=yes)))
            again = await ws.run(resume(answered, first["id"], payload=yes))
            assert "INTERRUPT_ALREADY_ANSWERED" in str(again)
            await asyncio.sleep(0.4)
            told = await ws.run(resume(expired, late["id"], payload=yes))
            assert "INTERRUPT_EXPIRED" in str(told)
        status, _, sse, _ = await post_as_user(gateway, resume(answered, first["id"], payload=yes))
        assert status == 200 and "INTERRUPT_ALREADY_ANSWERED" in str(sse)
        rows = await gateway.app.hub.audit.query_access(user="demo")
    approvals = [(r.thread_id, r.door, r.outcome, r.detail) for r in rows if r.action == "approval"]
    assert approvals == [
        (answered, "ws", "ok", "approved"),
        (answered, "ws", "INTERRUPT_ALREADY_ANSWERED", "approved"),
        (expired, "ws", "INTERRUPT_EXPIRED", "approved"),
        (answered, "sse", "INTERRUPT_ALREADY_ANSWERED", "approved"),
    ]
