"""GET /packages/agui-websocket/...: the npm package served by the gateway itself, its ES
modules and types as the package publishes them, and the tarball npm installs; CORS as on
every door; nothing the package does not publish."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

PACKAGE = Path(__file__).parents[2] / "clients" / "agui-websocket"
APP = "https://app.example.com"
TARBALL = "agent-gateway-agui-websocket-{version}.tgz"


@pytest.fixture(scope="module")
async def served() -> AsyncIterator[RunningGateway]:
    async with running_gateway(allowed_origins=APP) as gateway:
        yield gateway


async def get(gateway: RunningGateway, name: str, origin: str | None = None) -> httpx.Response:
    headers = {"Origin": origin} if origin else {}
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.get(f"{gateway.http}/packages/agui-websocket/{name}", headers=headers)


def version() -> str:
    manifest = json.loads((PACKAGE / "package.json").read_text(encoding="utf-8"))
    found: str = manifest["version"]
    return found


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("index.js", "text/javascript; charset=utf-8"),
        ("http.js", "text/javascript; charset=utf-8"),
        ("src/ledger.js", "text/javascript; charset=utf-8"),
        ("index.d.ts", "application/typescript; charset=utf-8"),
        ("package.json", "application/json"),
    ],
)
async def test_each_published_file_is_served_as_it_is_with_its_type(
    served: RunningGateway, name: str, kind: str
) -> None:
    answer = await get(served, name)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == kind
    assert answer.content == (PACKAGE / name).read_bytes()


@pytest.mark.parametrize(
    "name",
    [
        "test/gateway.mjs",
        "package-lock.json",
        "node_modules/rxjs/package.json",
        "../README.md",
        "src/../../../pyproject.toml",
        "",
        "nothing.js",
    ],
)
async def test_what_the_package_does_not_publish_is_not_found(
    served: RunningGateway, name: str
) -> None:
    assert (await get(served, name)).status_code == 404


async def test_an_allowed_page_may_import_the_modules_and_another_origin_may_not(
    served: RunningGateway,
) -> None:
    allowed = await get(served, "index.js", APP)
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == APP
    foreign = await get(served, "index.js", "https://elsewhere.example")
    assert foreign.status_code == 403
    assert "access-control-allow-origin" not in foreign.headers
    async with httpx.AsyncClient(timeout=10) as client:
        posted = await client.post(f"{served.http}/packages/agui-websocket/index.js")
    assert posted.status_code == 405


async def test_the_tarball_is_the_package_as_npm_packs_it_the_same_bytes_each_time(
    served: RunningGateway,
) -> None:
    name = TARBALL.format(version=version())
    first, second = await get(served, name), await get(served, name)
    assert first.status_code == 200
    assert first.headers["content-type"] == "application/gzip"
    assert first.content == second.content, "a lock file's integrity holds on a refetch"
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(first.content))) as tar:
        names = tar.getnames()
        manifest = tar.extractfile("package/package.json")
        assert manifest is not None
        assert json.loads(manifest.read())["name"] == "@agent-gateway/agui-websocket"
    assert {"package/index.js", "package/index.d.ts", "package/http.js"} <= set(names)
    assert "package/src/ledger.js" in names
    assert not [n for n in names if "/test/" in n or "node_modules" in n]
