"""Runs per second of the expenses example: the gateway over /ws against a plain ADK Runner.

Both sides host ``gateway.examples.expenses.agent``'s root agent with its own script model
at pace 0, and run one-turn runs of "Show me my expenses", each on a new thread: the model
calls the server tool ``list_expenses``, then streams the answer built from its result (two
model calls, one tool, 37 AG-UI events). The browser declares the example's client tool
``showExpense``, and the runner offers it too, so both give the model the same tools.

- gateway: ``python -m gateway --agent gateway.examples.expenses.agent --model
  script:<its script>`` in a subprocess (127.0.0.1, --db :memory:), C websocket clients.
- runner: google.adk's Runner over InMemorySessionService in this process, with the App
  as the gateway runs it (``gateway.adk.hosting.runnable_app``), C tasks.

The phases, the table and the ratios are ``scripts/bench_runs.py``'s. Each phase is measured
in four parts, the gateway's and the runner's taking turns, so that the load of a shared
machine, which moves within seconds, falls on both sides alike.

    .venv/bin/python -m scripts.bench_agents               # 3 rounds, then their medians
    .venv/bin/python -m scripts.bench_agents --rounds 1 --runs 200 --clients 1
    .venv/bin/python -m scripts.bench_agents --text hello  # a text-only turn instead
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from importlib.resources import files

import uvloop
from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.run_config import RunConfig
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from websockets.asyncio.client import connect

from gateway.adk.hosting import Hosted, runnable_app
from gateway.context import RUN_METADATA_KEY
from gateway.doors.warmup import skip_absent_a2a
from gateway.examples.expenses.agent import BROWSER_TOOLS, root_agent
from gateway.models.script import ScriptLlm
from gateway.tools import catalog
from gateway.tools.client import CLIENT_TOOLS_KEY
from scripts._bench import LocalGateway, local_gateway
from scripts.bench_runs import (
    BENCH_FLAGS,
    USER,
    WARM_UP_RUNS,
    Phase,
    Timing,
    gateway_phases,
    gateway_run,
    joined,
    phase_arguments,
    print_phases,
    runner_phases,
    runner_run,
    slices,
    warm_up_runner,
)

AGENT = "gateway.examples.expenses.agent"
SCRIPT = str(files("gateway.examples.expenses") / "script.json")
TURN = "Show me my expenses"
# Issue 32: the gateway over /ws at 0.9x a plain Runner's runs/s, with 1 and 8 clients.
RATE_TARGET = 0.90


async def warm_up_gateway(gateway: LocalGateway, text: str) -> None:
    # The start-up warm-up greets; the turn measured has first-call costs of its own.
    async with connect(gateway.ws_url(USER), max_size=None, compression=None) as ws:
        for _ in range(WARM_UP_RUNS):
            await gateway_run(ws, list(BROWSER_TOOLS), text)


async def measure(
    gateway: LocalGateway, runs: int, concurrency: Sequence[int], text: str, first: str
) -> list[Phase]:
    """For each number of clients, a gateway phase and a runner phase, each measured in
    ``SLICES`` parts, the two sides taking turns (``first`` first, then the other first):
    the load of a shared machine moves within seconds, and falls on both."""
    tools: list[object] = list(BROWSER_TOOLS)
    await warm_up_gateway(gateway, text)
    run = await warmed_runner(text)
    phases = []
    for count in concurrency:
        parts: dict[str, list[Phase]] = {"gateway": [], "runner": []}
        for index, sliced in enumerate(slices(runs, count)):
            gateway_first = (first == "gateway") == (index % 2 == 0)
            sides = ("gateway", "runner") if gateway_first else ("runner", "gateway")
            for side in sides:
                if side == "gateway":
                    parts[side] += await gateway_phases(gateway, sliced, [count], tools, text)
                else:
                    parts[side] += await runner_phases(run, sliced, [count])
        phases += [joined(parts["gateway"]), joined(parts["runner"])]
    return phases


def build_runner() -> Runner:
    """The example on a plain Runner: the same App, model and client tool as the gateway's.

    The browser's declaration becomes a catalog entry here: a bare Runner has no browser
    to declare it. The gateway's fix for ADK's per-run failing A2A import applies too.
    """
    skip_absent_a2a()
    browser = catalog.from_entries(
        catalog.ToolEntry(tool["name"], tool["description"], tool["parameters"], "client")
        for tool in BROWSER_TOOLS
    )
    hosted = Hosted(root_agent, catalog=browser, model=ScriptLlm.from_file(SCRIPT))
    return Runner(
        app=runnable_app(hosted),
        session_service=InMemorySessionService(),
        auto_create_session=True,
    )


async def warmed_runner(text: str) -> Callable[[], Awaitable[Timing]]:
    """One run of the plain Runner, warmed as the gateway is."""
    config = RunConfig(
        streaming_mode=StreamingMode.SSE,
        custom_metadata={RUN_METADATA_KEY: {CLIENT_TOOLS_KEY: [t["name"] for t in BROWSER_TOOLS]}},
    )
    run = functools.partial(runner_run, build_runner(), config, text)
    await warm_up_runner(run)
    return run


def main() -> None:
    parser = phase_arguments(__doc__)
    parser.add_argument("--text", default=TURN, help=f"what the user says ({TURN!r})")
    args = parser.parse_args()
    concurrency = [int(c) for c in args.clients.split(",")]
    # ADK warns once per run about token usage; the server logs to a file, so do the same here.
    logging.basicConfig(filename=os.devnull, level=logging.INFO)
    rounds: list[list[Phase]] = []
    flags = ("--agent", AGENT, "--model", f"script:{SCRIPT}", *BENCH_FLAGS)
    for number in range(1, args.rounds + 1):
        first = "gateway" if number % 2 else "runner"
        with local_gateway(*flags) as gateway:
            rounds.append(uvloop.run(measure(gateway, args.runs, concurrency, args.text, first)))
        # The machine's load: on a shared machine it moves both sides' figures.
        load = os.getloadavg()[0]
        print(f"\nround {number}: the expenses example, {args.text!r} (load {load:.1f})")
        print_phases(rounds[-1:], concurrency, RATE_TARGET)
    if len(rounds) > 1:
        print(f"\nmedian of {len(rounds)} rounds")
        print_phases(rounds, concurrency, RATE_TARGET)


if __name__ == "__main__":
    main()
