"""Once start-up is over the garbage collector is set for a server's steady state
(``gateway/garbage.py``): what start-up built is frozen, a story's work sets off no
whole-heap collection, and as the heap grows (what a loaded gateway keeps: its threads, its
users' memory) no collection walks more than a few young generations' worth of objects,
each collection being a stall of the loop every run waits behind."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway import garbage
from tests.support.flagship import flagship_navigated_then_honest_reply
from tests.support.servers import running_gateway

# Collections a story may set off in the process that serves it and runs its test client,
# the process's first (lazy imports, caches filled): 4 young ones at 10,000, 12 young and 1
# middle at 3,000 (1 at 10,000 and 0 at 3,000 for each story after it); with CPython's
# defaults (700, 10, 10) a story also made 5 collections of the middle generation.
COLLECTIONS_A_STORY = 20

# What a growing heap keeps: more than a middle collection at 10,000 and 20 waited for.
KEPT = 250_000
# Objects a collection walks at most as it grows: the survivors of 6 young collections of
# 3,000 and a young generation (21,000), where 10,000 and 20 walked 210,000 at once.
WALKED_AT_MOST = 25_000


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
    assert [generation for generation in counted.seen if generation > 1] == []
    assert len(counted.seen) <= COLLECTIONS_A_STORY


@pytest.mark.unit
def test_a_growing_heap_is_walked_a_few_young_generations_at_a_time(collector: None) -> None:
    # A middle collection walks the survivors of the young ones since the last (one more
    # than its threshold) and a young generation: 66-95 ms of CPU in a loaded main process
    # at 10,000 and 20.
    gc.collect()
    gc.set_threshold(*garbage.THRESHOLDS)
    gc.callbacks.append(walked := _Walked())
    try:
        kept = [[n] for n in range(KEPT)]
    finally:
        gc.callbacks.remove(walked)
    assert len(kept) == KEPT
    assert 1 in walked.generations  # the middle generation was collected, and walked
    assert 2 not in walked.generations
    assert max(walked.objects) <= WALKED_AT_MOST


class _Counted:
    """A ``gc.callbacks`` entry noting the generation of each collection begun."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.seen.append(info["generation"])


class _Walked:
    """A ``gc.callbacks`` entry noting each collection's generation and how many objects
    it walks (those of its generation and the younger ones)."""

    def __init__(self) -> None:
        self.generations: list[int] = []
        self.objects: list[int] = []

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            generation = info["generation"]
            self.generations.append(generation)
            self.objects.append(sum(len(gc.get_objects(g)) for g in range(generation + 1)))
