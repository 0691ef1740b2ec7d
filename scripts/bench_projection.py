"""What the store's projection of a flagship story's events (their AG-UI messages, written
at each append: ``gateway.translate.history.event_messages``) and the live translation of
its tool calls cost, the way until session 49 and the way now.

Until session 49 every JSON text of a tool call's arguments or a result was written by
``json.dumps``, which builds an encoder at each call (a third of a small value's dump),
and a browser's answer kept in its own words was dumped anyway (a default to ``dict.get``
is made every time). Now one encoder is built once, and the answer is dumped only when it
is shown so.

Runs the flagship story once on a gateway with two worker processes
(``scripts/bench_crossing.py``'s recording) for the very events it appends, then writes
their messages and their tool calls' arguments each way in turn, ``--rounds`` times,
alternating, and prints the medians and their ratio. Each round first checks that both
ways write the same.

    .venv/bin/python -m scripts.bench_projection                # 15 rounds
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

from google.adk.events import Event
from google.genai import types

from gateway.store import adk_json
from gateway.store.codec import dump_messages
from gateway.translate import history, tool_results
from scripts._bench import alternating, print_against, rounds_parser, timing
from scripts.bench_crossing import recorded_story

# A story's work done this many times a round: enough that a timer's tick is nothing.
REPEATS = 200


def dumped_each_call(value: Any) -> str:
    """``dump_json`` until session 49."""
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), default=tool_results._plain_or_str
    )


def words_dumped_anyway(response: types.FunctionResponse, own_words: dict[str, Any]) -> Any:
    return own_words.get(response.id or "", dumped_each_call(response.response or {}))


@contextlib.contextmanager
def before() -> Iterator[None]:
    now = history.dump_json, history._browser_words  # type: ignore[attr-defined]
    history.dump_json, history._browser_words = dumped_each_call, words_dumped_anyway  # type: ignore[attr-defined]
    try:
        yield
    finally:
        history.dump_json, history._browser_words = now  # type: ignore[attr-defined]


def story_work(events: list[Event]) -> None:
    """Each append's messages, as the store writes them, and each call's arguments, as the
    translator streams them."""
    for event in events:
        dump_messages(event, history.event_messages)
        for call in event.get_function_calls():
            history.dump_json(call.args or {})  # type: ignore[attr-defined]


def main() -> int:
    args = rounds_parser(__doc__).parse_args()
    story = asyncio.run(recorded_story())
    events = [adk_json.parse_event(text, dumped=True) for text in story.appends]
    print(f"a flagship story: {len(events)} appends")

    def old() -> None:
        with before():
            story_work(events)

    def same() -> None:
        with before():
            was = [dump_messages(event, history.event_messages) for event in events]
        assert was == [dump_messages(event, history.event_messages) for event in events]

    medians = alternating(
        args.rounds, timing({"before": old, "now": lambda: story_work(events)}, REPEATS), same
    )
    print_against(
        ("until session 49", medians["before"]), ("now", medians["now"]), args.rounds, digits=1
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
