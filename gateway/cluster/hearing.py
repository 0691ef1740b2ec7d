"""A listening connection's notices, read straight from its socket as they arrive.

psycopg's ``AsyncConnection.notifies()`` waits for each notice through a future of its own:
at every wake-up it registers the socket with the event loop, awaits the future, takes the
socket off again, and builds each notice twice (one for the connection's handler, one it
yields). On a cluster a process hears a notice for each commit of frames by another
process, several a story, and each woke the loop for ~90 µs of its CPU, most of it that
machinery. Here the socket stays registered for as long as the connection listens, and
one callback reads what arrived and hands each payload on.

The connection is used for nothing else meanwhile (``PostgresCluster``'s listening one).
Notices that arrive while it runs a statement (its LISTEN, its node's registration) are
psycopg's to read: the caller hears those through ``add_notify_handler``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import psycopg

log = logging.getLogger("gateway.cluster")


async def hear(conn: psycopg.AsyncConnection[Any], heard: Callable[[str], None]) -> None:
    """Hands the payload of each notice ``conn`` receives to ``heard``, in order, until the
    connection is lost, then raises its ``psycopg.Error``; cancelled, stops listening."""
    loop = asyncio.get_running_loop()
    pgconn = conn.pgconn
    encoding = conn.info.encoding
    lost: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        try:
            pgconn.consume_input()
            while (notice := pgconn.notifies()) is not None:
                payload = notice.extra.decode(encoding)
                try:
                    heard(payload)
                except Exception:  # one notice's failure must not stop the hearing of the rest
                    log.exception("a cluster notice could not be handled: %.80r", payload)
        except psycopg.Error as error:  # the connection is gone: its socket says so
            if not lost.done():
                lost.set_exception(error)

    socket = pgconn.socket
    loop.add_reader(socket, readable)
    try:
        readable()  # what arrived before the socket was registered
        await lost
    finally:
        loop.remove_reader(socket)
        if lost.done() and not lost.cancelled():
            lost.exception()  # lost as it was cancelled: retrieved, so never logged as unseen
