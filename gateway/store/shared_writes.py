"""One session written by several writers at once: a live turn's (``SessionService.serialised``).

Theory of operation. An append carries the revision its session object was at, so two in
flight at once carry the same one and the store refuses the second as stale. A live turn
has several writers of its thread (ADK's runner storing the events it yields, ADK's sender
storing typed text as it goes to the model, the gateway storing a browser's result), so
within the turn its appends take ``lock`` in turn. A writer that hands content to ADK,
which makes and stores the event itself, can have that event stamped on its way in
(``stamp``): the typed text of a live turn keeps the message id its client sent.
"""

from __future__ import annotations

import asyncio
from typing import Any

from google.adk.events import Event
from google.genai import types

from gateway.context import stamp


class SharedWrites:
    """The appends of one session within a live turn; see the module's docstring."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        # Metadata for the event that will carry each content, by the content object.
        self._stamps: dict[int, tuple[types.Content, dict[str, Any]]] = {}

    def stamp(self, content: types.Content, metadata: dict[str, Any]) -> None:
        """The event stored with ``content`` (this very object) gets ``metadata`` in its
        ``custom_metadata["agui"]``."""
        self._stamps[id(content)] = (content, metadata)

    def stamped(self, event: Event) -> None:
        """Applies the stamp waiting for ``event``'s content, if there is one."""
        if event.content is None or not self._stamps:
            return
        found = self._stamps.get(id(event.content))
        if found is None or found[0] is not event.content:
            return
        del self._stamps[id(event.content)]
        for key, value in found[1].items():
            stamp(event, key, value)
