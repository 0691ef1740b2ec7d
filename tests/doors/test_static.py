"""The hosted app's static files (``gateway.doors.static.web_file``): what a page may fetch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.doors.static import PAGE, page_file, web_file

pytestmark = pytest.mark.unit


def app_folder(tmp_path: Path) -> Path:
    """A web folder with a page, and a link to a package of modules outside it (as the
    reference client links the npm package), beside a secret."""
    (tmp_path / "secret.txt").write_text("not for the web")
    package = tmp_path / "package" / "src"
    package.mkdir(parents=True)
    (package / "connection.js").write_text("export const a = 1;")
    web = tmp_path / "web"
    web.mkdir()
    (web / "index.html").write_text("<!doctype html>")
    os.symlink("../package/src", web / "agui-websocket")
    return web


def test_a_linked_folder_the_app_ships_is_served(tmp_path: Path) -> None:
    found = web_file(app_folder(tmp_path), "/agui-websocket/connection.js")
    assert found == (b"export const a = 1;", "text/javascript; charset=utf-8")


def test_no_path_leaves_the_folder(tmp_path: Path) -> None:
    web = app_folder(tmp_path)
    for path in (
        "/../secret.txt",
        "/agui-websocket/../../secret.txt",
        "/agui-websocket/../../../secret.txt",
        "//" + str(tmp_path / "secret.txt"),
        "/agui-websocket/../agui-websocket/../../package/src/connection.js",
    ):
        assert web_file(web, path) is None, path
    assert web_file(web, "/")[0] == b"<!doctype html>"  # type: ignore[index]
    assert web_file(web, "/agui-websocket") is None  # a folder is not a file


def test_the_gateway_page_is_served_for_an_agent_without_a_web_folder() -> None:
    found = page_file(None, "/")
    assert found is not None
    page, kind = found
    assert kind == "text/html; charset=utf-8"
    assert b'src="/main.js"' in page
    assert page_file(None, "/chat.js") is not None
    assert page_file(None, "/agui-websocket/connection.js") is not None


def test_an_app_folder_is_laid_over_the_gateway_page(tmp_path: Path) -> None:
    web = app_folder(tmp_path)
    assert page_file(web, "/") == (b"<!doctype html>", "text/html; charset=utf-8")
    # What the app lacks is the gateway's: its page imports the chat by the same URLs.
    assert page_file(web, "/chat.js") == web_file(PAGE, "/chat.js")
    assert page_file(web, "/../secret.txt") is None
    assert page_file(web, "/nothing.js") is None
