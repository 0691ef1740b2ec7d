"""The reference web client: files under ``gateway/web/`` served at ``/``."""

from __future__ import annotations

import mimetypes
from pathlib import Path

WEB_DIR = Path(__file__).resolve().parent / "web"

_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}


def web_file(path: str) -> tuple[bytes, str] | None:
    """The file for a request path and its content type, or None; never leaves WEB_DIR."""
    name = "index.html" if path in ("/", "") else path.lstrip("/")
    target = (WEB_DIR / name).resolve()
    if WEB_DIR not in target.parents or not target.is_file():
        return None
    kind = _TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0]
    return target.read_bytes(), kind or "application/octet-stream"
