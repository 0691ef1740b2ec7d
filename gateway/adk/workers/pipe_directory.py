"""The private directory that holds the workers' pipe, and the ones killed gateways left.

A gateway that stops removes its directory (``WorkerPool.close``); one that is killed
(SIGKILL, the OOM killer, a node lost) cannot, and each start of a gateway with workers
left one more in the temporary directory. So each holds an ``flock`` on a file in its
directory for as long as it lives, which the kernel lets go of when the process ends
however it ends; a gateway that starts removes every such directory whose lock it can
take. A lock, not the process id in the name: a pid says nothing across PID namespaces
(containers sharing ``/tmp``) and is reused.

A lock file appears under its name only once held (made under another, locked, then
renamed: one atomic step), so no sweep finds a live gateway's unlocked; a directory with
no lock file (made before this, or by a gateway killed within those steps) is left alone:
nothing says whose it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import tempfile

log = logging.getLogger(__name__)

PREFIX = "gateway-workers-"
_LOCK = "lock"
# The lock's name until it is held (see above).
_MAKING = "lock.making"


class PipeDirectory:
    """A made directory, locked until ``remove``."""

    def __init__(self, path: str, lock: int) -> None:
        self.path = path
        self._lock = lock

    @classmethod
    def make(cls, root: str | None = None) -> PipeDirectory:
        """Removes what killed gateways left in ``root`` (the temporary directory), then
        makes this gateway's directory (mode 0700, as ``mkdtemp`` makes it), locked."""
        root = root or tempfile.gettempdir()
        swept(root)
        path = tempfile.mkdtemp(prefix=PREFIX, dir=root)
        making = os.path.join(path, _MAKING)
        lock = os.open(making, os.O_WRONLY | os.O_CREAT, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)
        os.rename(making, os.path.join(path, _LOCK))
        return cls(path, lock)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.close(self._lock)


def swept(root: str) -> int:
    """Removes the directories in ``root`` whose gateway has ended; returns how many."""
    removed = 0
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            if entry.name.startswith(PREFIX) and _ours(entry) and _ended(entry.path):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed += 1
    if removed:
        log.info("removed %d workers' pipe directories left by gateways that were killed", removed)
    return removed


def _ours(entry: os.DirEntry[str]) -> bool:
    """A directory (not a link to one) of this process's user: no other is ours to remove."""
    try:
        return entry.is_dir(follow_symlinks=False) and entry.stat().st_uid == os.getuid()
    except OSError:
        return False


def _ended(path: str) -> bool:
    """Whether ``path``'s lock could be taken: its gateway has ended. A directory with no
    lock file (older, or another user's that this one cannot open) is not known to have."""
    try:
        lock = os.open(os.path.join(path, _LOCK), os.O_WRONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(lock)  # and with it the lock taken, if it was: removed next, by the caller
    return True
