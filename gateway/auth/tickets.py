"""Single-use /ws tickets: how a browser, which cannot set headers on a WebSocket, brings
its bearer token to /ws without putting the token itself in a URL.

``POST /ws-ticket`` (with the token) gets a random ticket good for one connection within a
few seconds, and never past the token's own end (``exp`` plus the verification leeway, as
long as the token itself would be accepted). Tickets live in memory only, in a bounded
table: a restart or a second process simply does not know them, and the client asks for a
new one. A user holds at most ``TICKETS_PER_USER`` unused tickets: a further one replaces
their oldest, so a client that retries never locks itself out, and one user cannot fill
the table; the table as a whole full is RATE_LIMIT_EXCEEDED.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import secrets
import time
from collections.abc import Callable

from gateway import wire as p
from gateway.auth.identity import Identity

log = logging.getLogger(__name__)

# A user asking for more than this many tickets before using them loses the oldest.
TICKETS_PER_USER = 8


@dataclasses.dataclass(frozen=True, slots=True)
class Ticket:
    """A ticket issued, and the seconds it is good for (``expiresIn``)."""

    ticket: str
    seconds: float


class TicketBook:
    def __init__(
        self,
        lifetime: float,
        limit: int,
        *,
        leeway: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.lifetime = lifetime
        self.limit = limit
        # How long past its exp a token is still accepted (GATEWAY_JWT_LEEWAY).
        self.leeway = leeway
        self._clock, self._wall_clock = clock, wall_clock
        # ticket -> (identity, expiry); insertion order is expiry order, but for tickets
        # their token cut short.
        self._tickets: collections.OrderedDict[str, tuple[Identity, float]] = (
            collections.OrderedDict()
        )
        # Each user's tickets, oldest first.
        self._by_user: dict[str, list[str]] = {}

    def __len__(self) -> int:
        return len(self._tickets)

    def issue(self, identity: Identity) -> Ticket:
        """A new ticket for ``identity``, good no longer than its credential; a ninth unused
        one replaces the user's oldest; RATE_LIMIT_EXCEEDED while the table is full."""
        now = self._clock()
        self._drop_expired(now)
        mine = self._by_user.get(identity.user, [])
        if len(mine) >= TICKETS_PER_USER:
            log.info(
                "%s asked for more than %d unused /ws tickets: their oldest is forgotten",
                identity.user,
                TICKETS_PER_USER,
            )
            self._forget(mine[0])
        if len(self._tickets) >= self.limit:
            raise p.GatewayError(
                p.ErrorCode.RATE_LIMIT_EXCEEDED,
                "Too many /ws tickets are waiting to be used; try again in a few seconds.",
            )
        seconds = self.lifetime
        if identity.expires_at is not None:
            seconds = min(seconds, identity.expires_at + self.leeway - self._wall_clock())
        ticket = secrets.token_urlsafe(32)
        self._tickets[ticket] = (identity, now + seconds)
        self._by_user.setdefault(identity.user, []).append(ticket)
        return Ticket(ticket, max(seconds, 0.0))

    def redeem(self, ticket: str) -> Identity | None:
        """The identity a ticket was issued to, once; None if unknown, used or expired."""
        now = self._clock()
        self._drop_expired(now)
        found = self._forget(ticket)
        if found is None or found[1] <= now:  # one cut short by its token may lag the order
            return None
        return found[0]

    def _drop_expired(self, now: float) -> None:
        """Forgets expired tickets from the oldest on; one a token cut short waits for its
        turn, or for its redemption, which refuses it."""
        while self._tickets:
            ticket, (_, expiry) = next(iter(self._tickets.items()))
            if expiry > now:
                return
            self._forget(ticket)

    def _forget(self, ticket: str) -> tuple[Identity, float] | None:
        found = self._tickets.pop(ticket, None)
        if found is None:
            return None
        mine = self._by_user[found[0].user]
        mine.remove(ticket)
        if not mine:
            del self._by_user[found[0].user]
        return found
