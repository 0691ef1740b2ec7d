"""What parsing ADK's JSON costs the main process a flagship story: pydantic's own validator
(``Event.model_validate_json``) against ``gateway.store.adk_json.parse_event``, over the very
texts a story makes it parse.

Runs the flagship story (``tests/support/flagship.py``) once on a gateway with two worker
processes and its store on a SQLite file, and records every ADK event text the main process
parses: the worker's appends and streamed chunks, and the events the reply's run reads back.
Then it parses all of them with each parser in turn, ``--rounds`` times, alternating, and
prints the medians of a story's parsing time and their ratio. Timing in one process, the
same texts and alternating rounds: the ratio holds on a shared machine, where the absolute
figures move with the neighbours. Each round first checks that both parsers made the same
events.

    .venv/bin/python -m scripts.bench_parse                # 15 rounds
    .venv/bin/python -m scripts.bench_parse --rounds 5
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path

from google.adk.events import Event

from gateway.adk.workers import pool
from gateway.store import adk_json, codec
from scripts._bench import alternating, print_against, rounds_parser, timing
from tests.support.flagship import flagship_navigated_then_honest_reply
from tests.support.servers import running_gateway

# Parses of all a story's texts a round: enough that a timer's tick is nothing.
REPEATS = 50


async def story_texts() -> list[bytes | str]:
    """The ADK event texts the main process parses in one flagship story with workers."""
    texts: list[bytes | str] = []
    parse = adk_json.parse_event

    def recorded(data: bytes | str, *, dumped: bool = False) -> Event:
        texts.append(data)
        return parse(data, dumped=dumped)

    pool.parse_event = codec.parse_event = recorded  # type: ignore[attr-defined]
    try:
        with tempfile.TemporaryDirectory(prefix="bench-parse-") as tmp:
            async with running_gateway(workers=2, db=str(Path(tmp) / "threads.db")) as gateway:
                await flagship_navigated_then_honest_reply(gateway)
    finally:
        pool.parse_event = codec.parse_event = parse  # type: ignore[attr-defined]
    return texts


def parsed(parse: Callable[[bytes | str], Event], texts: list[bytes | str]) -> None:
    """Every text parsed once."""
    for text in texts:
        parse(text)


def main() -> int:
    args = rounds_parser(__doc__).parse_args()
    texts = asyncio.run(story_texts())
    size = sum(len(text) for text in texts)
    print(
        f"a flagship story with two workers: {len(texts)} ADK event texts parsed here, {size} bytes"
    )

    def same() -> None:
        for text in texts:
            assert adk_json.parse_event(text) == Event.model_validate_json(text)

    ways = {
        "slow": lambda: parsed(Event.model_validate_json, texts),
        "fast": lambda: parsed(adk_json.parse_event, texts),
    }
    medians = alternating(args.rounds, timing(ways, REPEATS), same)
    before = ("Event.model_validate_json", medians["slow"])
    print_against(before, ("adk_json.parse_event", medians["fast"]), args.rounds, width=28)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
