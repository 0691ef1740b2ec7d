"""ADK's private attributes as the gateway's runs read them: straight from the instance,
with pydantic's answers unchanged (``gateway.adk.private_reads``)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Iterator
from importlib.resources import files
from typing import Any

import pytest
from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.run_config import RunConfig
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.session import Session
from google.adk.telemetry.context import TelemetryConfig
from google.genai import types
from pydantic import BaseModel, PrivateAttr
from pydantic.fields import ModelPrivateAttr

from gateway.adk import telemetry
from gateway.adk.hosting import Hosted, runnable_app
from gateway.adk.invocation import runner_for
from gateway.adk.private_reads import CLASSES, _PrivateRead, spare_private_lookups
from gateway.adk.services import Services
from gateway.examples.expenses.agent import root_agent
from gateway.models.script import ScriptLlm

pytestmark = pytest.mark.unit

SCRIPT = str(files("gateway.examples.expenses") / "script.json")

# What ADK reads at each streamed chunk or event, and must still keep as a private attribute
# for the direct read to reach it: ``is_aborted``, ``_enqueue_event``, each callback's context,
# the telemetry's settings, the store's revision.
READ_AT_EVERY_CHUNK = {
    InvocationContext: ("_abort_state", "_event_queue", "_state_schema"),
    TelemetryConfig: ("_env_ignore_per_request", "_env_experimental_genai_semconv"),
    Session: ("_storage_update_marker",),
}


@pytest.fixture
def pydantic_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[tuple[str, str]]]:
    """The reads that reach pydantic's ``BaseModel.__getattr__``, by class and name."""
    reads: Counter[tuple[str, str]] = Counter()
    original = BaseModel.__getattr__  # type: ignore[attr-defined]

    def counted(self: BaseModel, name: str) -> Any:
        reads[(type(self).__name__, name)] += 1
        return original(self, name)

    monkeypatch.setattr(BaseModel, "__getattr__", counted)
    yield reads


async def test_a_run_reads_adks_private_attributes_without_pydantics_detour(
    pydantic_reads: Counter[tuple[str, str]],
) -> None:
    """One run of the expenses example (its tool, then the answer streamed): none of the
    ~370 reads of the spared classes' private attributes goes through pydantic's
    ``__getattr__``, each of which raised and caught an AttributeError."""
    runner = runner_for(
        runnable_app(Hosted(root_agent, model=ScriptLlm.from_file(SCRIPT))),
        InMemorySessionService(),
        Services(),
    )
    config = RunConfig(streaming_mode=StreamingMode.SSE, telemetry=telemetry.RUN_TELEMETRY)
    message = types.Content(role="user", parts=[types.Part(text="Show me my expenses")])
    events = [
        event
        async for event in runner.run_async(
            user_id="u", session_id=uuid.uuid4().hex, new_message=message, run_config=config
        )
    ]
    assert any(event.partial for event in events)  # streamed: many chunks, many checks
    assert any(call.name == "list_expenses" for e in events for call in e.get_function_calls())
    private = {(cls.__name__, name) for cls in CLASSES for name in cls.__private_attributes__}
    detoured = {read: n for read, n in pydantic_reads.items() if read in private}
    assert detoured == {}


def test_adk_still_keeps_what_a_run_reads_in_private_attributes() -> None:
    """If ADK moves what it reads at every chunk out of pydantic's private attributes,
    or gives a class its own attribute reader, this says so: the direct reads are then
    to be looked at again."""
    spare_private_lookups()
    for cls, names in READ_AT_EVERY_CHUNK.items():
        assert cls in CLASSES
        for name in names:
            assert isinstance(cls.__private_attributes__.get(name), ModelPrivateAttr), name
            assert isinstance(cls.__dict__.get(name), _PrivateRead), f"{cls.__name__}.{name}"


class Model(BaseModel):
    field: int = 0
    _plain: int = 1
    _factory: list[int] = PrivateAttr(default_factory=list)
    _unset: str = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        self._plain += 1  # a read and a write before any caller's


class Again(Model):
    _plain: int = 10  # declared again by a subclass: pydantic's read, as before


def test_a_private_attribute_reads_writes_and_fails_as_pydantic_makes_it() -> None:
    """Reading, writing, copying, a class's read and a missing value: the same answers
    and the same errors as pydantic's own reads."""
    before = Model(field=3)
    plain, factory = before._plain, before._factory
    with pytest.raises(AttributeError) as missing_before:
        before._unset  # noqa: B018 - the read is the test
    constructed = Model.model_construct()._plain
    spare_private_lookups((Model,))

    model = Model(field=3)
    assert (model._plain, model._factory) == (plain, factory) == (2, [])
    assert getattr(model, "_state", "absent") == "absent"
    assert Model._plain is Model.__private_attributes__["_plain"]
    model._plain, model._unset = 7, "set"
    assert model.__pydantic_private__ == {"_plain": 7, "_factory": [], "_unset": "set"}
    assert (model._plain, model._unset) == (7, "set")
    copy = model.model_copy()
    assert (copy._plain, copy._factory is model._factory) == (7, True)
    with pytest.raises(AttributeError) as missing:
        Model()._unset  # noqa: B018
    assert str(missing.value) == str(missing_before.value)
    assert Model.model_construct()._plain == constructed
    again = Again()
    assert (again._plain, Again._plain.get_default()) == (11, 10)
    assert isinstance(Model.__dict__["_plain"], _PrivateRead)
    assert "_plain" not in Again.__dict__


def test_a_class_with_its_own_reader_is_left_alone() -> None:
    """A model that reads attributes its own way is not given direct reads."""

    class Own(BaseModel):
        _kept: int = 1

        def __getattr__(self, name: str) -> Any:
            return super().__getattr__(name)  # type: ignore[misc]

    spare_private_lookups((Own,))
    assert "_kept" not in Own.__dict__
    assert Own()._kept == 1


async def test_an_abort_is_seen_through_the_direct_read() -> None:
    """``is_aborted``, the read ADK makes most, still sees the signal a cancel trips."""
    spare_private_lookups()
    context = InvocationContext(
        session_service=InMemorySessionService(),
        invocation_id="i",
        agent=root_agent,
        session=Session(id="s", app_name="a", user_id="u"),
    )
    assert not context.is_aborted
    context.abort()
    await asyncio.sleep(0)
    assert context.is_aborted
