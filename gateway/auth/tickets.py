"""Single-use /ws tickets: how a browser, which cannot set headers on a WebSocket, brings
its bearer token to /ws without putting the token itself in a URL.

``POST /ws-ticket`` (with the token) gets a random ticket good for one connection within a
few seconds. Tickets live in memory only, in a bounded table: a restart or a second
process simply does not know them, and the client asks for a new one.
"""

from __future__ import annotations

import collections
import secrets
import time
from collections.abc import Callable

from gateway import wire as p
from gateway.auth.identity import Identity

# A user asking for more than this many tickets before using them loses the oldest.
TICKETS_PER_USER = 8


class TicketBook:
    def __init__(
        self, lifetime: float, limit: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.lifetime = lifetime
        self.limit = limit
        self._clock = clock
        # ticket -> (identity, expiry); insertion order is expiry order.
        self._tickets: collections.OrderedDict[str, tuple[Identity, float]] = (
            collections.OrderedDict()
        )
        # Each user's tickets, oldest first.
        self._by_user: dict[str, list[str]] = {}

    def __len__(self) -> int:
        return len(self._tickets)

    def issue(self, identity: Identity) -> str:
        """A new ticket for ``identity``; RATE_LIMIT_EXCEEDED while the table is full."""
        now = self._clock()
        self._drop_expired(now)
        mine = self._by_user.get(identity.user, [])
        if len(mine) >= TICKETS_PER_USER:
            self._forget(mine[0])
        if len(self._tickets) >= self.limit:
            raise p.GatewayError(
                p.ErrorCode.RATE_LIMIT_EXCEEDED,
                "Too many /ws tickets are waiting to be used; try again in a few seconds.",
            )
        ticket = secrets.token_urlsafe(32)
        self._tickets[ticket] = (identity, now + self.lifetime)
        self._by_user.setdefault(identity.user, []).append(ticket)
        return ticket

    def redeem(self, ticket: str) -> Identity | None:
        """The identity a ticket was issued to, once; None if unknown, used or expired."""
        now = self._clock()
        self._drop_expired(now)
        return self._forget(ticket)

    def _drop_expired(self, now: float) -> None:
        while self._tickets:
            ticket, (_, expiry) = next(iter(self._tickets.items()))
            if expiry > now:
                return
            self._forget(ticket)

    def _forget(self, ticket: str) -> Identity | None:
        found = self._tickets.pop(ticket, None)
        if found is None:
            return None
        identity = found[0]
        mine = self._by_user[identity.user]
        mine.remove(ticket)
        if not mine:
            del self._by_user[identity.user]
        return identity
