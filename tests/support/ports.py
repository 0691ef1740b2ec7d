"""Loopback ports for the servers and processes a test starts.

A port is found free by binding it, then handed to whoever listens on it a moment later.
Under pytest-xdist several workers do that at once; so that two of them never hand out the
same port, each draws from a range of its own, below the kernel's ephemeral ports (32768
and up on Linux), where no outgoing connection takes one either. Within its range a worker
starts at a random port, so two suites on one machine rarely walk the same ones.
"""

from __future__ import annotations

import os
import random
import socket

_LOWEST, _HIGHEST = 20_000, 32_000


def _own_range() -> range:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    size = (_HIGHEST - _LOWEST) // max(1, workers)
    start = _LOWEST + worker * size
    return range(start, start + size)


_RANGE = _own_range()
_next = random.randrange(len(_RANGE))


def free_port() -> int:
    """A loopback port of this worker's range that nothing listens on now."""
    global _next
    for _ in range(len(_RANGE)):
        port = _RANGE[_next % len(_RANGE)]
        _next += 1
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_RANGE}")
