"""Why this process cannot write a database file, in words an operator acts on.

SQLite opens a file it may not write read-only without a word, and says only "attempt to
write a readonly database" at the first write (or "unable to open database file" when it
cannot create the WAL files beside it). That reads like damage, and damage's advice,
restoring a backup, is wrong: the file is fine, the permissions or the mount are not. So
when an open fails, the store asks here first, looking where SQLite writes: the mount, the
file, and the folder that holds ``<file>-wal`` and ``<file>-shm``.
"""

from __future__ import annotations

import os
from pathlib import Path


def why_unwritable(path: str) -> str | None:
    """The cause this process cannot write ``path`` or the WAL files beside it; None if it
    can (as far as the mount and the permissions tell)."""
    file = Path(path).absolute()
    folder = file.parent
    who = f"this user (uid {os.getuid()})"
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return f"the file system holding {folder} is mounted read-only"
    except OSError:
        return None  # the folder is missing: SQLite's own error says so
    if file.exists() and not os.access(file, os.W_OK):
        return (
            f"the file is read-only for {who}: make it writable (chmod u+w) or run the "
            "gateway as its owner"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        return (
            f"its folder {folder} is read-only for {who}, and SQLite writes "
            f"{file.name}-wal and {file.name}-shm beside the file"
        )
    return None


def unwritable_message(path: str, cause: str) -> str:
    return f"{path} cannot be written: {cause}. The file was left as it is."
