"""What a gateway keeps out of its memory: the modules of features it does not use.

Idle RSS is mostly imports (``scripts/bench_footprint.py``), and an import is one line away
from coming back. Each test runs a real process and reads its ``sys.modules``: the served
demo once it answers /ping (started, warmed up, idle), and a worker process once it has
built its App (``gateway.api._worker_main``, up to where it would connect to the main
process). A name here is a module of something switched off by default, or that only the
other side of a worker's pipe uses, or of a package google-genai imports only because the
test extras installed it (``gateway.optional_imports``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.optional_imports import OPTIONAL
from scripts._idle_census import requirements
from tests.support import ROOT
from tests.support.budgets import scaled
from tests.support.ports import free_port

pytestmark = pytest.mark.process

# Unused by a default gateway: the PostgreSQL store and cluster, OTLP export, GET /metrics,
# MCP, JWT checks, the operator commands (the audit's reading too), the npm tarball, the
# worker's side of the pipe, ag-ui-adk; and what google-genai would import because the test
# extras installed it (httpx2 for mcp, pygments for pytest).
NOT_IDLE = (
    "psycopg",
    "gateway.store.postgres",
    "gateway.cluster.postgres",
    "opentelemetry.sdk",
    "opentelemetry.exporter",
    "prometheus_client",
    "mcp",
    "jwt",
    "gateway.cli",
    "gateway.audit.reading",
    "tarfile",
    "gateway.adk.workers.worker",
    "gateway.adk.workers.remote_session",
    "ag_ui_adk",
    *OPTIONAL,
)

# What a worker never uses: the main process keeps the sockets, the hub, the threads'
# promises (cluster) and the database (the store's service, the audit's log and tables).
NOT_IN_A_WORKER = (
    "uvicorn",
    "gateway.doors.app",
    "gateway.doors.websocket",
    "gateway.hub",
    "gateway.cluster",
    "gateway.audit.log",
    "gateway.audit.tables",
    "gateway.store.service",
    "gateway.store.sqlite",
    "aiosqlite",
    *OPTIONAL,
)

# ADK's and fastapi's models an idle gateway may have built: ~20 are (the warm-up's runs
# use them); ~130 were when every model was built as its module loaded.
ADK_MODELS_BUILT = 60

WORKER_PROBE = """
import json, sys
from gateway.api import _worker_main
from gateway.config import Settings

try:  # no main process listens there: the worker stops where it would connect
    _worker_main(None, Settings(), sys.argv[1], 0)
except OSError:
    pass
print(json.dumps({"modules": sorted(sys.modules.copy())}), flush=True)
"""


def printed(*command: str, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """What ``python COMMAND`` prints as JSON on its last line (``environ`` added to this
    process's environment)."""
    done = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(120),
        env={**os.environ, **(environ or {})},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


def loaded(*command: str) -> set[str]:
    """The modules ``python COMMAND`` has imported when it prints them as JSON."""
    return set(printed(*command)["modules"])


def among(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """``names`` loaded: each one itself or any module of its package."""
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


@pytest.fixture(scope="module")
def census(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The served gateway, read once /ping answers (as bench_footprint reads it)."""
    db = str(tmp_path_factory.mktemp("idle") / "gateway.db")
    return printed(
        *("-m", "scripts._idle_census"),
        *("--host", "127.0.0.1", "--port", str(free_port()), "--db", db),
        *("--scripted-pace-ms", "0"),
    )


def test_an_idle_gateway_has_not_imported_the_features_it_does_not_use(
    census: dict[str, Any],
) -> None:
    modules = set(census["modules"])
    assert "gateway.doors.app" in modules  # it did serve
    assert among(modules, NOT_IDLE) == []
    # Nothing of a package the gateway does not require, though this venv has many (the
    # test extras); a .pth hook's module (setuptools' _distutils_hack) is the venv's own,
    # and aiohttp (ag-ui-adk's) google-genai's where it is installed (optional_imports).
    excused = requirements("aiohttp")
    outside = {top: dists for top, dists in census["outside"].items() if not top.startswith("_")}
    assert [top for top, dists in outside.items() if not excused >= set(dists)] == []


def test_an_idle_gateway_has_built_only_the_adk_models_its_runs_used(
    census: dict[str, Any],
) -> None:
    """ADK's models (and fastapi's, which ADK imports) are built when first used
    (``gateway.deferred_schemas``): ~20 by the warm-up's runs, where all ~130 imported were
    built as their modules loaded, ~5.7 MiB of RSS."""
    built = census["built"]
    assert built.get("google.adk", 0) > 0  # the runs did build what they use
    assert built.get("google.adk", 0) + built.get("fastapi.openapi", 0) < ADK_MODELS_BUILT


def test_a_worker_process_imports_no_doors_hub_or_database(tmp_path: Path) -> None:
    modules = loaded("-c", WORKER_PROBE, str(tmp_path / "no-main-process.sock"))
    assert "gateway.adk.workers.worker" in modules  # it did build its App and serve
    assert among(modules, NOT_IN_A_WORKER) == []


GENAI_PROBE = """
import json, sys
import gateway
from gateway.models.failures import classify
import httpx
from google.genai import _api_client

imported = [name for name in ("httpx2", "pygments") if name in sys.modules]
classify(httpx.ConnectError("refused"))  # a model's failure, told apart by its transport
after_a_failure = [name for name in ("httpx2", "pygments") if name in sys.modules]
backend = _api_client._get_http_client_backend()
print(json.dumps({
    "imported": imported,
    "after_a_failure": after_a_failure,
    "backend": backend,
    "aiohttp": _api_client.has_aiohttp,
}), flush=True)
"""


def genai_probe(*first: str, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """google-genai as a gateway process has it, with ``first`` imported before the gateway."""
    code = "".join(f"import {name}\n" for name in first) + GENAI_PROBE
    return printed("-c", code, environ=environ)


def test_google_genai_in_a_gateway_leaves_what_it_would_only_find() -> None:
    """This venv holds httpx2 and pygments (the test extras bring them): google-genai
    imported both, using neither. Each still imports for whoever asks. aiohttp is left to
    google-genai, which sends with it where it is installed (an agent's async_client_args
    are aiohttp's there)."""
    found = genai_probe()
    assert found["imported"] == []
    assert found["after_a_failure"] == []
    assert found["aiohttp"] and found["backend"] == "httpx"
    for name in OPTIONAL:
        assert importlib.util.find_spec(name) is not None, f"{name} is installed here"


def test_what_was_asked_for_stays_google_genais() -> None:
    """httpx2 chosen with google-genai's own switch is google-genai's as without the gateway."""
    assert genai_probe(environ={"GOOGLE_GENAI_HTTP_CLIENT": "httpx2"})["backend"] == "httpx2"
