"""What ``scripts/load.py`` reports: a round's figures (``figures``, ``Result``), the medians
of several, each round's report and the side-by-side of the setups run.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import re
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path

from scripts._bench import percentile
from scripts._load_machine import Monitor
from scripts._load_servers import GATEWAY, Setup
from scripts._load_stories import Load

# Server log records worth a line in the report, and how much of them it shows.
LOUD = ("WARNING", "ERROR", "CRITICAL")
LOG_LINES_SHOWN = 3
# The statements shown by text on PostgreSQL, the most run first, and their length shown.
STATEMENTS_SHOWN = 16
STATEMENT_CHARS = 110
LOG_LINE_CHARS = 200
# The line a gateway's worker pool logs as it stops (``gateway.adk.workers.pool``): its
# Starts sent without the events their worker kept, and how many of them it answered
# ``Unkept`` (sent again whole).
KEPT = re.compile(
    r"kept sessions: Starts sent without the events their worker kept: (\d+); of them"
    r" answered Unkept and sent again whole: (\d+)"
)


def figures(load: Load, monitor: Monitor, load_average: float) -> dict[str, float]:
    """A round's numbers; several rounds report the median of each."""
    done = [s for s in load.stories if s.ended is not None and s.error is None]
    last_end = max((s.ended for s in done if s.ended), default=load.began)
    start, end = load.began + load.args.ramp, min(load.deadline, last_end)
    if end - start < 1.0:  # a short run: the whole of it
        start, end = load.began, last_end
    window = max(end - start, 1e-9)
    finished = [s for s in done if s.ended is not None and start <= s.ended <= end]
    timed = [s for s in done if not s.cut and start <= s.began] or [s for s in done if not s.cut]
    first, last = monitor.nearest(start), monitor.nearest(end)
    seconds = max(last.at - first.at, 1e-9)
    server = last.server_cpu - first.server_cpu
    main = last.main_cpu - first.main_cpu
    own = last.own_cpu - first.own_cpu
    loaded_samples = [s for s in monitor.samples if s.at <= (monitor.load_ended or s.at)]
    loaded = [s.rss_mib for s in loaded_samples]
    values: dict[str, float] = {
        "stories": len(done),
        "failed": len(load.stories) - len(done),
        "rate": len(finished) / window,
        "paced": sum(s.paced for s in done) / max(len(done), 1),
        "waiting_peak": load.waiting_peak,
        "rss_start": monitor.samples[0].rss_mib,
        "rss_peak": max(loaded),
        "rss_end": monitor.samples[-1].rss_mib,
        "connected_peak": load.connected_peak,
        "rss_user_kib": 1024
        * max(s.grown_mib for s in loaded_samples)
        / max(load.connected_peak, 1),
        "server_cores": server / seconds,
        "server_ms": 1000 * server / max(len(finished), 1),
        "main_cores": main / seconds,
        "main_ms": 1000 * main / max(len(finished), 1),
        "statements": (
            monitor.statements.total() / max(len(done), 1)
            if monitor.statements is not None
            else math.nan
        ),
        "own_cores": own / seconds,
        "other_cores": max(0.0, (last.machine_cpu - first.machine_cpu - server - own) / seconds),
        "load_average": load_average,
        "checked": load.checked,
        "judged": load.judged,
        "consistent": load.checked - load.bad_threads,
    }
    samples = {
        "started": [t for s in timed for t in s.run_started],
        "paused": [s.paused for s in timed if s.paused is not None],
        "text": [s.first_text for s in timed if s.first_text is not None],
        "replied": [s.replied for s in timed if s.replied is not None],
        "story": [s.ended - s.began for s in timed if s.ended is not None],
        "recovery": [s.recovery for s in done if s.recovery is not None],
    }
    for name, seconds_each in samples.items():
        for q in (50, 99):
            found = 1000 * percentile(seconds_each, q / 100) if seconds_each else math.nan
            values[f"{name}{q}"] = found
    values["moments"] = load.story_moments
    values["cut"] = sum(s.cut for s in load.stories)
    values["recovered"] = sum(s.cut for s in done)
    return values


@dataclasses.dataclass
class Result:
    """A round's figures and counts; several rounds add their counts up."""

    values: dict[str, float]
    errors: collections.Counter[str]
    problems: collections.Counter[str]
    recoveries: collections.Counter[str]
    # Records the server logged at WARNING or above, by level, and the first few lines.
    logged: collections.Counter[str]
    log_lines: list[str]
    # The first error of each kind (the first few kinds) with what it said.
    error_lines: list[str]
    # The database's statements by text (PostgreSQL) over the load, and the stories done
    # meanwhile, so rounds add up into a breakdown a story.
    statements: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    stories: float = 0.0
    # Where the round's first texts waited (``--timeline``), as lines of the report.
    timeline: list[str] = dataclasses.field(default_factory=list)
    # With workers: the Starts sent without the events their worker kept, and of them
    # those answered ``Unkept`` (``kept_sessions``); None without workers.
    kept: tuple[int, int] | None = None

    @classmethod
    def of(cls, load: Load, monitor: Monitor, load_average: float) -> Result:
        logged: collections.Counter[str] = collections.Counter()
        lines: list[str] = []
        during: list[str] = []
        for gateway, offset in zip(load.gateways, load.log_offsets, strict=True):
            with gateway.log.open("rb") as file:
                file.seek(offset)
                during += file.read().decode(errors="replace").splitlines()
        for line in during:
            level = next((word for word in line.split()[:4] if word in LOUD), None)
            if level:
                logged[level] += 1
                if len(lines) < LOG_LINES_SHOWN:
                    lines.append(line[:LOG_LINE_CHARS])
        failed = [s for s in load.stories if s.error is not None]
        examples = {kind: line[:LOG_LINE_CHARS] for kind, line in load.arrival_lines.items()}
        for s in failed:
            assert s.error is not None
            examples.setdefault(
                s.error,
                f"{f'{s.user} {s.thread}: {s.error}: {s.detail}'[:LOG_LINE_CHARS]}\n"
                f"      its last moments, seconds since it began: {s.trail}",
            )
        return cls(
            figures(load, monitor, load_average),
            collections.Counter(s.error for s in failed if s.error is not None)
            + collections.Counter(
                {f"{kind} on arrival": n for kind, n in load.arrivals_failed.items()}
            ),
            load.problems,
            load.recoveries,
            logged,
            lines,
            list(examples.values())[:LOG_LINES_SHOWN],
            monitor.statements or collections.Counter(),
            len(load.stories) - len(failed),
        )

    @classmethod
    def median(cls, results: Sequence[Result]) -> Result:
        values = {
            key: statistics.median(r.values[key] for r in results) for key in results[0].values
        }
        counted = collections.Counter
        total = cls(values, counted(), counted(), counted(), counted(), [], [])
        for result in results:
            total.errors += result.errors
            total.problems += result.problems
            total.recoveries += result.recoveries
            total.logged += result.logged
            total.log_lines += result.log_lines[: LOG_LINES_SHOWN - len(total.log_lines)]
            total.error_lines += result.error_lines[: LOG_LINES_SHOWN - len(total.error_lines)]
            total.statements += result.statements
            total.stories += result.stories
            if result.kept is not None:
                was = total.kept or (0, 0)
                total.kept = (was[0] + result.kept[0], was[1] + result.kept[1])
        return total

    @property
    def failed(self) -> bool:
        return bool(self.errors or self.problems)


def kept_sessions(logs: Iterable[Path]) -> tuple[int, int] | None:
    """What the gateways' worker pools said of kept sessions as they stopped (``KEPT``),
    added up: Starts sent without the kept events, and those answered ``Unkept``; None
    where no pool said it (no workers)."""
    said = [
        (int(found[1]), int(found[2]))
        for log in logs
        for found in KEPT.finditer(log.read_text(errors="replace"))
    ]
    if not said:
        return None
    return sum(kept for kept, _ in said), sum(unkept for _, unkept in said)


def ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1f}"


def counted(counts: collections.Counter[str], nothing: str = "none") -> str:
    return ", ".join(f"{kind} {count}" for kind, count in counts.most_common()) or nothing


def print_statements(statements: collections.Counter[str], stories: float) -> None:
    """The statements that cost a story most, by text (shortened), with their calls a story:
    where the round trips go, and which one a change took away."""
    for text, calls in statements.most_common(STATEMENTS_SHOWN):
        shown = " ".join(text.split())
        if len(shown) > STATEMENT_CHARS:
            shown = shown[: STATEMENT_CHARS - 3] + "..."
        print(f"    {calls / max(stories, 1):6.2f}  {shown}")


def print_result(title: str, result: Result, kill: bool) -> None:
    v = result.values
    print(f"\n{title}")
    print(
        f"  stories: {v['stories']:.0f} done, {v['failed']:.0f} failed;"
        f" {v['rate']:.1f} stories/s after the ramp"
        f" ({100 * v['paced']:.0f}% waited for their user's frame budget first)"
    )
    print(f"  {'latency ms':<40} {'p50':>8} {'p99':>8}")
    rows = [
        ("frame -> RUN_STARTED (both runs)", "started"),
        ("message -> run paused on the browser", "paused"),
        ("browser's answer -> first text", "text"),
        ("browser's answer -> reply finished", "replied"),
        ("story: message -> reply finished", "story"),
    ]
    if kill:
        rows.append(("cut -> story done (cut stories)", "recovery"))
    for label, key in rows:
        print(f"    {label:<38} {ms(v[key + '50']):>8} {ms(v[key + '99']):>8}")
    if kill:
        print(
            f"  cut after a random one of the story's {v['moments']:.0f} moments (frames sent,"
            f" events received): {v['cut']:.0f} stories, {v['recovered']:.0f} finished after"
            " reconnecting and reattaching"
        )
        print(f"    the reattaches: {counted(result.recoveries, 'none needed')}")
    print(f"  errors: {counted(result.errors)}")
    for line in result.error_lines:
        print(f"    {line}")
    waited = max(0, v["waiting_peak"] - GATEWAY.max_runs)
    print(
        f"  runs clients waited on at once: peak {v['waiting_peak']:.0f}; the gateway runs"
        f" {GATEWAY.max_runs} at once, so up to {waited:.0f} waited for a slot"
        " (inside their RUN_STARTED time)"
    )
    print(
        f"  server RSS MiB: start {v['rss_start']:.0f}, peak {v['rss_peak']:.0f},"
        f" end {v['rss_end']:.0f}; {v['rss_user_kib']:.1f} KiB a connected user"
        f" (growth, over the {v['connected_peak']:.0f} connected at most)"
    )
    print(
        f"  CPU cores: server {v['server_cores']:.2f} ({v['server_ms']:.1f} ms a story;"
        f" its main process {v['main_cores']:.2f}, {v['main_ms']:.1f} ms),"
        f" this script {v['own_cores']:.2f}, the rest of the machine {v['other_cores']:.2f}"
        f" (load average {v['load_average']:.2f} before)"
    )
    if not math.isnan(v["statements"]):
        print(f"  database statements: {v['statements']:.1f} a story (pg_stat_statements)")
        print_statements(result.statements, result.stories)
    if result.kept is not None:
        kept, unkept = result.kept
        print(
            f"  kept sessions: Starts that went without the events their worker kept:"
            f" {kept - unkept}; answered Unkept and sent again whole: {unkept} more"
        )
    print(
        f"  threads read back: {v['checked']:.0f} ({v['judged']:.0f} of stories done),"
        f" consistent {v['consistent']:.0f}; problems: {counted(result.problems)}"
    )
    print(f"  server log: {counted(result.logged, 'no warnings')}")
    for line in result.log_lines:
        print(f"    {line}")
    for line in result.timeline:
        print(line)


def print_comparison(setups: Sequence[Setup], results: dict[Setup, list[Result]]) -> None:
    """Each setup's median stories/s and server CPU a story against the first setup's, and
    the figures issue 32's load at scale asks of each: RUN_STARTED's and the first text's
    p99, errors, and what a connected user costs the server."""
    base = setups[0]
    rate = statistics.median(r.values["rate"] for r in results[base])
    cpu = statistics.median(r.values["server_ms"] for r in results[base])
    print(f"\nagainst {base}, medians of {len(results[base])} rounds each, in this run:")
    for setup in setups:
        own_rate = statistics.median(r.values["rate"] for r in results[setup])
        own_cpu = statistics.median(r.values["server_ms"] for r in results[setup])
        statements = statistics.median(r.values["statements"] for r in results[setup])
        print(
            f"  {setup!s:12} {own_rate:6.1f} stories/s ({own_rate / rate:4.2f}x),"
            f" server CPU {own_cpu:5.1f} ms a story ({own_cpu / cpu:4.2f}x)"
            + (f", {statements:.1f} statements a story" if not math.isnan(statements) else "")
        )
        median = Result.median(results[setup])
        print(
            f"  {'':12} RUN_STARTED p99 {ms(median.values['started99'])} ms, first text p99"
            f" {ms(median.values['text99'])} ms, {sum(median.errors.values())} errors,"
            f" {median.values['rss_user_kib']:.1f} KiB a connected user"
        )
