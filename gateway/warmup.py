"""Start-up warm-up: throwaway runs through the hub, so the first user's run is not the slow one.

A run exercises more than the model: input decoding, the hub, the translator, the store's
writer and the event encoder all have first-call costs (imports, caches, code paths).
"""

from __future__ import annotations

import sys
import time
import uuid

import msgspec

from gateway import protocol as p
from gateway.hub import Hub
from gateway.runner import APP_NAME

WARM_UP_USER = "__warmup__"
WARM_UP_RUNS = 2


class _Encoder:
    """A subscriber that encodes what it is sent, as a connection would, and drops it."""

    def deliver(self, event: p.Event) -> None:
        p.encode(event)


def skip_absent_a2a() -> None:
    """ADK retries importing its optional A2A agent on every run (~0.5 ms) when the ``a2a``
    package is absent; recording the module as missing makes that a dictionary lookup."""
    try:
        import a2a  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        sys.modules.setdefault("google.adk.agents.remote_a2a_agent", None)  # type: ignore[arg-type]


async def warm_up(hub: Hub) -> float:
    """Runs a few greetings on a throwaway thread, then deletes it; returns seconds."""
    started = time.perf_counter()
    thread_id = f"{WARM_UP_USER}{uuid.uuid4().hex}"
    connection = _Encoder()
    for _ in range(WARM_UP_RUNS):
        frame = msgspec.json.encode(
            p.RunAgentInput(
                thread_id=thread_id,
                run_id=uuid.uuid4().hex,
                messages=[p.UserMessage(id=uuid.uuid4().hex, content="안녕")],
            )
        )
        run = await hub.start(WARM_UP_USER, p.decode_input(frame), connection)
        await run.done.wait()
    hub.leave(connection)
    await hub.engine.sessions.delete_session(
        app_name=APP_NAME, user_id=WARM_UP_USER, session_id=thread_id
    )
    return time.perf_counter() - started
