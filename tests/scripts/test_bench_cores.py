"""scripts/bench_cores.py on a small budget: one process and ``auto`` loaded in turns.

What it prints is for people; this checks the plumbing (both gateways loaded in each pair,
their order swapped, every story told and every thread read back, a ratio a pair and
their median), never a speed.
"""

from __future__ import annotations

import re

import pytest

from tests.support.processes import script_report

pytestmark = pytest.mark.process


def test_each_pair_loads_both_gateways_in_turn_and_reports_their_ratio() -> None:
    report = script_report(
        "scripts.bench_cores", "--users 4 --ramp 0.2 --duration 1.5 --pairs 2 --timeout 150"
    )
    phases = re.findall(
        r"^pair (\d) \S+ (one|auto) +[\d.]+ stories/s, +[\d.]+ ms a story .*, 0 errors,"
        r" threads consistent (\d+) of \3$",
        report,
        re.M,
    )
    # One, then auto; then auto, then one: a slow minute of the host falls on both.
    assert [(pair, setup) for pair, setup, _ in phases] == [
        ("1", "one"),
        ("1", "auto"),
        ("2", "auto"),
        ("2", "one"),
    ], report
    assert re.search(r"^  CPU a story [\d.]+ / [\d.]+: [\d.]+x \([\d.]+-[\d.]+\)$", report, re.M)
    assert re.search(r"^  stories/s +[\d.]+ / [\d.]+: [\d.]+x", report, re.M), report
