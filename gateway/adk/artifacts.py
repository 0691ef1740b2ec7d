"""Artifacts in this process, bounded (``GATEWAY_ARTIFACTS=memory``).

ADK's ``InMemoryArtifactService`` keeps every version of every artifact a tool saves, for
as long as the process lives: a tool that saves a file on each run would grow it without
end. ``RecentArtifacts`` is that service with a budget: each user's artifacts (every version,
of every thread, ``user:`` ones included) may hold ``USER_BYTES``, all users together
``TOTAL_BYTES``. Past a budget the artifact saved least recently goes, all its versions
(the user's own first; then those of the user heard from least recently), and a log line
says which. One version larger than a user's whole budget is refused with a sentence, which
the tool that saved it meets as an error.
"""

from __future__ import annotations

import collections
import logging
from typing import Any

from google.adk.artifacts import InMemoryArtifactService
from google.genai import types
from pydantic import PrivateAttr

__all__ = ["TOTAL_BYTES", "USER_BYTES", "RecentArtifacts"]

log = logging.getLogger(__name__)

USER_BYTES = 32 << 20
TOTAL_BYTES = 256 << 20

# (app, user) and (filename, session id): where an artifact is.
_User = tuple[str, str]
_Artifact = tuple[str, str | None]


class RecentArtifacts(InMemoryArtifactService):
    """ADK's in-memory artifacts within a budget (see the module docstring)."""

    user_bytes: int = USER_BYTES
    total_bytes: int = TOTAL_BYTES
    # By user, the user heard from least recently first; by artifact, the oldest first.
    _sizes: collections.OrderedDict[_User, collections.OrderedDict[_Artifact, int]] = PrivateAttr(
        default_factory=collections.OrderedDict
    )
    _total: int = PrivateAttr(default=0)

    @property
    def size(self) -> int:
        return self._total

    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: types.Part | dict[str, Any],
        session_id: str | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        size = _size(artifact)
        if size > self.user_bytes:
            raise ValueError(
                f"Artifact {filename!r} is {size} bytes; this gateway keeps at most "
                f"{self.user_bytes} bytes of a user's artifacts in memory "
                "(GATEWAY_ARTIFACTS names a service that keeps more)."
            )
        version = await super().save_artifact(
            app_name=app_name,
            user_id=user_id,
            filename=filename,
            artifact=artifact,
            session_id=session_id,
            custom_metadata=custom_metadata,
        )
        user = (app_name, user_id)
        mine = self._sizes.pop(user, None) or collections.OrderedDict()
        self._sizes[user] = mine
        key = (filename, None if filename.startswith("user:") else session_id)
        mine[key] = mine.pop(key, 0) + size
        self._total += size
        while sum(mine.values()) > self.user_bytes:
            await self._forget_oldest(user)
        while self._total > self.total_bytes:
            await self._forget_oldest(next(iter(self._sizes)))
        return version

    async def delete_artifact(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> None:
        await super().delete_artifact(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
        )
        mine = self._sizes.get((app_name, user_id))
        key = (filename, None if filename.startswith("user:") else session_id)
        if mine is not None and key in mine:
            self._total -= mine.pop(key)

    async def _forget_oldest(self, user: _User) -> None:
        (filename, session_id), _ = next(iter(self._sizes[user].items()))
        app_name, user_id = user
        log.info("artifact %s of user %s forgotten: over the in-memory budget", filename, user_id)
        await self.delete_artifact(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
        )
        if not self._sizes[user]:
            del self._sizes[user]


def _size(artifact: types.Part | dict[str, Any]) -> int:
    part = artifact if isinstance(artifact, types.Part) else types.Part.model_validate(artifact)
    if part.inline_data is not None and part.inline_data.data is not None:
        return len(part.inline_data.data)
    if part.text is not None:
        return len(part.text.encode())
    return len(part.model_dump_json(exclude_none=True))
