"""``python -m tests.support.providers KIND --port P [--pace-ms MS]``: a local provider in a process
of its own, until SIGTERM or SIGINT (``scripts/bench_providers.py`` runs one per round)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal

from tests.support.providers import ChatCompletions, GeminiApi, Provider

KINDS: dict[str, type[Provider]] = {"chat-completions": ChatCompletions, "gemini": GeminiApi}


async def serve(provider: Provider) -> None:
    task = asyncio.create_task(provider.serve())
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pace-ms", type=float, default=0.0)
    args = parser.parse_args()
    provider = KINDS[args.kind](pace=args.pace_ms / 1000)
    provider.port = args.port
    asyncio.run(serve(provider))


if __name__ == "__main__":
    main()
