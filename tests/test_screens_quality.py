"""Search quality on the labelled queries in tests/queries/: recall@5 of at least 0.9."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gateway.examples.navigator.screens import catalog, quality

LABELLED = Path(__file__).parent / "queries" / "find_screen.jsonl"


def test_the_labelled_set_is_large_enough_and_names_real_screens() -> None:
    queries = quality.read_labelled(LABELLED)
    screens = catalog.load()
    assert len(queries) >= 50
    for labelled in queries:
        assert labelled.expect <= screens.permitted(labelled.user), labelled.query


def test_recall_at_5_on_the_labelled_queries_is_at_least_0_9() -> None:
    recall = quality.recall_at(catalog.load(), quality.read_labelled(LABELLED), k=5)
    misses = [f"{labelled.query!r} -> {list(got)}" for labelled, got in recall.misses]
    assert recall.value >= 0.9, "\n".join(misses)


def test_the_benchmark_runs_and_reports_latency_and_recall() -> None:
    small = "--screens 1000 --queries 20 --passes 1 --rounds 1 --json"
    done = subprocess.run(
        [sys.executable, "-m", "scripts.bench_screens", *small.split()],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["screens"], result["queries"]) == (1000, 20)
    assert result["p50_ms"] <= result["p99_ms"]
    assert result["recall_at_5_shipped"] >= 0.9
