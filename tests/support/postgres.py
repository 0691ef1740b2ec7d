"""A throwaway PostgreSQL server on loopback, for the tests and benchmarks that need one.

It runs Debian's server binaries (``scripts/test.sh`` installs them) on a data directory of its
own under the system's temp folder, on a free 127.0.0.1 port, with fsync off: nothing in it
outlives the run. PostgreSQL refuses to run as root, so as root the server runs as the
``postgres`` user the package creates. Each caller gets a database of its own
(``fresh_database``), so tests never see each other's rows: a copy of one template the
store's schema was created in once per server (``CREATE DATABASE ... TEMPLATE``), so no
test pays for the migration, or an empty one for the tests of creating or refusing a schema.

Set ``GATEWAY_TEST_POSTGRES`` to a server's URL to use that one instead.
"""

from __future__ import annotations

import collections
import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg

from gateway.store.postgres import leases
from gateway.store.postgres.schema import prepare
from tests.support import tiers
from tests.support.budgets import scaled
from tests.support.ports import free_port

# Long enough for initdb and a start on a loaded 2-core machine.
_START_SECONDS = scaled(60)
_INITDB_OPTIONS = ["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions"]


def _binaries() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        raise RuntimeError(
            "PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/pg_ctl): "
            "scripts/test.sh installs Debian's postgresql package"
        )
    return Path(found[-1]).parent


def _as_server_user(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


class Postgres:
    """One running server; ``url`` is its ``postgres`` database, for administration."""

    def __init__(self, url: str, stop: contextlib.ExitStack | None = None) -> None:
        self.url = url
        self._stop = stop
        self._template: str | None = None

    def fresh_database(self, *, empty: bool = False) -> str:
        """A new database's URL: the store's schema in it, or nothing if ``empty``."""
        tiers.require("process", "a PostgreSQL database")
        name = "t_" + uuid.uuid4().hex[:16]
        copied = "" if empty else f' TEMPLATE "{self._migrated_template()}"'
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copied}'.encode())
        return self._url_of(name)

    async def fresh_cluster_database(self) -> str:
        """A fresh database with the cluster's lease tables too, as a first process makes."""
        database = self.fresh_database()
        async with await psycopg.AsyncConnection.connect(database, autocommit=True) as conn:
            await leases.create_schema(conn)
        return database

    @contextlib.contextmanager
    def out_of_reach(self, database: str) -> Iterator[None]:
        """Within the block the database refuses connections and those it had are cut, as
        a restart, a failover or a network cut look to a gateway; then it is back."""
        name = database.rsplit("/", 1)[1]
        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'.encode())
            try:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    (name,),
                )
                yield
            finally:
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'.encode())

    def statements(self, database: str) -> collections.Counter[str] | None:
        """How many times ``database``'s clients have run each statement so far, by its text
        (a server started to count them: ``running_postgres(count_statements=True)``), or
        None if it does not. LISTEN, BEGIN and COMMIT count as statements too: each is a
        round trip of its own unless pipelined."""
        name = database.rsplit("/", 1)[1]
        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                rows = conn.execute(
                    "SELECT query, SUM(calls)::bigint FROM pg_stat_statements"
                    " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = %s)"
                    " GROUP BY query",
                    (name,),
                ).fetchall()
        except psycopg.Error:  # not loaded (shared_preload_libraries) or not installed
            return None
        return collections.Counter({str(query): int(calls) for query, calls in rows})

    def _migrated_template(self) -> str:
        """The database every fresh one copies, made and migrated on first use; nobody stays
        connected to it (PostgreSQL copies only a database no session is using)."""
        if self._template is None:
            name = "template_" + uuid.uuid4().hex[:16]
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"'.encode())
            with psycopg.connect(self._url_of(name)) as conn:
                prepare(conn, where="the tests' template database", read_only=False)
            self._template = name
        return self._template

    def _url_of(self, name: str) -> str:
        return self.url.rsplit("/", 1)[0] + "/" + name

    def close(self) -> None:
        if self._stop is not None:
            self._stop.close()


@contextlib.contextmanager
def running_postgres(*, count_statements: bool = False) -> Iterator[Postgres]:
    """The server of ``GATEWAY_TEST_POSTGRES``, or one of its own, stopped at the end; with
    ``count_statements``, one of its own counts the statements each database runs
    (``pg_stat_statements``, if the server has it: ``Postgres.statements``)."""
    tiers.require("process", "PostgreSQL")
    if url := os.environ.get("GATEWAY_TEST_POSTGRES"):
        yield Postgres(url)
        return
    bin_dir = _binaries()
    root = Path(tempfile.mkdtemp(prefix="gateway-pg-"))
    data = root / "data"
    port = free_port()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    with contextlib.ExitStack() as stop:
        stop.callback(shutil.rmtree, root, ignore_errors=True)
        subprocess.run(
            _as_server_user([str(bin_dir / "initdb"), "-D", str(data), *_INITDB_OPTIONS]),
            check=True,
            capture_output=True,
            timeout=_START_SECONDS,
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        if count_statements and (bin_dir.parent / "lib" / "pg_stat_statements.so").exists():
            options += " -c shared_preload_libraries=pg_stat_statements"
            options += " -c pg_stat_statements.track=top"
        pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data)]
        subprocess.run(
            _as_server_user([*pg_ctl, "-o", options, "-l", str(root / "log"), "-w", "start"]),
            check=True,
            capture_output=True,
            timeout=_START_SECONDS,
        )
        stop.callback(
            subprocess.run,
            _as_server_user([*pg_ctl, "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            timeout=_START_SECONDS,
        )
        yield Postgres(f"postgresql://postgres@127.0.0.1:{port}/postgres")
