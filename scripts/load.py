"""Many users running the flagship story at a real model's pace, against a real gateway.

Each user is a /ws connection of its own user id (``load-0001``, ...), started over
``--ramp`` seconds, that runs the flagship story again and again, each story on a new thread:
"업무 요청 목록 화면 열어줘" -> find_screen -> navigateToScreen MNU-3120, answered
``{"status": "navigated"}`` as the browser would -> "업무 요청 목록 화면으로 이동했습니다.".
The gateway is ``python -m gateway`` on 127.0.0.1 with the scripted model at 30 ms a chunk
and its store on a SQLite file; load users are added to the demo's screen catalog for it
(``scripts/_load_users.py`` says why and how).

Every event is checked as it arrives (AG-UI ordering, ``tests/support/agui.py``), and a story
counts as failed on any RUN_ERROR (rate limit and run cap included), a timeout, an invalid
stream, a closed connection or a reply other than the honest one. Each user sends at most
``--frames-per-second`` frames (under the gateway's 5 a second per user); a story waits
for both its frames before it starts, so the pause falls between stories, never inside one.

``--think`` makes the users a population rather than a queue: after each story its user
reads the reply and thinks for a while before the next, drawn from an exponential
distribution of that mean (``--seed`` draws it too), with its socket open all the while as a
browser tab's is. A user opens its socket at its moment of the ramp and thinks before its
first story too, so stories arrive spread out, not one a user at the ramp's pace; a socket
that fails to open then counts as an error of its own, outside any story. Without
``--think`` (0, the default) users tell their stories back to back, and users past the
server's capacity only lengthen the queue. With it, N users offer about N / (think + story)
stories a second: 1,000 users thinking 60 s on average offer ~16.

``--kill`` cuts a share of the stories at a random moment (after one of the story's sends
or received events): the socket is aborted, the user reconnects, reattaches with
``{"type": "reattach", "threadId"}``, answers the call the snapshot's outcome lists as
pending (once), and finishes the story. A message it sent whose RUN_STARTED it never saw
it sends again first, with the same runId, as the reference client does: the gateway runs
it if the message went down with the socket, and else tells it so (RUN_DEDUPED) and shows
the thread as a reattach would (the report counts both).
At the end every thread is read back by reattach and must be consistent: no open call,
one navigateToScreen call answered exactly once, the honest reply last. ``--seed`` draws
the cuts (each round's title prints it), and a failed story is reported with its last
moments (what it sent and was sent and when, the cut, the reconnect), so a timeout says
what the story waited on.

``--db`` picks the store: a SQLite ``file`` (the default), ``memory``, ``postgres`` (a
throwaway server on this machine, ``tests/support/postgres.py``, a fresh database a round)
or ``postgres-xN``, N gateway processes on one database with the users spread evenly over
them. ``--workers N`` runs each of them twice a round, as one process and with
``GATEWAY_WORKERS=N`` (its invocations in N worker processes, docs/multicore.md), side by
side; ``--workers auto``, with the default's workers on demand, and ``--workers 2 auto``
both; ``--alone`` leaves the one process out (a round is then half as long: the way to
A/B the first text's p99 with workers). Several stores are run in turn each round, and the
report ends with each one's median stories/s and server CPU a story (all its processes'
CPU, from /proc) against the first's: CPU a story is the figure to read on a shared
machine, where stories/s moves with the neighbours. On PostgreSQL it also counts the
statements a story costs the database (its throwaway server loads
``pg_stat_statements``), the load's alone, not the check's after it.

Reported: stories a second and latency after the ramp, of the stories not cut (RUN_STARTED
after each frame, the first run's end, paused on the browser, the reply's first text and
end after the browser's answer, the whole story), errors by kind, the most runs clients
waited on at once (the gateway runs ``GATEWAY_MAX_RUNS``, 200, at once; a run past that
waits for a slot, inside its RUN_STARTED time), the server's RSS (VmRSS in
/proc/<pid>/status) at start, peak and end, and the most the processes grew since each was
first seen (a worker `auto` starts at the first run counts from then) over the most users
connected at once (what a connected user costs the server, its runs and threads included),
CPU (the server's, its main process's alone, this script's and the rest of the machine's,
which is shared, with the machine's cores and load average first), what the server
logged at WARNING or above during the load, and with workers, how many runs' Starts went
without the events their worker kept of the thread and how many more were answered
``Unkept`` (sent again whole: the worker pool's last log line). ``--timeline`` has the
gateway mark each run's steps (``GATEWAY_TIMELINE``, ``gateway/timeline.py``) and adds
where the replies' first texts waited, step by step, the slowest 1% apart
(``scripts/_timeline.py``), down to what this script's own thread did between a first
text's write and its read (``scripts/_load_client.py``). The first text is timed as the
user's code reads it; so that this client, 200 users on one loop, reads it as one on a
machine of its own would, it collects no garbage while its users run (a collection of its
whole heap stopped every user's reads for 100-190 ms once a round).
Bounded: ``--duration`` or ``--stories`` per user, a timeout per story and ``--timeout``
overall; the server stops with the script, which exits 1 on any error or inconsistent thread.

This module is the command and a round's course; the rest is in modules of one job each:
``_load_stories`` (the users, their stories and the check of every thread),
``_load_servers`` (the gateways a round starts), ``_load_machine`` (what is measured of
their processes and of the machine) and ``_load_report`` (a round's figures, the report).

It needs the ``test`` extra (``tests/support/agui.py`` imports the official AG-UI models).

    .venv/bin/python -m scripts.load                         # 500 users for 60 s
    .venv/bin/python -m scripts.load --users 50 --rounds 3   # three fresh servers, medians
    .venv/bin/python -m scripts.load --kill                  # cut half the stories midway
    .venv/bin/python -m scripts.load --users 5 --stories 3   # a few stories, then stop
    .venv/bin/python -m scripts.load --db file postgres postgres-x2 --rounds 3  # side by side
    .venv/bin/python -m scripts.load --users 200 --workers 2 --rounds 3  # one process or three
    .venv/bin/python -m scripts.load --users 40 --workers 2 auto        # and workers on demand
    .venv/bin/python -m scripts.load --users 1000 --ramp 20 --think 60 --rounds 3  # paced users
    .venv/bin/python -m scripts.load --users 200 --workers auto --timeline  # first text's wait
    .venv/bin/python -m scripts.load --users 200 --workers auto --alone  # auto, no one process
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import random
import sys
import tempfile
from pathlib import Path

import uvloop

from scripts import _timeline
from scripts._load_machine import Monitor, ensure_open_files, machine
from scripts._load_report import Result, kept_sessions, print_comparison, print_result
from scripts._load_servers import GATEWAY, Setup, served, workers_given
from scripts._load_stories import Load
from tests.support.postgres import Postgres, running_postgres


def one_round(
    args: argparse.Namespace, setup: Setup, postgres: Postgres | None, seed: int
) -> Result:
    load_average = float(Path("/proc/loadavg").read_text().split()[0])
    database = statements = None
    if setup.store == "postgres":
        assert postgres is not None
        database = postgres.fresh_database()
        statements = functools.partial(postgres.statements, database)
    with contextlib.ExitStack() as stack:
        marks = None
        if args.timeline:
            marks = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="timeline-")))
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="load-logs-")))
        with served(args, setup, database, marks, logs) as gateways:
            load = Load(args, gateways, args.kill, seed)
            monitor = Monitor([gateway.process.pid for gateway in gateways], statements)
            uvloop.run(load.run(monitor))
            result = Result.of(load, monitor, load_average)
        # Read once the gateways stopped: each wrote its last marks and lines.
        if marks is not None:
            result.timeline = _timeline.breakdown(marks, replies(load), load.client)
        result.kept = kept_sessions(gateway.log for gateway in gateways)
        return result


def replies(load: Load) -> list[_timeline.Reply]:
    """The replies whose first text the round timed (as ``figures`` picks them)."""
    start = load.began + load.args.ramp
    return [
        _timeline.Reply(
            story.reply[0], story.reply[1], story.reply[1] + story.first_text, story.reply[2]
        )
        for story in load.stories
        if story.error is None
        and not story.cut
        and story.began >= start
        and story.reply is not None
        and story.first_text is not None
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=500, help="users, one socket each (500)")
    parser.add_argument("--ramp", type=float, default=10.0, help="seconds to start them (10)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of stories (60)")
    parser.add_argument(
        "--stories", type=int, default=sys.maxsize, help="stories per user at most (no cap)"
    )
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="mean seconds a user pauses between stories, exponentially drawn (0: none)",
    )
    parser.add_argument("--kill", action="store_true", help="cut stories midway, then recover")
    parser.add_argument(
        "--kill-share", type=float, default=0.5, help="share of stories cut with --kill (0.5)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="fresh servers, then medians (1)")
    parser.add_argument(
        "--seed",
        type=int,
        default=random.randrange(1_000_000),
        help="picks the stories --kill cuts and when; round N uses seed + N - 1 (a random one,"
        " printed)",
    )
    parser.add_argument("--pace-ms", type=float, default=30.0, help="model pace a chunk (30)")
    parser.add_argument(
        "--frames-per-second",
        type=float,
        default=0.8 * GATEWAY.user_rate,
        help=f"frames one user sends a second at most; the gateway allows {GATEWAY.user_rate:g}"
        f" ({0.8 * GATEWAY.user_rate:g})",
    )
    parser.add_argument(
        "--user-rate",
        type=float,
        default=GATEWAY.user_rate,
        help="the frames a second the gateway allows a user after a burst of"
        f" {GATEWAY.user_burst} (GATEWAY_USER_RATE: {GATEWAY.user_rate:g})",
    )
    parser.add_argument(
        "--db",
        type=Setup.parse,
        nargs="+",
        default=[Setup("file")],
        help="stores to compare, each round in turn: file, memory, postgres (a throwaway"
        " server on this machine), postgres-xN (N processes on one database) (file)",
    )
    parser.add_argument(
        "--workers",
        type=workers_given,
        nargs="*",
        default=[],
        help="also run each store with GATEWAY_WORKERS=N (or auto: on demand), each side by"
        " side with one process (none)",
    )
    parser.add_argument(
        "--alone",
        action="store_true",
        help="with --workers, run only the setups with workers, not one process beside each"
        " (where one process's figures are not wanted: the first text's p99 with auto)",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="the gateway marks each run's steps (GATEWAY_TIMELINE) and the report shows where"
        " the first texts waited, the slowest 1%% apart",
    )
    parser.add_argument("--story-timeout", type=float, default=60.0, help="seconds (60)")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds for a round, check included (600)"
    )
    args = parser.parse_args()
    if args.alone and not args.workers:
        parser.error("--alone runs the setups with workers alone: give --workers")
    args.db = setups(args.db, args.workers, alone=args.alone)
    ensure_open_files(args.users)
    mode = "kill mode (stories cut midway)" if args.kill else "normal mode"
    thinking = f"think {args.think:g} s on average" if args.think > 0 else "back to back"
    print(machine())
    results: dict[Setup, list[Result]] = {setup: [] for setup in args.db}
    with contextlib.ExitStack() as stack:
        postgres = None
        if any(setup.store == "postgres" for setup in args.db):
            postgres = stack.enter_context(running_postgres(count_statements=True))
        for number in range(1, args.rounds + 1):
            seed = args.seed + number - 1
            for setup in args.db:
                results[setup].append(one_round(args, setup, postgres, seed))
                title = (
                    f"round {number}: {args.users} users (ramp {args.ramp:g} s), the flagship"
                    f" story, model pace {args.pace_ms:g} ms, {thinking}, store {setup}, {mode},"
                    f" seed {seed}"
                )
                print_result(title, results[setup][-1], args.kill)
    for setup, rounds in results.items():
        if len(rounds) > 1:
            title = f"{setup}: median of {len(rounds)} rounds (counts: every round's added up)"
            print_result(title, Result.median(rounds), args.kill)
    if len(results) > 1:
        print_comparison(args.db, results)
    return 1 if any(result.failed for rounds in results.values() for result in rounds) else 0


def setups(stores: list[Setup], workers: list[int], *, alone: bool = False) -> list[Setup]:
    """The setups a round runs, in turn: each store as one process, then with each count of
    ``workers``; ``alone``, only with workers."""
    return [
        twin
        for setup in stores
        for twin in ([] if alone else [setup])
        + [dataclasses.replace(setup, workers=n) for n in workers]
    ]


if __name__ == "__main__":
    sys.exit(main())
