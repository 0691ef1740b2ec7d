"""scripts/bench_statements.py on a small budget: the writer's statements of a flagship story.

What it prints is for people; this checks the plumbing (the statements traced and sorted by
kind), and the cuts it shows: a story writes no trim of its thread's log and no FTS row of
its first title (docs/multicore.md, "The writer's work a story").
"""

from __future__ import annotations

import re

import pytest

from scripts.bench_statements import kind
from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_counts_a_storys_statements_by_kind() -> None:
    report = script_report("scripts.bench_statements", "--stories 2")
    total = re.search(
        r"([\d.]+) statements a story on the writer's connection: ([\d.]+) the gateway's,"
        r" ([\d.]+) FTS5's own",
        report,
    )
    assert total is not None, report
    assert float(total[1]) == pytest.approx(float(total[2]) + float(total[3]), abs=0.11)
    assert re.search(r"^\s+\d+\.\d\s+INSERT INTO events$", report, re.MULTILINE), report
    assert re.search(r"^\s+\d+\.\d\s+COMMIT$", report, re.MULTILINE), report
    assert "DELETE FROM frames" not in report  # no trim: each log fits its bound
    assert "DELETE FROM thread_words" not in report  # no title's row replaced


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("INSERT INTO frames (session_pk, seq) SELECT pk, 1", "INSERT INTO frames"),
        ("INSERT OR REPLACE INTO open_calls (a) VALUES (1)", "INSERT OR REPLACE INTO open_calls"),
        (
            "-- REPLACE INTO 'main'.'thread_words_data' VALUES(?,?)",
            "fts5: REPLACE INTO 'main'.'thread_words_data'",
        ),
        ("DELETE FROM streamed_texts WHERE session_pk = 1", "DELETE FROM streamed_texts"),
        ("COMMIT", "COMMIT"),
    ],
)
def test_a_statement_is_named_by_its_verb_and_table(statement: str, named: str) -> None:
    assert kind(statement) == named
