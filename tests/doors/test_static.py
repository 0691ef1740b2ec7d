"""The hosted app's static files (``gateway.doors.static.web_file``): what a page may fetch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.doors.static import web_file

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
