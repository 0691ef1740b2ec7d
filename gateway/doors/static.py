"""The web page served at ``/``: the gateway's chat page for any agent, under what the hosted
app brings of its own.

The gateway ships a page (``gateway/web/``: the transcript, markdown, tool activity,
approvals, A2UI surfaces, Stop, reattach) so that ``agent-gateway serve my_agent`` can be
tried in a browser before anyone writes a client, as ``adk web`` can. A hosted app with a
``web`` folder (the demo's portal) is laid over it: a file of the app's wins, and what the
app does not have is the gateway's, so the app's page is its own ``index.html`` and screens
composed of the gateway's modules (``import "./chat.js"``) with no copy of them.
"""

from __future__ import annotations

import mimetypes
import os.path
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

# The gateway's own page: package data beside the modules, plain files in a wheel too.
PAGE = files("gateway") / "web"

_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}


def page_file(app_web: Traversable | None, path: str) -> tuple[bytes, str] | None:
    """The file for a request path: the hosted app's, if it has one, else the gateway's page."""
    found = web_file(app_web, path) if app_web is not None else None
    return found if found is not None else web_file(PAGE, path)


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
    kind = _TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0]
    return target.read_bytes(), kind or "application/octet-stream"
