"""The npm package with no registry, as the README says to get it: ``npm install`` of the
tarball the gateway serves, and its ES modules imported by a page on another origin, in
Chromium, straight from the gateway. The tarball holds what ``npm pack`` would."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import BrowserContext

from tests.e2e.copilotkit_page import static_site
from tests.support.browser import NEEDS_CHROMIUM
from tests.support.servers import RunningGateway, running_gateway

pytestmark = [
    pytest.mark.skipif(shutil.which("npm") is None, reason="needs node and npm"),
    pytest.mark.browser,
]

PACKAGE = Path(__file__).parents[2] / "clients" / "agui-websocket"
VERSION = json.loads((PACKAGE / "package.json").read_text(encoding="utf-8"))["version"]
TARBALL = f"/packages/agui-websocket/agent-gateway-agui-websocket-{VERSION}.tgz"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A blank page on its own loopback origin."""
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text("<!doctype html><title>an app</title><p>an app")
    with static_site(root) as origin:
        yield origin


@pytest.fixture(scope="module")
async def gateway(site: str) -> AsyncIterator[RunningGateway]:
    async with running_gateway(allowed_origins=site) as running:
        yield running


async def run(*args: str, cwd: Path) -> str:
    process = await asyncio.create_subprocess_exec(
        *args, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await asyncio.wait_for(process.communicate(), 180)
    assert process.returncode == 0, output.decode()
    return output.decode()


async def test_npm_installs_the_tarball_the_gateway_serves(
    gateway: RunningGateway, tmp_path: Path
) -> None:
    (tmp_path / "package.json").write_text('{"name": "an-app", "private": true, "type": "module"}')
    # Its two peers come from the app's own dependencies (a registry's); this test has none.
    npm = ("npm", "install", "--no-audit", "--no-fund", "--legacy-peer-deps")
    await run(*npm, gateway.http + TARBALL, cwd=tmp_path)
    installed = tmp_path / "node_modules" / "@agent-gateway" / "agui-websocket"
    assert (installed / "index.d.ts").read_bytes() == (PACKAGE / "index.d.ts").read_bytes()
    # The dependency-free subpath runs as installed.
    script = (
        'import { ActionLedger } from "@agent-gateway/agui-websocket/ledger";'
        "const ledger = new ActionLedger(new Map());"
        'ledger.started({id: "call-1", name: "navigateToScreen", args: {}});'
        'console.log(ledger.get("call-1").state);'
    )
    assert (await run("node", "--input-type=module", "-e", script, cwd=tmp_path)).strip() == (
        "started"
    )
    dependency = json.loads((tmp_path / "package.json").read_text())["dependencies"]
    assert dependency["@agent-gateway/agui-websocket"].endswith(TARBALL)


async def test_the_tarball_holds_what_npm_pack_would(gateway: RunningGateway) -> None:
    packed = json.loads(await run("npm", "pack", "--dry-run", "--json", cwd=PACKAGE))
    expected = sorted(entry["path"] for entry in packed[0]["files"])
    tarball = await run("sh", "-c", f"curl -s {gateway.http}{TARBALL} | tar tz", cwd=PACKAGE)
    assert sorted(n.removeprefix("package/") for n in tarball.split()) == expected


@NEEDS_CHROMIUM
async def test_a_page_on_another_origin_imports_the_modules_from_the_gateway(
    context: BrowserContext, site: str, gateway: RunningGateway
) -> None:
    page = await context.new_page()
    await page.goto(site)
    state = await page.evaluate(
        """async (url) => {
            const { ActionLedger } = await import(url);
            const ledger = new ActionLedger(sessionStorage);
            ledger.started({id: "call-1", name: "navigateToScreen", args: {}});
            return new ActionLedger(sessionStorage).get("call-1").state;
        }""",
        f"{gateway.http}/packages/agui-websocket/src/ledger.js",
    )
    assert state == "started"
