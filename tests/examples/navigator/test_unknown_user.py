"""A name the demo's directory lacks is told to the operator once, with the names it knows,
instead of a demo that silently shows nothing."""

from __future__ import annotations

import logging

import pytest

from gateway.examples.navigator import agent

pytestmark = pytest.mark.unit


def test_an_unknown_user_is_named_once_with_the_demo_users(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent, "_UNKNOWN_TOLD", set())
    with caplog.at_level(logging.WARNING, logger=agent.log.name):
        assert agent.profile("alice")["screens"] == []
        agent.profile("alice")
        agent.profile("demo")
    (told,) = [record.getMessage() for record in caplog.records]
    assert "'alice' is not one of the demo's users (demo, guest, approver, other-org)" in told


def test_the_names_told_are_bounded(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent, "_UNKNOWN_TOLD", set())
    with caplog.at_level(logging.WARNING, logger=agent.log.name):
        for n in range(agent.UNKNOWN_TOLD_MOST + 20):
            agent.profile(f"visitor-{n}")
    assert len(caplog.records) == agent.UNKNOWN_TOLD_MOST
