"""The ticket book on its own clocks: a ticket ends with its token, even one that a token
cut short behind an older ticket that lives longer; a ninth unused ticket replaces the
user's oldest."""

from __future__ import annotations

import pytest

from gateway.auth.identity import Identity
from gateway.auth.tickets import TICKETS_PER_USER, TicketBook

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_ticket_cut_short_by_its_token_is_refused_past_its_own_end() -> None:
    clock = Clock()
    book = TicketBook(30, 100, leeway=1, clock=clock, wall_clock=clock)
    long_lived = book.issue(Identity("ann"))
    short = book.issue(Identity("bob", expires_at=clock.now + 4))
    assert (long_lived.seconds, short.seconds) == (30, 5)
    clock.now += 6
    # Behind a ticket that lives on, it is not dropped in order, but it is refused.
    assert book.redeem(short.ticket) is None
    assert book.redeem(long_lived.ticket) == Identity("ann")


def test_a_ninth_unused_ticket_replaces_the_oldest(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="gateway.auth.tickets")
    book = TicketBook(30, 100)
    issued = [book.issue(Identity("ann")).ticket for _ in range(TICKETS_PER_USER + 1)]
    assert len(book) == TICKETS_PER_USER
    assert book.redeem(issued[0]) is None
    assert all(book.redeem(ticket) == Identity("ann") for ticket in issued[1:])
    assert "their oldest is forgotten" in caplog.text
