"""Once start-up is over the garbage collector is set for a server's steady state
(``gateway/garbage.py``): what start-up built is frozen, and a story's work sets off no
collection of the older generations, each a stall of the loop every run waits behind."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway import garbage
from tests.support.flagship import flagship_navigated_then_honest_reply
from tests.support.servers import running_gateway

# Young collections a story may set off in the process that serves it and runs its test
# client: 4 here; with CPython's default threshold (700) a story also made 5 collections of
# the middle generation.
YOUNG_A_STORY = 8


@pytest.fixture
def collector() -> Iterator[None]:
    """The test process's collector as it was, after the test."""
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


@pytest.mark.unit
def test_settling_freezes_what_start_up_built_and_sets_the_steady_states_thresholds(
    collector: None,
) -> None:
    built = [[n] for n in range(1_000)]  # what start-up leaves alive
    frozen = gc.get_freeze_count()
    garbage.settle()
    assert gc.get_threshold() == garbage.THRESHOLDS
    assert gc.get_freeze_count() >= frozen + len(built)


@pytest.mark.server
async def test_a_story_on_a_ready_gateway_sets_off_no_collection_of_an_older_generation(
    collector: None, tmp_path: Path
) -> None:
    async with running_gateway(db=str(tmp_path / "threads.db")) as gateway:
        assert gc.get_threshold() == garbage.THRESHOLDS  # the app settled as it got ready
        gc.collect()  # every generation's count starts at zero
        gc.callbacks.append(counted := _Counted())
        try:
            await flagship_navigated_then_honest_reply(gateway)
        finally:
            gc.callbacks.remove(counted)
    assert [generation for generation in counted.seen if generation > 0] == []
    assert len(counted.seen) <= YOUNG_A_STORY


class _Counted:
    """A ``gc.callbacks`` entry noting the generation of each collection begun."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.seen.append(info["generation"])
