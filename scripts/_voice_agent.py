"""The agent ``scripts/bench_voice.py`` hosts in a gateway process of its own: ADK's Gemini
model, its live connection made to the benchmark's local Live server, which the
environment names (``tests.support.gemini_live.LiveServer.environ``)."""

from __future__ import annotations

import os

from google.adk.agents import LlmAgent

from tests.support.gemini_live import live_model_from

root_agent = LlmAgent(
    name="voice", model=live_model_from(os.environ), instruction="Answer briefly."
)
