"""Gemini's requests sent without aiohttp's two trips to a thread when the environment
names no proxy and no netrc file.

Where aiohttp is installed, google-genai sends through it, on a session of its own made
with ``trust_env=True``: for every request aiohttp then looks for a netrc file
(``run_in_executor``) and for a proxy in the environment (``asyncio.to_thread``), each in a
thread of the loop's executor, since either may read a file (or, on macOS and Windows, the
system's settings). Two trips to a thread and back, the thread and the loop waking each
other: on a quiet 2-core machine aiohttp's request to its connection took 0.74–0.83 ms
(0.33–0.36 of it CPU) where it takes 0.10–0.12 without them (``scripts/probe_stream.py
--provider gemini``). The image has no aiohttp (the test extras bring it): google-genai
sends through httpx there, which reads the environment once, and this is left unused.

Where there is nothing to find (urllib names no HTTP or WebSocket proxy, reading the
environment's variables alone as it does on Linux, and there is no netrc file where aiohttp
looks) aiohttp would find nothing; a request then goes through a session beside the SDK's,
on the SDK's own connector and cookies (its connections, its limits), which does not look
(``trust_env=False``): the same request, byte for byte. Anything else goes through the
SDK's session, looking in a thread as before: a proxy or a netrc file named, a platform
whose proxies are the system's, a session of the user's own (``http_options``) or
google-auth's. The environment is looked at for each request (urllib's reading of it again
only when it changed), so a proxy set later is obeyed.
"""

from __future__ import annotations

import asyncio
import functools
import os
import urllib.request
import warnings
from typing import Any

from google.genai import _api_client

__all__ = ["install", "nothing_to_find"]

# The schemes whose proxies aiohttp reads from the environment (``proxies_from_env``).
_PROXIED = ("http", "https", "ws", "wss")


def install(api_client: Any) -> None:
    """Has ``api_client`` (google-genai's ``BaseApiClient``) send through a session that
    does not look when there is nothing to find; left as it is where aiohttp is not its
    way to send or the platform's proxies are not the environment's alone."""
    if not _api_client.has_aiohttp:
        return
    if not all(hasattr(api_client, name) for name in ("_aiohttp_sessions", "_get_aiohttp_session")):
        return  # another google-genai: its way as it is
    if urllib.request.getproxies is not urllib.request.getproxies_environment:
        return
    sdks_way = api_client._get_aiohttp_session
    # The SDK's session this loop last gave, and the one beside it.
    beside: dict[asyncio.AbstractEventLoop, tuple[Any, Any]] = {}

    async def session() -> Any:
        given = await sdks_way()
        loop = asyncio.get_running_loop()
        if given is not api_client._aiohttp_sessions.get(loop) or not nothing_to_find():
            return given  # the user's, google-auth's, or one that has to look
        if loop not in beside or beside[loop][0] is not given:
            for gone in [other for other in beside if other.is_closed()]:
                del beside[gone]
            beside[loop] = (given, _quiet_beside(given))
        return beside[loop][1]

    api_client._get_aiohttp_session = session


def nothing_to_find() -> bool:
    """Whether aiohttp, trusting the environment, would find no proxy and no netrc."""
    if "NETRC" in os.environ or _proxies_named():
        return False
    # Where aiohttp's ``netrc_from_env`` looks without NETRC (one stat, ~4 µs).
    return not os.path.exists(os.path.expanduser("~/.netrc"))


# The environment as urllib last read its proxies from it, and whether it named one: urllib
# reads every variable (~80 µs), comparing them with the last read is ~0.3 µs.
_last_read: tuple[dict[Any, Any], bool] | None = None


def _proxies_named() -> bool:
    global _last_read
    variables = os.environ._data  # type: ignore[attr-defined]  # what it holds, undecoded
    if _last_read is None or _last_read[0] != variables:
        named = urllib.request.getproxies()
        _last_read = dict(variables), any(scheme in named for scheme in _PROXIED)
    return _last_read[1]


def _quiet_beside(given: Any) -> Any:
    """A session on ``given``'s connector and cookies, with its settings, that does not
    read the environment."""
    return _quiet_session()(
        connector=given.connector,
        connector_owner=False,
        cookie_jar=given.cookie_jar,
        headers=given.headers,
        timeout=given.timeout,
        version=given.version,
        auto_decompress=given.auto_decompress,
        read_bufsize=getattr(given, "_read_bufsize", _api_client.READ_BUFFER_SIZE),
        trust_env=False,
    )


@functools.cache
def _quiet_session() -> type:
    import aiohttp

    with warnings.catch_warnings():
        # aiohttp discourages subclasses; google-genai's own session is one, for this too.
        warnings.simplefilter("ignore", DeprecationWarning)

        class QuietSession(aiohttp.ClientSession):
            def __del__(self, _warnings: Any = warnings) -> None:
                # The connector is the SDK's session's, closed with it: nothing to warn of.
                pass

    return QuietSession
