"""Open files enough for the connections the gateway lets in.

Every client connection is a file descriptor, and so are the listening socket, the store's
files, worker pipes and a run's connection to its model provider. Many hosts start a
process with a soft limit of 1,024 open files (systemd's default; the hard limit is far
higher), well under ``GATEWAY_MAX_CONNECTIONS`` (4,096): past it uvicorn cannot accept,
and a client's upgrade hangs until it times out or is reset, with no 503 and nothing in
the log. 1,000 users are enough to meet it.

A process may raise its own soft limit up to the hard one, as Go's runtime and nginx do, so
at start-up the gateway raises it to what its caps need: its connections, one outgoing
connection a run in progress, and ``FILES_BESIDES`` for the rest. Where the hard limit is
lower, the connection cap comes down to fit instead, so that the client past it gets the
transport's 503 with a sentence (``gateway.doors.transport``), and a warning says which
limit to raise. ``plan`` decides with no system call; ``fit`` applies it.
"""

from __future__ import annotations

import dataclasses
import logging
import resource

from gateway.config import Settings

log = logging.getLogger(__name__)

# Descriptors a gateway holds besides its clients' and its runs' connections: the
# listening socket, the store's files (a SQLite database, its WAL and shared memory), the
# event loop's, worker pipes, logs. An idle gateway on a file holds about 15.
FILES_BESIDES = 64


@dataclasses.dataclass(frozen=True)
class Plan:
    """The soft limit to set (None: leave it) and the connection cap that fits under it."""

    soft: int | None
    max_connections: int

    @staticmethod
    def needed(settings: Settings) -> int:
        """Open files for every connection let in and a provider's connection a run."""
        runs = settings.max_runs or settings.max_connections  # 0 runs: no cap of their own
        return settings.max_connections + runs + FILES_BESIDES


def plan(settings: Settings, soft: int, hard: int) -> Plan:
    """What ``fit`` does with the limits ``(soft, hard)`` (``resource.RLIM_INFINITY`` for
    none)."""
    needed = Plan.needed(settings)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return Plan(None, settings.max_connections)
    if hard == resource.RLIM_INFINITY or hard >= needed:
        return Plan(needed, settings.max_connections)
    # As many connections as the hard limit leaves room for, runs' and others' kept.
    room = hard - (needed - settings.max_connections)
    return Plan(hard if hard > soft else None, max(1, min(settings.max_connections, room)))


def fit(settings: Settings) -> Settings:
    """Raises this process's soft limit on open files to what ``settings`` need, and
    returns ``settings`` with the connection cap lowered where the hard limit is short."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    chosen = plan(settings, soft, hard)
    if chosen.soft is not None:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (chosen.soft, hard))
        except (ValueError, OSError) as error:  # a system that caps it lower (macOS)
            log.warning("could not raise the open-file limit from %d: %s", soft, error)
            chosen = plan(settings, soft, soft)
        else:
            log.info(
                "raised the soft limit on open files from %d to %d for %d connections",
                soft,
                chosen.soft,
                chosen.max_connections,
            )
    if chosen.max_connections == settings.max_connections:
        return settings
    log.warning(
        "open files are limited to %d (ulimit -Hn): GATEWAY_MAX_CONNECTIONS is lowered from"
        " %d to %d so that the client past it gets a 503; raise the hard limit to %d to"
        " serve %d",
        chosen.soft or soft,
        settings.max_connections,
        chosen.max_connections,
        Plan.needed(settings),
        settings.max_connections,
    )
    return dataclasses.replace(settings, max_connections=chosen.max_connections)
