"""find_screen latency over a 10,000-screen catalog, and quality on the labelled queries.

The catalog is the shipped demo tree grown by
``gateway.examples.navigator.screens.generate.scaled`` (the
same vocabulary, qualified per business line: "해외 발주 목록"), with the shipped users;
``demo`` may open about nine in ten of its screens. The 200 query phrasings are drawn
from it with a fixed seed, in the ways people type: names and aliases as written,
without spaces, with a particle, wrapped in a request ("... 화면 열어줘"), one word of a
name, a two-letter word, and record ids ("PO-7781 어디서 봐"). Each round times every
phrasing ``--passes`` times through ``search_screens`` (what the find_screen tool runs)
and reports p50 and p99; the last line gives the medians of the rounds.

Quality is measured on ``tests/examples/navigator/queries/find_screen.jsonl`` against the
shipped catalog (what the tests assert) and against the 10,000-screen one (look-alikes abound):
recall@5 and top-1 on the queries for real screens, and how many queries for screens
that do not exist ("회사 식당 메뉴") found one anyway (false answers: the target is 0).

    .venv/bin/python -m scripts.bench_screens             # 3 rounds
    .venv/bin/python -m scripts.bench_screens --screens 20000 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from gateway.examples.navigator.screens import catalog, generate, quality
from gateway.examples.navigator.screens.catalog import ScreenCatalog
from gateway.examples.navigator.screens.tools import search_screens

ROOT = Path(__file__).resolve().parents[1]
LABELLED = ROOT / "tests" / "examples" / "navigator" / "queries" / "find_screen.jsonl"
USER = "demo"


def phrasings(screens: ScreenCatalog, count: int, seed: int = 5) -> list[str]:
    """``count`` queries a person might type for screens of the catalog."""
    rng = random.Random(seed)
    pool = sorted(screens.screens.values(), key=lambda screen: screen.screen_id)
    record_ids = sorted(
        {word for s in pool for word in s.description.split() if "-" in word and word[-1].isdigit()}
    )
    queries: list[str] = []
    while len(queries) < count:
        screen = rng.choice(pool)
        name = rng.choice((screen.name, *screen.aliases))
        queries.append(_phrase(rng.randrange(8), name, rng.choice(record_ids)))
    return queries


def _phrase(style: int, name: str, record_id: str) -> str:
    match style:
        case 0:
            return name
        case 1:
            return name.replace(" ", "")
        case 2:
            return f"{name} 화면 열어줘"
        case 3:
            return f"{name}을 보고 싶어"
        case 4:
            return f"{name.split()[-1]} 어디서 봐?"
        case 5:
            return name.split()[0]
        case 6:
            return name.split()[0][:2]
        case _:
            return f"{record_id} 같은 것들 보는 데"


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def one_round(screens: ScreenCatalog, queries: list[str], passes: int) -> tuple[float, float]:
    samples: list[float] = []
    for _ in range(passes):
        for query in queries:
            started = time.perf_counter_ns()
            search_screens(screens, query, USER)
            samples.append((time.perf_counter_ns() - started) / 1e6)
    return percentile(samples, 0.50), percentile(samples, 0.99)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--screens", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--passes", type=int, default=5, help="times each query runs per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()

    users = json.loads((catalog.DATA_DIR / "users.json").read_text(encoding="utf-8"))
    started = time.perf_counter()
    big = catalog.from_records(generate.scaled(args.screens), users)
    build_ms = (time.perf_counter() - started) * 1000
    queries = phrasings(big, args.queries)
    for query in queries[:50]:  # warm the caches and the allocator before timing
        search_screens(big, query, USER)

    rounds = []
    for number in range(1, args.rounds + 1):
        p50, p99 = one_round(big, queries, args.passes)
        rounds.append((p50, p99))
        if not args.json:
            print(f"round {number}: p50 {p50:.3f} ms  p99 {p99:.3f} ms")

    labelled = quality.read_labelled(LABELLED)
    shipped = quality.recall_at(catalog.load(), labelled)
    scaled = quality.recall_at(big, labelled)
    top_1 = [quality.recall_at(screens, labelled, k=1).found for screens in (catalog.load(), big)]
    false_answers = [quality.false_answers(screens, labelled) for screens in (catalog.load(), big)]
    result = {
        "screens": len(big.screens),
        "permitted": len(big.permitted(USER)),
        "build_ms": round(build_ms),
        "queries": len(queries),
        "samples_per_round": len(queries) * args.passes,
        "p50_ms": round(statistics.median(r[0] for r in rounds), 3),
        "p99_ms": round(statistics.median(r[1] for r in rounds), 3),
        "recall_at_5_shipped": round(shipped.value, 3),
        "recall_at_5_scaled": round(scaled.value, 3),
        "top_1_shipped": top_1[0],
        "top_1_scaled": top_1[1],
        "labelled": shipped.total,
        "nonexistent": len(labelled) - shipped.total,
        "false_answers_shipped": len(false_answers[0]),
        "false_answers_scaled": len(false_answers[1]),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['screens']} screens ({result['permitted']} open to {USER}), built in "
            f"{result['build_ms']} ms; {result['queries']} phrasings x {args.passes} passes"
        )
        print(
            f"median of {args.rounds} rounds: p50 {result['p50_ms']} ms  p99 {result['p99_ms']} ms"
        )
        print(
            f"recall@5 on {shipped.total} labelled queries: {shipped.value:.3f} shipped catalog, "
            f"{scaled.value:.3f} at {result['screens']} screens"
        )
        print(
            f"top-1: {top_1[0]} of {shipped.total} shipped, {top_1[1]} at {result['screens']}; "
            f"{result['nonexistent']} queries for screens that do not exist found "
            f"{len(false_answers[0])} shipped, {len(false_answers[1])} at {result['screens']}"
        )
        for labelled_query, got in scaled.misses:
            print(f"  miss at scale: {labelled_query.query!r} -> {', '.join(got) or 'nothing'}")
        for labelled_query, got in false_answers[1]:
            print(f"  false answer at scale: {labelled_query.query!r} -> {', '.join(got)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
