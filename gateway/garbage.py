"""The cyclic garbage collector, set for a server's steady state once start-up is over.

CPython collects its youngest generation whenever container objects allocated outnumber
those freed by 700, the middle one every 10th time, and the whole heap every 10th time of
that once a quarter of the oldest generation is new since the last. Those numbers suit a
script. In a gateway every collection walks objects a story's work made and that mostly
die by reference count a moment later (events, frames, futures, a run's state), and while
it walks, the event loop serves nobody.

Measured (session 43, ``scripts/load.py`` at 200 paced users with ``GATEWAY_WORKERS=auto``,
a probe on ``gc.callbacks`` timing each collection on its thread's CPU clock): the main
process spent 14-16% of its CPU collecting, 0.4 ms a young collection 30 times a second,
4 ms a middle one 3 times a second, and 58 ms of CPU on a whole-heap one every 4 s (its
~75,000 objects not frozen: the connections, threads and runs of the moment), each a
stall of the loop that every run's next event waited behind (300 ms of wall time on the
loaded machine); a worker spent 7-11%, one process 17%. With the young generation at
10,000 and the middle one every 20th, most of a story's objects die by reference count
before any collection sees them: in the same runs the main process spent 4% of its CPU
collecting (a young collection of ~14 ms every second or two, a middle one of ~60 ms
about once in 20 s, no whole-heap one), a worker 4%, one process 6.5%
(docs/first-event.md, "The garbage collector's stalls").

Counted (session 51, a probe on ``gc.callbacks``, 200 paced users with ``GATEWAY_WORKERS=auto``):
what a young collection walks is nearly all alive. At 10,000 the main process's youngest
generation held ~25,000 objects when it was collected (objects of older generations that
die lower its count: ~2.5 times the threshold), nearly every one survived, and no big
container was among them: 0.26 µs an object, so a young collection is long because it is
large. What is garbage is ADK's telemetry (each agent invocation's and workflow's scope
names itself through its OpenTelemetry context: a cycle, with its token usage) in the
process that runs ADK, and nothing else: after the ramp the main process's collections
found none at all. A middle collection walks every survivor of the young ones since the
last: 20 of them at 10,000, 66-95 ms of CPU in the main process (113-144 ms of wall time).
With a young collection every 3,000 allocations and the middle one every 5th, no
collection of the main process took more than 18 ms of CPU a young one (1.2 at the median)
or 29 a middle one (56 ms of wall time at the longest), each worker's 10 and 20 (48); the
collector's CPU grew by a third (the main process 1.7 -> 2.3 s a 40 s round): a survivor is
walked once in a young collection and once in a middle one whatever the thresholds, but a
young one now catches objects that would have died before a later one
(docs/first-event.md, "The collector's stalls counted (session 51)").

A whole-heap collection still waits for 260 middle ones (3.9 million allocations past
what died, as before), and one as long as a quarter of the heap is not new.

What start-up built (ADK's modules, the agent, the warm-up's objects) is frozen first:
never collected, a whole-heap collection does not walk it either.
"""

from __future__ import annotations

import gc
import logging

__all__ = ["THRESHOLDS", "settle"]

log = logging.getLogger(__name__)

# gc.set_threshold's: the youngest generation's allocations, then how many collections of
# each generation make one of the next.
THRESHOLDS = (3_000, 5, 260)


def settle() -> None:
    """Start-up is over: collects what it left, freezes what stays, and sets the
    collector's thresholds for the steady state (``THRESHOLDS``)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    log.debug(
        "garbage collector: %d objects frozen, thresholds %s", gc.get_freeze_count(), THRESHOLDS
    )
