"""The ADK services the Runner is given besides sessions: memory, artifacts, credentials.

ADK's tools and contexts reach for them on their own: ``PreloadMemoryTool`` searches memory
on every model call (and logs a traceback when there is none), ``load_memory`` and
``tool_context.save_artifact``/``load_artifact`` fail without one, and
``callback_context.save_credential``/``load_credential`` need a credential service. An agent
written for ``adk web`` or ag-ui-adk expects all three, so the gateway gives each unless
its setting says otherwise:

- ``GATEWAY_MEMORY``: ``memory`` (the default) is ``gateway.adk.memory.RecentMemory``, each
  user's recent runs in this process, bounded, fed at the end of every run
  (``MemoryPlugin``);
- ``GATEWAY_ARTIFACTS``: ``memory`` is ``gateway.adk.artifacts.RecentArtifacts``, ADK's
  ``InMemoryArtifactService`` within a budget;
- ``GATEWAY_CREDENTIALS``: ``memory`` is ADK's ``InMemoryCredentialService``;

and for each, ``none`` gives none, and ``package.module:attr`` names a service object (a
``VertexAiMemoryBankService``, a ``GcsArtifactService``, ...) or a function of the
``Settings`` that returns one. What each run has is in ``/capabilities``
(``custom.gateway.services``), and in one line of the log at start-up.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import warnings
from typing import Any

from google.adk.artifacts import BaseArtifactService
from google.adk.auth.credential_service.base_credential_service import BaseCredentialService
from google.adk.auth.credential_service.in_memory_credential_service import (
    InMemoryCredentialService,
)
from google.adk.memory import BaseMemoryService

from gateway.adk.artifacts import RecentArtifacts
from gateway.adk.hosting import HostingError
from gateway.adk.loading import call_factory, named
from gateway.adk.memory import RecentMemory
from gateway.config import Settings

__all__ = ["Services", "open_services"]

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Services:
    memory: BaseMemoryService | None = None
    artifacts: BaseArtifactService | None = None
    credentials: BaseCredentialService | None = None

    def described(self) -> dict[str, str | None]:
        """Each service's class name (None: none), for ``/capabilities`` and the log."""
        services = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return {
            kind: type(service).__name__ if service is not None else None
            for kind, service in services.items()
        }


def open_services(settings: Settings) -> Services:
    """The services the settings ask for; HostingError, with a sentence, for a setting that
    names something that is not one."""
    services = Services(
        memory=_service("memory", settings.memory, BaseMemoryService, RecentMemory, settings),
        artifacts=_service(
            "artifacts", settings.artifacts, BaseArtifactService, RecentArtifacts, settings
        ),
        credentials=_service(
            "credentials",
            settings.credentials,
            BaseCredentialService,
            InMemoryCredentialService,
            settings,
        ),
    )
    log.info(
        "ADK services: %s",
        ", ".join(f"{kind} {name or 'none'}" for kind, name in services.described().items()),
    )
    return services


def _service(kind: str, value: str, base: type, default: type, settings: Settings) -> Any:
    value = value.strip()
    if value == "none":
        return None
    if value in ("", "memory"):
        with warnings.catch_warnings():
            # ADK marks its in-memory credential service experimental on every construction.
            warnings.simplefilter("ignore", UserWarning)
            return default()
    where = f"GATEWAY_{kind.upper()}={value!r}"
    if ":" not in value:
        raise HostingError(f"{where}: say 'memory', 'none' or package.module:attr.")
    found = named(value, where)
    if inspect.isfunction(found) or inspect.ismethod(found):
        found = call_factory(found, settings, where)
    if not isinstance(found, base):
        raise HostingError(
            f"{where} is a {type(found).__qualname__}, not an ADK {base.__name__} "
            "(or a function of the Settings returning one)."
        )
    return found
