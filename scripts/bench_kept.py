"""What a run's session costs to cross to its worker, whole (until session 46) and without
the events the worker kept of the thread's last run there (``gateway/adk/workers/kept.py``),
on each side: the main process's (``session_json``) and the worker's (its parse, and the
kept events put first).

Runs the flagship story once on a gateway with two worker processes
(``scripts/bench_crossing.py``'s recording) for the very sessions its runs were handed,
and how many events of each the worker kept; then does their crossing each way in turn,
``--rounds`` times, alternating, and prints the medians and their ratio. Timing in one
process, the same sessions and alternating rounds: the ratio holds on a shared machine,
where the absolute figures move with the neighbours. Each round first checks that both
ways give the worker the same session.

The flagship's thread is new, so its Starts are small either way; a thread a person has
talked in for a while is not. ``--earlier N`` puts N earlier stories' events (copies of
the story's last session's) at the head of each session, kept by the worker from the
thread's last run: the whole Start grows with the thread, the kept one does not.

    .venv/bin/python -m scripts.bench_kept                # 15 rounds
    .venv/bin/python -m scripts.bench_kept --rounds 5 --earlier 20
"""

from __future__ import annotations

import asyncio
import copy
import tracemalloc
from collections.abc import Callable

from google.adk.events import Event
from google.adk.sessions import Session

from gateway.store.adk_json import parse_session
from gateway.store.session_json import session_json
from scripts._bench import alternating, rounds_parser, timing
from scripts.bench_crossing import Story, recorded_story

# A story's crossing done this many times a round: enough that a timer's tick is nothing.
REPEATS = 200


def sent(sessions: list[tuple[Session, int]]) -> list[bytes]:
    """The main process's side: each session as its Start carries it."""
    return [session_json(session, after) for session, after in sessions]


def taken(texts: list[bytes], kept: list[list[Event] | None]) -> list[Session]:
    """The worker's side: each parsed, the events it kept put first."""
    sessions = []
    for text, events in zip(texts, kept, strict=True):
        session = parse_session(text)
        if events is not None:
            session.events = [*events, *session.events]
        sessions.append(session)
    return sessions


def held_kib(story: Story) -> float:
    """What the events of the story's last session take in memory, parsed (a worker keeps
    them as ADK made them: about as much)."""
    text = session_json(story.sessions[-1])
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    events = parse_session(text).events
    size = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert events
    return size / 1024


def main() -> int:
    parser = rounds_parser(__doc__)
    parser.add_argument(
        "--earlier", type=int, default=0, help="earlier stories in the thread, kept (0)"
    )
    args = parser.parse_args()
    story = asyncio.run(recorded_story())
    kib = held_kib(story)  # the reply's session after its run, as its worker keeps it
    earlier = [copy.copy(event) for _ in range(args.earlier) for event in story.sessions[-1].events]
    for session, handed in zip(story.sessions, story.handed, strict=True):
        # As it was handed: the same event objects (their rows' texts go with them).
        session.events = [*earlier, *session.events[:handed]]
    whole = [(session, 0) for session in story.sessions]
    # The first run's worker kept the earlier stories (the thread's last run was there).
    kept = [(s, len(earlier) + n) for s, n in zip(story.sessions, story.kept, strict=True)]
    # What the worker holds of each: the events of its copy (parsed once, as it was).
    held = [
        parse_session(session_json(session)).events[:after] if after else None
        for session, after in kept
    ]
    nothing: list[list[Event] | None] = [None] * len(whole)
    print(
        f"the flagship's {len(kept)} runs after {args.earlier} earlier stories: sessions of"
        f" {[len(s.events) for s in story.sessions]}"
        f" events, {[n for _, n in kept]} of them kept by their worker;"
        f" {sum(map(len, sent(whole)))} bytes whole, {sum(map(len, sent(kept)))} without them"
    )
    whole_texts, kept_texts = sent(whole), sent(kept)

    def same() -> None:
        assert taken(sent(whole), nothing) == taken(sent(kept), held)

    ways: dict[str, Callable[[], object]] = {
        "wm": lambda: sent(whole),
        "ww": lambda: taken(whole_texts, nothing),
        "km": lambda: sent(kept),
        "kw": lambda: taken(kept_texts, held),
    }
    medians = alternating(args.rounds, timing(ways, REPEATS), same)
    wm, ww, km, kw = (medians[name] * 1e6 for name in ways)
    print(f"a worker's memory a kept session, the reply's after its run: {kib:.1f} KiB")
    print(f"medians of {args.rounds} rounds, µs a story:   main process   worker")
    print(f"  whole (until session 46)               {wm:8.1f} {ww:10.1f}")
    print(f"  without the events the worker kept     {km:8.1f} {kw:10.1f}")
    print(f"  ratio                                  {km / wm:7.2f}x {kw / ww:9.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
