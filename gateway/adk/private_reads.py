"""ADK's pydantic private attributes, read without pydantic's detour.

Theory of operation. ADK keeps a run's working parts in pydantic private attributes
(``InvocationContext._abort_state``, ``_event_queue``, ``_state_schema``; a
``TelemetryConfig``'s environment; a ``Session``'s revision). pydantic takes them out of the
class, so a read misses the instance and the class and ends in ``BaseModel.__getattr__``,
which first asks the private attribute whether it is a descriptor
(``hasattr(attribute, "__get__")``: a Python call that formats and raises an AttributeError,
caught) and only then reads ``__pydantic_private__``. ADK does that ~370 times in a run of the
expenses example, most of them ``is_aborted`` (two reads, at each streamed chunk and each
event): 3.0 µs a check in a warm loop against 0.24 once the read is direct, and ~0.6 ms of
the gateway's ~8 ms of CPU a run (docs/performance.md, session 52).

``spare_private_lookups`` gives each class of ``CLASSES`` a descriptor for each of its
private attributes, which reads the instance's ``__pydantic_private__`` at once. What it
returns is what pydantic's ``__getattr__`` would; a value that is not there (never set, the
model not yet initialised) raises AttributeError, whereupon Python calls pydantic's
``__getattr__``, which says what it always said. Nothing else changes: a write still goes
through pydantic's ``__setattr__``, which picks its handler from ``__private_attributes__``,
not from the class; the class's own read (``InvocationContext._abort_state``) still gives its
``ModelPrivateAttr``; a subclass that declares one of the names again is left to pydantic.
A private attribute whose default is a descriptor, which pydantic calls, is left too.

Installed once per process, by ``runner_for``, as ``telemetry.spare_unrecorded`` is: a
host's own Runners are spared the same work. A class not shaped as this expects (its own
``__getattr__``, or a name its class already has) is left as it is, with a debug line;
``tests/adk/test_private_reads.py`` fails if ADK moves what it reads at every chunk.
"""

from __future__ import annotations

import logging
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.models.llm_request import LlmRequest
from google.adk.sessions.session import Session
from google.adk.telemetry.context import TelemetryConfig
from pydantic import BaseModel

__all__ = ["CLASSES", "spare_private_lookups"]

log = logging.getLogger(__name__)

# The models whose private attributes a run reads, counted on the expenses example (reads
# a run): the invocation's context (~330), the run's telemetry settings (~40), the session
# (~5, the store's revision), the model request (~2).
CLASSES: tuple[type[BaseModel], ...] = (InvocationContext, TelemetryConfig, Session, LlmRequest)

# The classes done, so that a second call does nothing.
_spared: set[type[BaseModel]] = set()


class _PrivateRead:
    """One private attribute of ``owner``, read from an instance's ``__pydantic_private__``."""

    __slots__ = ("attribute", "name", "owner")

    def __init__(self, owner: type[BaseModel], name: str, attribute: Any) -> None:
        self.owner = owner
        self.name = name
        self.attribute = attribute  # the ModelPrivateAttr: what the class gives for the name

    def __get__(self, instance: Any, owner: type[Any] | None = None) -> Any:
        if instance is None:  # as pydantic's metaclass answers a read on the class
            private = (owner or self.owner).__dict__.get("__private_attributes__") or {}
            if self.name in private:
                return private[self.name]
            raise AttributeError(self.name)
        kind = type(instance)
        declared = kind.__private_attributes__.get(self.name)
        if kind is not self.owner and declared is not self.attribute:
            raise AttributeError(self.name)  # a subclass declared it again: pydantic's read
        try:
            return instance.__pydantic_private__[self.name]
        except (KeyError, TypeError):  # not set, or not initialised: pydantic says so
            raise AttributeError(self.name) from None


def spare_private_lookups(classes: tuple[type[BaseModel], ...] = CLASSES) -> None:
    """Gives each class of ``classes`` its private attributes' direct reads; once per
    process and class, whoever calls it first (``runner_for`` does, in a worker too)."""
    for cls in classes:
        if cls in _spared:
            continue
        _spared.add(cls)
        if not _shaped(cls):
            log.debug("%s is not read as pydantic reads a model: left as it is", cls.__name__)
            continue
        spared = []
        for name, attribute in cls.__private_attributes__.items():
            if hasattr(attribute, "__get__") or any(name in c.__dict__ for c in cls.__mro__):
                log.debug("%s.%s is not a plain private attribute: left", cls.__name__, name)
                continue
            setattr(cls, name, _PrivateRead(cls, name, attribute))
            spared.append(name)
        log.debug("%s's private attributes read directly: %s", cls.__name__, ", ".join(spared))


def _shaped(cls: type[BaseModel]) -> bool:
    """Whether ``cls`` reads attributes as pydantic's ``BaseModel`` does (no reader of its own)."""
    return (
        issubclass(cls, BaseModel)
        and getattr(cls, "__getattr__", None) is getattr(BaseModel, "__getattr__", None)
        and cls.__getattribute__ is object.__getattribute__
    )
