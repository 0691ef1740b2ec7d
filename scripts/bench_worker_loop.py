"""What a worker's event loop costs a step of a run: the CPU of a busy loop's callbacks on
the worker's loop (``FirstTurnLoop``, ``gateway/adk/workers/first_turn.py``: asyncio's, its
ready queue in two levels, its ``call_soon`` in two Python calls) against the same loop with
asyncio's own ``call_soon`` (until session 46), and plain asyncio and uvloop, which keep no
order (uvloop's is what one process serves on: the floor a loop in Python is measured by).

The load is a worker's at 200 users in small: ``--runs`` runs under way, each a task that
waits on a timer now and then (the model's pace) and otherwise takes steps as ADK's do (a
future another callback resolves, a ``sleep(0)``), beside a run starting every timer's
tick that goes first (``go_first``) for a dozen steps. Each loop runs it ``--rounds`` times,
alternating, and the medians of the thread's CPU a step are printed against the first
loop's, measured in the same run: the ratio holds on a shared machine, where the absolute
figures move with the neighbours.

    .venv/bin/python -m scripts.bench_worker_loop                # 5 rounds
    .venv/bin/python -m scripts.bench_worker_loop --rounds 9 --runs 200
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable

import uvloop

from gateway.adk.workers.first_turn import FirstTurnLoop, go_first
from scripts._bench import alternating, rounds_parser

# Steps a run takes between two of its model's chunks, and the pace of those (seconds).
STEPS = 12
PACE = 0.002
# Steps of a starting run that go first, as ADK's to its model call.
STARTING = 12


class AsyncioCallSoon(FirstTurnLoop):
    """The worker's loop as it was until session 46: asyncio's own ``call_soon``."""

    call_soon = asyncio.SelectorEventLoop.call_soon


LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "FirstTurnLoop, asyncio's call_soon (before)": AsyncioCallSoon,
    "FirstTurnLoop (the worker's)": FirstTurnLoop,
    "asyncio, no order": asyncio.SelectorEventLoop,
    "uvloop, no order (one process's)": uvloop.new_event_loop,
}


async def load(runs: int, chunks: int) -> int:
    """Steps taken by ``runs`` runs of ``chunks`` paced chunks each, beside starting runs."""
    steps = 0

    async def run() -> None:
        nonlocal steps
        for _ in range(chunks):
            await asyncio.sleep(PACE)
            for _ in range(STEPS // 2):
                done = asyncio.get_running_loop().create_future()
                asyncio.get_running_loop().call_soon(done.set_result, None)
                await done
                await asyncio.sleep(0)
                steps += 2

    async def starting() -> None:
        nonlocal steps
        mark = go_first()
        for _ in range(STARTING):
            await asyncio.sleep(0)
            steps += 1
        mark.end()

    under_way = [asyncio.create_task(run()) for _ in range(runs)]
    started = []
    while not all(task.done() for task in under_way):
        started.append(asyncio.create_task(starting()))
        await asyncio.sleep(PACE)
    await asyncio.gather(*under_way, *started)
    return steps


def cpu_a_step(factory: Callable[[], asyncio.AbstractEventLoop], runs: int, chunks: int) -> float:
    """The thread's CPU seconds a step, on a new loop of ``factory``'s."""
    with asyncio.Runner(loop_factory=factory) as runner:
        began = time.thread_time()
        steps = runner.run(load(runs, chunks))
        return (time.thread_time() - began) / steps


def main() -> int:
    parser = rounds_parser(__doc__, rounds=5)
    parser.add_argument("--runs", type=int, default=100, help="runs under way (100)")
    parser.add_argument("--chunks", type=int, default=20, help="paced chunks a run (20)")
    args = parser.parse_args()
    medians = alternating(
        args.rounds,
        {
            name: functools.partial(cpu_a_step, factory, args.runs, args.chunks)
            for name, factory in LOOPS.items()
        },
    )
    base = medians[next(iter(LOOPS))]
    print(f"medians of {args.rounds} rounds, {args.runs} runs under way: CPU a step")
    for name, median in medians.items():
        print(f"  {name:46} {median * 1e6:6.2f} µs  {median / base:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
