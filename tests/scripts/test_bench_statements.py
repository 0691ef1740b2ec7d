"""scripts/bench_statements.py on a small budget: the writer's statements of a flagship story.

What it prints is for people; this checks the plumbing (the statements sent, the steps of
the triggers they fired, and FTS5's own, each sorted by kind), and the cuts it shows: a
story writes no trim of its thread's log and no FTS row of its first title
(docs/multicore.md, "The writer's work a story").
"""

from __future__ import annotations

import re

import pytest

from scripts.bench_statements import Counted, kind
from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_the_benchmark_counts_a_storys_statements_by_kind() -> None:
    report = script_report("scripts.bench_statements", "--stories 2")
    total = re.search(
        r"([\d.]+) statements a story sent by the gateway to the writer's connection,"
        r" ([\d.]+) steps of the triggers they fired, ([\d.]+) FTS5's own",
        report,
    )
    assert total is not None, report
    assert float(total[1]) > 0 and float(total[2]) > 0 and float(total[3]) > 0
    sent, triggers = report.split("trigger steps, by what fired them:")
    assert re.search(r"^\s+\d+\.\d\s+INSERT INTO events$", sent, re.MULTILINE), report
    assert re.search(r"^\s+\d+\.\d\s+COMMIT$", sent, re.MULTILINE), report
    # Each append's update of its session's bytes fires the user's usage trigger.
    assert re.search(r"^\s+\d+\.\d\s+UPDATE sessions$", triggers, re.MULTILINE), report
    assert "DELETE FROM frames" not in report  # no trim: each log fits its bound
    assert "DELETE FROM thread_words" not in report  # no title's row replaced


@pytest.mark.unit
def test_a_triggers_steps_are_not_counted_as_statements_sent() -> None:
    # SQLite's trace calls back with the firing statement's text at each trigger step.
    found = Counted(
        1,
        sent=["BEGIN IMMEDIATE", "UPDATE sessions SET stored_bytes = ? WHERE pk = ?", "COMMIT"],
        traced=[
            "BEGIN IMMEDIATE",
            *["UPDATE sessions SET stored_bytes = 10 WHERE pk = 1"] * 3,
            "-- INSERT INTO 'main'.'thread_words_content' VALUES(?,?)",
            "COMMIT",
        ],
    )
    sent, triggers, fts5 = found.kinds()
    assert sent == {"BEGIN IMMEDIATE": 1, "UPDATE sessions": 1, "COMMIT": 1}
    assert triggers == {"UPDATE sessions": 2}
    assert fts5 == {"fts5: INSERT INTO 'main'.'thread_words_content'": 1}


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
