"""scripts/bench_providers.py on a small budget: every side measured, for both providers.

What it prints is for people; this checks the plumbing (the provider in its own process,
the recorded request read again directly, the ADK Runner and the gateway), never a speed,
and the arithmetic of a chunk's transit on stamps made up for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.bench_providers import Stream, sends, transits, waited
from tests.support.processes import script_report

pytestmark = pytest.mark.unit


@pytest.mark.process
def test_the_benchmark_measures_every_side_of_both_providers_on_both_stores() -> None:
    report = script_report("scripts.bench_providers", "--rounds 1 --runs 2 --pace-ms 2")
    for name in ("chat-completions (openai/local-model)", "gemini (gemini-2.5-flash)"):
        for store in ("memory", "file"):
            assert f"{name}, the gateway's store {store}:" in report
    for quantile in ("p50", "p99"):
        assert report.count(f"request at the provider {quantile}: direct") == 4
        assert report.count(f"first token {quantile}: direct") == 4
        assert report.count(f"a chunk's transit {quantile}, provider to client: first") == 4
        assert report.count(f"chunk arrival after direct's {quantile}, from the run's") == 4
        assert report.count(f"the provider's sends {quantile}: gap between frames direct") == 4
        assert report.count(f"waits for a core {quantile}, a run: the provider's") == 4
    assert report.count("CPU per chunk: direct") == 4


def test_a_chunks_transit_is_its_read_less_its_send_and_a_joined_chunk_counts_its_wait() -> None:
    # Read at 100.010 ("ab") and 100.030 ("cde": two chunks the side joined into one).
    stream = Stream(times=[0.010, 0.030], lengths=[2, 5], started=100.0)
    # The provider's frames: one without text (a role), then "ab", "c", "de".
    sent = [100.001, 100.005, 100.020, 100.025]
    found = transits(stream, sent, ["", "ab", "c", "de"])
    assert found == pytest.approx([0.005, 0.010, 0.005])


def test_a_reply_whose_frames_do_not_match_its_sends_is_refused() -> None:
    stream = Stream(times=[0.010], lengths=[2], started=100.0)
    with pytest.raises(RuntimeError, match="sent 1 frames of a reply of 2"):
        transits(stream, [100.005], ["", "ab"])


def test_the_providers_sends_are_its_gaps_and_each_later_chunks_lag_behind_its_pace() -> None:
    # Paced 10 ms: a role frame, "ab" 1 ms late, "c" on time after it, "de" 4 ms late.
    sent = [100.000, 100.011, 100.021, 100.035]
    gaps, lags = sends(sent, ["", "ab", "c", "de"], 0.010)
    assert gaps == pytest.approx([0.011, 0.010, 0.014])
    # Counted from the first text chunk's send, as a chunk's arrival from the first token is.
    assert lags == pytest.approx([0.0, 0.004])
    assert sends([100.0], [""], 0.010) == ([], [])


def test_a_process_waits_for_a_core_as_long_as_all_its_threads_together(tmp_path: Path) -> None:
    # schedstat: time on a core, time ready with no core free, timeslices (nanoseconds).
    for thread, line in (("41", "9000 2000000 3"), ("42", "5 3000000 1")):
        folder = tmp_path / "41" / "task" / thread
        folder.mkdir(parents=True)
        (folder / "schedstat").write_text(line + "\n")
    assert waited(41, proc=tmp_path) == pytest.approx(0.005)
    assert waited(7, proc=tmp_path) == 0.0  # gone: nothing to count
