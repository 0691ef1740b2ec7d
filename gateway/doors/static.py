"""Static files of a hosted app (the demo's reference web client), served at ``/``."""

from __future__ import annotations

import mimetypes
import os.path
from importlib.resources.abc import Traversable
from pathlib import Path

_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}


def web_file(root: Traversable, path: str) -> tuple[bytes, str] | None:
    """The file for a request path and its content type, or None; never leaves ``root``.

    ``root`` is a folder, or package data from ``importlib.resources.files``, which an
    installed wheel keeps as plain files. The path is kept inside ``root`` by its text
    (``..`` folded before anything is opened), not by where links lead: a link the app
    ships in its folder (the reference client's ``agui-websocket/``, a checkout's link to
    the npm package, a copy in the wheel) is part of the app.
    """
    folder = Path(os.path.abspath(str(root)))
    name = "index.html" if path in ("/", "") else path.lstrip("/")
    target = Path(os.path.normpath(folder / name))
    if folder not in target.parents or not target.is_file():
        return None
    return target.read_bytes(), content_type(target.name)


def content_type(name: str) -> str:
    """The content type a file of this name is served with."""
    kind = _TYPES.get(Path(name).suffix) or mimetypes.guess_type(name)[0]
    return kind or "application/octet-stream"
