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

Counted (session 51, the same probe, 200 paced users with ``GATEWAY_WORKERS=auto``): what
a collection walks is nearly all alive. At 10,000 the main process's youngest generation
held ~25,000 objects when collected (an older object's death lowers the count that sets a
collection off), no big container among them, 0.26 µs of CPU an object: a collection is
long because it is large. The only cyclic garbage is ADK's telemetry (each invocation's and
workflow's scope is kept in an OpenTelemetry context that holds the scope: a cycle a run)
in whichever process runs ADK; the main process, once its workers take the runs, makes
none. A middle collection walks every survivor of the young ones since the last: at 20 of
10,000 the main process's were its longest stops, 55-118 ms of CPU (103-144 ms of wall
time at the longest a round). With a young collection every 3,000 and a middle one every
5th, the longest was 36-59 ms of wall time (a worker's 24-46, was 40-107), for a third more
of the collector's CPU (the main process 1.7 -> 2.3 s a 40 s round, +2-3% of a story's
CPU): a survivor is walked once young and once middle whatever the thresholds, and a young
collection now also meets some objects that would have died before a later one. The first
text's p99 moved by less than its rounds' spread (docs/first-event.md, "The collector's
stalls counted (session 51)"). A whole-heap collection still waits for 260 middle ones,
3.9 million allocations past what died, as before.

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
