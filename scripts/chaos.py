"""The exactly-once chaos run: the flagship story in Chromium, cut by reloads, TCP drops and
gateway SIGKILLs at every event of the run and at timed points 0-500 ms after Enter.

Each trial is one fresh thread in a fresh browser context (a third with an observer tab);
the faults take turns, and each sweeps every cut point in a seeded order before repeating
one (tests/e2e/chaos/trials.py says how a trial is read). One line is printed per trial,
then the table per fault, then the frame sequence of every trial that missed a target.

Targets: 0 doubles, 0 never performed, 0 lost results, 0 runs that wait out the
client-tool timeout, the reply matching the page in every trial.

    .venv/bin/python -m scripts.chaos                     # 111 trials, seed 1
    .venv/bin/python -m scripts.chaos --trials 30 --seed 7
    .venv/bin/python -m scripts.chaos --check             # exit 1 if a target is missed

Needs Debian's chromium (/usr/bin/chromium).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from tests.e2e.chaos.trials import (
    Outcome,
    Stage,
    calibrate,
    frame_count,
    plan_trials,
    report,
    run_trial,
    table,
)
from tests.support.browser import CHROMIUM


async def chaos(args: argparse.Namespace) -> list[Outcome]:
    with tempfile.TemporaryDirectory(prefix="chaos-") as workdir:
        async with Stage.running(
            Path(workdir), pace_ms=args.pace_ms, client_tool_timeout=args.client_tool_timeout
        ) as stage:
            calibration = await calibrate(stage)
            frames = frame_count(calibration)
            print(
                f"clean run: {frames} frames after Enter, settled in "
                f"{calibration.settled_ms:.0f} ms; pace {args.pace_ms:g} ms, client-tool "
                f"timeout {args.client_tool_timeout:g} s, deadline {args.deadline:g} s, "
                f"seed {args.seed}",
                flush=True,
            )
            outcomes = []
            for plan in plan_trials(args.trials, args.seed, frames):
                outcome = await run_trial(stage, plan, args.deadline)
                outcomes.append(outcome)
                print(outcome.line(), flush=True)
            print(f"gateway restarts: {stage.restarts}")
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=111, help="trials to run (default 111)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the plan (default 1)")
    parser.add_argument("--pace-ms", type=float, default=20, help="scripted model's chunk delay")
    parser.add_argument(
        "--client-tool-timeout", type=float, default=60, help="seconds (default 60)"
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=0,
        help="seconds a trial may take to settle "
        "(default: the client-tool timeout + 20, so a run that waits it out is seen to)",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args(argv)
    args.deadline = args.deadline or args.client_tool_timeout + 20
    if not CHROMIUM.exists():
        print(f"needs {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    started = time.monotonic()
    outcomes = asyncio.run(chaos(args))
    print(f"\n{len(outcomes)} trials in {time.monotonic() - started:.0f} s\n")
    print(table(outcomes))
    missed = report(outcomes)
    if missed:
        print(f"\ntrials that missed a target:\n{missed}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
