"""What the doors share: one bundle, built once by the app when its hub is up.

Every door (/ws, POST and GET /invocations, the small HTTP doors) is given this bundle,
never the ASGI app: the app owns start-up, shutdown and routing, a door only the
collaborators its work needs. So no door imports the app, and a test builds a door from
plain objects. The hub is where a door's work goes; the authenticator identifies the
caller (``gateway.doors.access``); the rate limiter spends the caller's tokens; the
origins are the browsers allowed besides the gateway's own host (``gateway.doors.cors``);
the settings bound what a door reads and holds; the drain is what a door's connection
hears when the process is shutting down (``gateway.doors.drain``).
"""

from __future__ import annotations

import dataclasses

from gateway.auth import Authenticator
from gateway.config import Settings
from gateway.doors.drain import Drain
from gateway.doors.voice import LiveUsers
from gateway.hub.hub import Hub
from gateway.hub.limits import RateLimiter


@dataclasses.dataclass(frozen=True, slots=True)
class Shared:
    """The collaborators every door of one gateway works with."""

    hub: Hub
    settings: Settings
    auth: Authenticator
    rates: RateLimiter
    origins: frozenset[str]
    drain: Drain
    # The live turns open per user (``gateway.doors.voice``).
    live_users: LiveUsers = dataclasses.field(default_factory=LiveUsers)
