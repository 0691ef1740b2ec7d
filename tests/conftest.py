"""The suite's fixtures: servers, stores, PostgreSQL and model providers, by scope; and the
hooks that give every test its one tier (``tests/support/tiers.py``).

Helpers live in ``tests.support``; this file only says what a test may ask for by name.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path

import pytest

from gateway.store import SessionService
from tests.support import tiers
from tests.support.backends import BACKENDS
from tests.support.postgres import Postgres, running_postgres
from tests.support.providers import ChatCompletions, GeminiApi, Provider
from tests.support.servers import RunningGateway, running_gateway
from tests.support.stores import session_store


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--only-serial",
        action="store_true",
        help="run only the tests marked serial (scripts/test.sh, after the parallel run)",
    )


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    # A module (or class) whose tests lack one honest tier fails to collect, saying which
    # and what to add: an error raised later, on an xdist worker, is an INTERNALERROR.
    report = yield
    if report.passed:
        collected = [node for node in report.result if isinstance(node, pytest.Item)]
        if problems := tiers.problems(collected):
            report.outcome = "failed"
            report.longrepr = "tests without one honest tier:\n" + "\n".join(problems)
            report.result = []
    return report


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tiers.settle(items)
    # A serial test needs the machine to itself: never on an xdist worker, beside others.
    only_serial = config.getoption("only_serial")
    on_worker = "PYTEST_XDIST_WORKER" in os.environ

    def wanted(item: pytest.Item) -> bool:
        serial = item.get_closest_marker("serial") is not None
        return serial if only_serial else not (serial and on_worker)

    dropped = [item for item in items if not wanted(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if wanted(item)]


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures start anything
def pytest_runtest_setup(item: pytest.Item) -> None:
    tiers.current = tiers.tier_of(item)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One PostgreSQL server for the run (``tests.support.postgres``), started on first use."""
    with running_postgres() as server:
        yield server


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a contract test's store lives: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "threads.db")
    server: Postgres = request.getfixturevalue("postgres")
    return server.fresh_database()


@pytest.fixture
async def store(db: str) -> AsyncIterator[SessionService]:
    """A session store of the test's own, open for the test: on each backend in turn."""
    service = session_store(db)
    await service.open()
    yield service
    await service.close()


@pytest.fixture(params=[ChatCompletions, GeminiApi], ids=["chat-completions", "gemini"])
async def provider(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Provider]:
    """A local model provider of each kind, running, with the provider's SDK pointed at it."""
    made: Provider = request.param()
    for name, value in made.env().items():
        monkeypatch.setenv(name, value)
    async with made.running():
        yield made


@pytest.fixture(
    scope="module", params=["in-memory", pytest.param("postgres", marks=pytest.mark.process)]
)
async def gateway_on_each_store(request: pytest.FixtureRequest) -> AsyncIterator[RunningGateway]:
    """A server for a module's tests, once on SQLite in memory and once on PostgreSQL.

    A module whose tests must hold on either store names it as its ``gateway``.
    """
    db = ":memory:"
    if request.param == "postgres":
        server: Postgres = request.getfixturevalue("postgres")
        db = server.fresh_database()
    async with running_gateway(db=db) as running:
        yield running


@pytest.fixture(scope="session")
async def gateway() -> AsyncIterator[RunningGateway]:
    """One server for the session: in-memory store, scripted model at 5 ms a chunk."""
    async with running_gateway() as running:
        yield running
