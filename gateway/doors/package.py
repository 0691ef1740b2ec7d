"""The npm package ``@agent-gateway/agui-websocket``, served by the gateway itself, so a
project can use it with no registry.

Two forms, both at ``/packages/agui-websocket/``: each file the package publishes, as is
(its ES modules and their ``.d.ts`` types: a page imports ``index.js`` from the gateway's
origin, with an import map for its two peers, ``@ag-ui/client`` and ``rxjs``), and the
whole as the tarball ``npm pack`` would make, ``agent-gateway-agui-websocket-<version>.tgz``,
which ``npm install <its URL>`` takes. CORS is the doors' own (``gateway.doors.cors``): a
page on an allowed origin may import the modules; any other origin gets 403.

The files are package data, ``gateway/npm/agui-websocket`` (a link to
``clients/agui-websocket`` in a checkout, plain files in the wheel). What is published is
what the package's ``package.json`` says (its ``files``, with ``package.json`` and
``LICENSE``), never its tests or ``node_modules``. The tarball is built once, byte for byte
the same for one version on every gateway (fixed times and owners), so the integrity a
lock file records holds when it is fetched again.
"""

from __future__ import annotations

import fnmatch
import functools
import gzip
import io
import json
import logging
from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import PurePosixPath

from gateway.doors.asgi import Send, respond
from gateway.doors.static import content_type

log = logging.getLogger(__name__)

PREFIX = "/packages/agui-websocket/"
# Types that the file table of the hosted apps does not name.
_TYPES = {
    ".ts": "application/typescript; charset=utf-8",
    ".json": "application/json",
    ".md": "text/markdown; charset=utf-8",
    "": "text/plain; charset=utf-8",  # LICENSE
}
# What npm always packs besides the package's ``files``.
_ALWAYS = ("package.json", "LICENSE")


def serves(path: str) -> bool:
    """Whether ``path`` is this door's (then it takes GET only)."""
    return path.startswith(PREFIX)


class NpmPackage:
    """The package's published files, read from ``root``."""

    def __init__(self, root: Traversable) -> None:
        self.root = root

    @classmethod
    def bundled(cls) -> NpmPackage:
        return cls(resources.files("gateway") / "npm" / "agui-websocket")

    @functools.cached_property
    def manifest(self) -> dict[str, object]:
        loaded: dict[str, object] = json.loads(self.root.joinpath("package.json").read_bytes())
        return loaded

    @functools.cached_property
    def tarball_name(self) -> str:
        """``npm pack``'s name for it: the scope folded in, the version appended."""
        name = str(self.manifest["name"]).lstrip("@").replace("/", "-")
        return f"{name}-{self.manifest['version']}.tgz"

    def published(self) -> Iterator[str]:
        """The paths (``src/ledger.js``) the package publishes, sorted."""
        files = self.manifest.get("files")
        patterns = [*_ALWAYS, *(str(p) for p in files)] if isinstance(files, list) else [*_ALWAYS]
        found: set[str] = set()
        for pattern in patterns:
            *folders, name = PurePosixPath(pattern).parts
            folder = self.root.joinpath(*folders)
            if not folder.is_dir():
                continue
            for entry in folder.iterdir():
                if entry.is_file() and fnmatch.fnmatchcase(entry.name, name):
                    found.add("/".join([*folders, entry.name]))
        return iter(sorted(found))

    @functools.cached_property
    def _files(self) -> frozenset[str]:
        return frozenset(self.published())

    def file(self, path: str) -> tuple[bytes, str] | None:
        """The body and content type for a request path under ``PREFIX``, or None."""
        name = path.removeprefix(PREFIX)
        if name == self.tarball_name:
            return self.tarball, "application/gzip"
        if name not in self._files:  # also what is not published, and every ``..``
            return None
        kind = _TYPES.get(PurePosixPath(name).suffix) or content_type(name)
        return self.root.joinpath(*name.split("/")).read_bytes(), kind

    @functools.cached_property
    def tarball(self) -> bytes:
        """The package as ``npm pack`` lays it out (every file under ``package/``)."""
        import tarfile  # here: a gateway nobody asks for the tarball never loads it

        packed = io.BytesIO()
        with tarfile.open(fileobj=packed, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for name in self.published():
                body = self.root.joinpath(*name.split("/")).read_bytes()
                entry = tarfile.TarInfo(f"package/{name}")
                entry.size, entry.mode, entry.mtime = len(body), 0o644, 0
                tar.addfile(entry, io.BytesIO(body))
        return gzip.compress(packed.getvalue(), mtime=0)

    async def answer(self, path: str, send: Send) -> None:
        """GET ``path``: the file, or 404."""
        found = self.file(path)
        if found is None:
            await respond(send, 404, b"not found", b"text/plain")
            return
        body, kind = found
        if path.endswith(".tgz"):
            log.info("npm package %s served (%d bytes)", self.tarball_name, len(body))
        # A version's files change only with the gateway: a cache may keep them a while.
        cache = [(b"cache-control", b"public, max-age=300")]
        await respond(send, 200, body, kind.encode(), cache)
