"""The suite's tiers: what a test needs in order to run, lightest first.

unit     the code driven directly: no server, no child process (``pytest -m unit``, what a
         developer runs while working)
server   a gateway (or another server) on loopback, in the test's own process
process  real processes: ``agent-gateway`` and scripts as children, PostgreSQL, the wheel
browser  Chromium, or node and the npm packages

A test module names its tier in ``pytestmark``; a class or a test may name another, the
closest one counting. A parameter may raise a test's tier: the store's tests on PostgreSQL
are ``process`` (``tests/conftest.py``'s ``db`` and ``gateway_on_each_store``), whatever
their module says. ``settle`` leaves each test with exactly one tier marker, the only one
``-m`` then sees; ``problems`` names every test that has none, names two at one level, or
uses a fixture heavier than its tier, which the suite reports as its module's collection
error (so an xdist worker reports it as the controller does: which file, what to add).
While a test runs, ``current`` is its tier, and the helpers that start a server, a process
or a browser ``require`` a tier that allows it, so a test cannot pass for lighter than it is.
"""

from __future__ import annotations

import pytest

TIERS = ("unit", "server", "process", "browser")

# Fixtures whose users are at least this heavy, whatever they say.
FIXTURE_TIERS = {
    "gateway": "server",
    "gateway_on_each_store": "server",
    "slow_gateway": "server",
    "provider": "server",
    "postgres": "process",
    "browser": "browser",
    "context": "browser",
}

# The running test's tier; None outside pytest (a benchmark script may start anything).
current: str | None = None


def require(tier: str, what: str) -> None:
    """Refuses to start ``what`` inside a test of a lighter tier than ``tier``."""
    if current is not None and TIERS.index(current) < TIERS.index(tier):
        raise AssertionError(
            f"a {current} test started {what}: mark it {tier} (tests/support/tiers.py)"
        )


def problems(items: list[pytest.Item]) -> list[str]:
    """What keeps ``items`` (a module's or a class's tests, as collected) from each having
    one honest tier, one line each, saying what to add where; none if nothing does."""
    found: list[str] = []
    for item in items:
        _resolve(item, found)
    return found


def settle(items: list[pytest.Item]) -> None:
    """Gives every test exactly one tier marker (``problems`` found none missing)."""
    chosen: dict[pytest.Item, str] = {}
    for item in items:
        tier = _resolve(item, [])
        if tier is not None:
            chosen[item] = tier
    # Only now, once every test's tier is known: a module's marker must not select, under
    # ``-m unit``, its tests that a parameter moved to PostgreSQL.
    for item in items:
        for node in item.listchain():
            node.own_markers[:] = [mark for mark in node.own_markers if mark.name not in TIERS]
        if item in chosen:
            item.add_marker(chosen[item])


def tier_of(item: pytest.Item) -> str | None:
    """The tier ``settle`` gave ``item``."""
    mark = next((mark for mark in item.iter_markers() if mark.name in TIERS), None)
    return None if mark is None else mark.name


def _resolve(item: pytest.Item, problems: list[str]) -> str | None:
    callspec = getattr(item, "callspec", None)
    raised = [mark for mark in (callspec.marks if callspec else []) if mark.name in TIERS]
    declared: str | None = None
    for node in reversed(item.listchain()):  # the test, its class, its module, ...
        named = {
            mark.name
            for mark in node.own_markers
            if mark.name in TIERS and not (node is item and mark in raised)
        }
        if len(named) > 1:
            problems.append(f"{node.nodeid}: more than one tier at one level: {sorted(named)}")
        if named:
            declared = max(named, key=TIERS.index)
            break
    if declared is None:
        problems.append(
            f"{item.nodeid}: no tier marker: add `pytestmark = pytest.mark.unit` to"
            f" {item.path.name} (or `server`, `process`, `browser`: the lightest it needs;"
            " tests/support/tiers.py), or mark the test itself"
        )
        return None
    tier: str = max([declared, *(str(mark.name) for mark in raised)], key=TIERS.index)
    for name in _shared_fixtures(item):
        needs = FIXTURE_TIERS.get(name)
        if needs is not None and TIERS.index(tier) < TIERS.index(needs):
            problems.append(f"{item.nodeid}: a {tier} test uses the {needs} fixture {name!r}")
    return tier


def _shared_fixtures(item: pytest.Item) -> list[str]:
    """The fixtures of a conftest.py the test uses (a module's own ``gateway`` is its own)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [
        name
        for name, defs in info.name2fixturedefs.items()
        if defs and getattr(defs[-1].func, "__module__", "").endswith("conftest")
    ]
