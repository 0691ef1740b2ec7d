"""The lock that makes one process the writer of a database file.

One process writes a file: ``open`` takes an ``flock`` on ``<file>.lock`` (holding the
pid), which the kernel releases when the process dies, however it dies. A second gateway on
the same file refuses to start with a sentence naming the file and the running process.
"""

from __future__ import annotations

import fcntl
import os

from gateway.store.errors import StoreError
from gateway.store.sqlite.writable import unwritable_message, why_unwritable


def lock_for_writing(path: str) -> int:
    """Takes the lock that makes this process the file's one writer; returns its descriptor.

    An ``flock`` on ``<file>.lock`` beside the database, holding the owner's pid: the
    kernel releases it when its process ends, even by SIGKILL, so it never outlives one.
    """
    lock_path = os.path.realpath(path) + ".lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:
        if cause := why_unwritable(path):
            raise StoreError(unwritable_message(path, cause)) from None
        raise StoreError(f"cannot create the lock file {lock_path}: {error.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise StoreError(
            f"{path} is in use by another agent-gateway process (pid {owner}, lock"
            f" {lock_path}); stop it first, or point --db at another file."
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd
