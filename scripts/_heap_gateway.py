"""The unchanged gateway with a heap profile to be read from outside, for ``bench_footprint``.

The first SIGUSR1 starts tracemalloc (tracing start-up's imports too would make start-up
minutes long on a busy machine, and what they cost is RSS the bench reads anyway); each
later one collects garbage and writes a snapshot of what was allocated since, and is still
held, to ``DIRECTORY/heap-K.pickle`` (K counts up from 0), then ``heap-K.done`` once it is
whole. Every handler writes ``signal-K.done`` when it is over. A Python signal handler runs
on the main thread between two bytecodes: the event loop is simply paused meanwhile.

    python -m scripts._heap_gateway DIRECTORY [gateway flags...]
"""

from __future__ import annotations

import gc
import itertools
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType

from gateway import __main__ as gateway

# Frames kept of each allocation's traceback: enough to reach the gateway's own code.
FRAMES = 25


def main() -> int:
    directory, flags = Path(sys.argv[1]), sys.argv[2:]
    signals, snapshots = itertools.count(), itertools.count()

    def snapshot(_signal: int, _frame: FrameType | None) -> None:
        gc.collect()
        if not tracemalloc.is_tracing():
            tracemalloc.start(FRAMES)
        else:
            path = directory / f"heap-{next(snapshots)}.pickle"
            tracemalloc.take_snapshot().dump(str(path))
        (directory / f"signal-{next(signals)}.done").touch()

    signal.signal(signal.SIGUSR1, snapshot)
    return gateway.main(flags)


if __name__ == "__main__":
    sys.exit(main())
