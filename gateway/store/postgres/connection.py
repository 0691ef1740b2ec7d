"""A psycopg connection driven from a thread of its own, reopened when it is dropped.

psycopg's sync connection, used the way aiosqlite uses SQLite: every read, and every batch
of writes, is one function of the connection run in one hop to its thread (``run``,
``own_thread``), so the store's shared parts see the same ``run(fn)`` seam on either
backend. A connection the
server dropped (a restart, a network cut) is found broken at the next call and opened
again; until then every call fails, and the writer's health says so (``group_commit``).
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import psycopg
from psycopg.abc import Buffer
from psycopg.types.string import StrDumperUnknown

from gateway.store.errors import StoreError
from gateway.store.postgres.cursors import KeptCursors
from gateway.store.postgres.own_thread import OwnThread
from gateway.store.urls import described

T = TypeVar("T")

# ``GATEWAY_DURABILITY`` as PostgreSQL's ``synchronous_commit``: ``normal`` (off) is the
# server's once a commit returns, ``full`` (on) waits for its disk too.
SYNCHRONOUS_COMMIT = {"normal": "off", "full": "on"}

# A server that does not answer (a black-holed host) fails a connect after this long,
# so a probe of the writer never hangs on it.
CONNECT_SECONDS = 5


def said(error: BaseException, url: str) -> str:
    """What psycopg said, in one line, with the URL's password taken out should it appear."""
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    with contextlib.suppress(ValueError):
        if password := urllib.parse.urlsplit(url).password:
            text = text.replace(password, "***")
            text = text.replace(urllib.parse.quote(password, safe=""), "***")
    return text


class _Text(StrDumperUnknown):
    """Text as PostgreSQL's text can hold it: a NUL (a model's or a browser's) becomes U+FFFD.

    SQLite keeps a NUL; PostgreSQL refuses the whole statement, so one stray character
    from a client would fail a write, or an audit batch of everyone's records.
    """

    def dump(self, obj: str) -> Buffer | None:
        return super().dump(obj.replace("\x00", "\ufffd") if "\x00" in obj else obj)


class Connection:
    """One psycopg connection, used only from its own thread; reopened if it was dropped."""

    def __init__(
        self,
        url: str,
        *,
        name: str,
        configure: Callable[[psycopg.Connection], None],
        autocommit: bool = False,
        keep_cursors: bool = False,
    ):
        self.url = url
        self._autocommit = autocommit  # each statement its own transaction, unless opened
        # A cursor kept a statement (``cursors``), for a connection whose results are small.
        self._connection_class = KeptCursors if keep_cursors else psycopg.Connection
        self._configure = configure  # settings a new connection gets before its first use
        self._name = name
        self._conn: psycopg.Connection | None = None
        self._thread = OwnThread(name)
        self._closed = False

    @property
    def dropped(self) -> bool:
        """Whether the connection was found lost (the next call opens a new one)."""
        return self._conn is None or self._conn.closed

    async def run(self, fn: Callable[[psycopg.Connection], T]) -> T:
        """``fn(connection)`` on the connection's thread."""
        return await self._thread.call(partial(self._call, fn))

    def _call(self, fn: Callable[[psycopg.Connection], T]) -> T:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            if conn is not None:
                conn.close()
            self._conn = None
            conn = self._conn = self._connect()
        return fn(conn)

    def _connect(self) -> psycopg.Connection:
        conn = self._connection_class.connect(
            self.url,
            autocommit=self._autocommit,
            connect_timeout=CONNECT_SECONDS,
            application_name=f"agent-gateway {self._name}",
            # TCP keepalives, so a connection whose server vanished is found dead in a minute.
            keepalives=1,
            keepalives_idle=30,
            keepalives_interval=10,
        )
        conn.adapters.register_dumper(str, _Text)
        try:
            self._configure(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    async def open(self) -> None:
        """Connects now; raises StoreError with a sentence if the server cannot be used."""
        try:
            await self.run(lambda _: None)
        except psycopg.Error as error:
            await self.close()
            raise StoreError(
                f"cannot connect to the session store {described(self.url)}:"
                f" {said(error, self.url)}."
                " Check the URL of --db (GATEWAY_DB), that the server runs, and its password."
            ) from None

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def close(_: Any) -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        with contextlib.suppress(psycopg.Error):
            await self._thread.call(partial(close, None))
        self._thread.stop()
