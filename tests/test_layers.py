"""The floor plan holds: no module imports from a layer above its own, the gateway imports
nothing of its examples, and no two modules import each other, however indirectly.

Read from the source with ``ast`` (every import, also those inside functions and under
``TYPE_CHECKING``: a circle a type checker needs is still a circle a reader must untangle).
The layers, bottom to top, as DESIGN.md draws them; a package beside a layer sits at its level:

    config, logs, context, garbage, settings, log lines, what a run's events carry for agents,
    timeline                        the collector's steady state, a run's steps timed (opt-in)
    wire, metrics                   AG-UI frames, versions, bounds, notices, pointers; what
                                    operators scrape
    store, auth, audit, cluster     the session store and its backends; who is asking; what
                                    they did; the processes that share a database
    translate, a2ui, tools          ADK events -> AG-UI, no I/O; A2UI surfaces; client tools
    adk, models                     the engine over ADK's Runner, hosting, the models
    hub                             threads and runs
    doors                           the ASGI app and its doors
    api, cli, __main__, gateway     what a user calls
    examples                        agents built on all of it; nothing below imports them
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

import gateway

pytestmark = pytest.mark.unit

PACKAGE = Path(gateway.__file__).parent

LAYERS: list[set[str]] = [
    {
        "gateway.config",
        "gateway.logs",
        "gateway.context",
        "gateway.tracing",
        "gateway.lazy",
        "gateway.optional_imports",
        "gateway.deferred_schemas",
        "gateway.garbage",
        "gateway.timeline",
    },
    {"gateway.wire", "gateway.metrics"},
    {"gateway.store", "gateway.auth", "gateway.audit", "gateway.cluster"},
    {"gateway.translate", "gateway.a2ui", "gateway.tools"},
    {"gateway.adk", "gateway.models"},
    {"gateway.hub"},
    {"gateway.doors"},
    {"gateway.api", "gateway.cli", "gateway.__main__", "gateway"},
    {"gateway.examples"},
]


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def layer_of(module: str) -> int:
    """The layer of a module: that of the longest name in ``LAYERS`` it is, or is under."""
    best, level = "", -1
    for index, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > len(best):
                best, level = name, index
    if level < 0:
        raise AssertionError(f"{module} is in no layer: add its package to LAYERS")
    return level


def imports(module: str) -> Iterator[tuple[str, int]]:
    """The gateway modules ``module`` imports, each with the line of its import."""
    known = modules()
    path = known[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                if f"{base}.{alias.name}" in known:  # a module: ``from gateway import wire``
                    yield f"{base}.{alias.name}", node.lineno
                elif base in known:
                    yield base, node.lineno


def graph() -> dict[str, set[str]]:
    return {module: {target for target, _ in imports(module)} for module in modules()}


def test_every_module_sits_in_a_layer() -> None:
    for module in modules():
        layer_of(module)


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = {
        f"{modules()[module].relative_to(PACKAGE.parent)}:{line} imports {target}"
        for module in modules()
        for target, line in imports(module)
        if layer_of(target) > layer_of(module)
    }
    assert sorted(upward) == []


def test_the_gateway_imports_nothing_of_its_examples() -> None:
    examples = "gateway.examples"
    found = {
        f"{module} imports {target}"
        for module in modules()
        if not module.startswith(examples)
        for target, _ in imports(module)
        if target == examples or target.startswith(examples + ".")
    }
    assert sorted(found) == []


def test_no_modules_import_each_other() -> None:
    circles = [sorted(circle) for circle in strongly_connected(graph()) if len(circle) > 1]
    assert circles == []


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of the import graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            found.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_check_sees_an_upward_import_and_a_circle() -> None:
    """The checks above would fail: they see what they look for."""
    assert layer_of("gateway.store.codec") < layer_of("gateway.translate.history")
    assert layer_of("gateway.doors.app") > layer_of("gateway.hub.hub")
    circle = strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert {"a", "b", "c"} in circle and {"d"} in circle
