"""What ADK's JSON costs the main process a flagship story with workers, done the way before
session 42 and the way now, over the very texts and sessions a story makes it handle.

Before, the main process parsed each event a worker sent after searching its text for
ADK's shortcut keys, dumped each append again for its row, and dumped the whole session
it handed each run. Now it parses a worker's text without the search (ADK's dump cannot
hold one), stores an append's text as it came, and builds the session from the texts its
events were read from (docs/multicore.md, "Nothing dumped twice").

Runs the flagship story (``tests/support/flagship.py``) once on a gateway with two worker
processes and its store on a SQLite file, recording every text a worker sent (its appends
and streamed chunks) and every session a run was handed. Then it does a story's work
each way in turn, ``--rounds`` times, alternating, and prints the medians and their ratio.
Timing in one process, the same texts and alternating rounds: the ratio holds on a shared
machine, where the absolute figures move with the neighbours. Each round first checks
that both ways made the same events, rows and sessions.

    .venv/bin/python -m scripts.bench_crossing                # 15 rounds
    .venv/bin/python -m scripts.bench_crossing --rounds 5
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from google.adk.events import Event
from google.adk.sessions import Session

from gateway.adk.workers import chunks, pool, start
from gateway.adk.workers.messages import Streamed
from gateway.store import adk_json, session_json
from scripts._bench import alternating, print_against, rounds_parser, timing
from tests.support.flagship import flagship_navigated_then_honest_reply
from tests.support.servers import running_gateway

# A story's work done this many times a round: enough that a timer's tick is nothing.
REPEATS = 50


class Story:
    """What the main process handled of one flagship story with workers."""

    def __init__(self) -> None:
        self.appends: list[bytes] = []
        self.chunks: list[bytes] = []
        self.sessions: list[Session] = []
        # How many of each session's events its worker kept (``gateway.adk.workers.kept``),
        # and how many it had when it was handed (the hub's session grows with the run).
        self.kept: list[int] = []
        self.handed: list[int] = []


async def recorded_story() -> Story:
    story = Story()
    parse, hand, make = adk_json.parse_event, session_json.session_json, chunks.Whole.rebuilt

    def parsed(data: bytes | str, *, dumped: bool = False) -> Event:
        event = parse(data, dumped=dumped)
        assert isinstance(data, bytes)
        (story.chunks if event.partial else story.appends).append(data)
        return event

    def made(whole: chunks.Whole, chunk: Streamed) -> Event:
        # A chunk that crossed as its text (session 45): recorded as its JSON, as it was.
        event = make(whole, chunk)
        story.chunks.append(dump(event).encode())
        return event

    def handed(session: Session, after: int = 0) -> bytes:
        story.sessions.append(session)
        story.kept.append(after)
        story.handed.append(len(session.events))
        return hand(session, after)

    pool.parse_event, start.session_json = parsed, handed  # type: ignore[attr-defined]
    chunks.Whole.rebuilt = made  # type: ignore[method-assign,assignment]
    try:
        with tempfile.TemporaryDirectory(prefix="bench-crossing-") as tmp:
            async with running_gateway(workers=2, db=str(Path(tmp) / "threads.db")) as gateway:
                await flagship_navigated_then_honest_reply(gateway)
    finally:
        pool.parse_event, start.session_json = parse, hand  # type: ignore[attr-defined]
        chunks.Whole.rebuilt = make  # type: ignore[method-assign]
    return story


def dump(model: Event | Session) -> str:
    return model.model_dump_json(exclude_none=True, by_alias=True)


def before(story: Story) -> None:
    for text in story.appends:
        dump(adk_json.parse_event(text))  # parsed, then dumped again for its row
    for text in story.chunks:
        adk_json.parse_event(text)
    for session in story.sessions:
        dump(session).encode()


def now(story: Story) -> None:
    """As of session 42; since session 45 a reply's chunks after its first cross as their
    text and are not parsed at all (``scripts/bench_chunks.py``)."""
    for text in story.appends:
        adk_json.parse_event(text, dumped=True)
        text.decode()  # the row
    for text in story.chunks:
        adk_json.parse_event(text, dumped=True)
    for session in story.sessions:
        session_json.session_json(session)


def same(story: Story) -> None:
    """Both ways make the same events, rows and sessions."""
    for text in [*story.appends, *story.chunks]:
        event = adk_json.parse_event(text, dumped=True)
        assert event == adk_json.parse_event(text)
        assert dump(event) == text.decode()
    for session in story.sessions:
        ours = adk_json.parse_session(session_json.session_json(session))
        assert ours == adk_json.parse_session(dump(session))


def main() -> int:
    args = rounds_parser(__doc__).parse_args()
    story = asyncio.run(recorded_story())
    events = sum(len(session.events) for session in story.sessions)
    print(
        f"a flagship story with two workers: {len(story.appends)} appends,"
        f" {len(story.chunks)} streamed chunks, {len(story.sessions)} sessions handed"
        f" ({events} events in them)"
    )
    ways = {"before": lambda: before(story), "now": lambda: now(story)}
    medians = alternating(args.rounds, timing(ways, REPEATS), lambda: same(story))
    print_against(("before session 42", medians["before"]), ("now", medians["now"]), args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
