"""What the processes of a cluster tell each other fits PostgreSQL's NOTIFY: the changes to
threads a process made together go in as few payloads as its limit allows."""

from __future__ import annotations

import pytest

from gateway.cluster.messages import PAYLOAD_LIMIT, ThreadsChanged, decoded, threads_changed

pytestmark = pytest.mark.unit


def test_thread_changes_are_as_few_payloads_as_the_limit_allows_and_keep_their_order():
    changes = [(f"user-{n}", f"thread-{n:040d}", "updated") for n in range(300)]
    payloads = threads_changed("node", changes)
    # About 21 kB of changes: more than one payload, yet far fewer than a change each.
    assert 3 <= len(payloads) <= 6
    assert all(len(payload.encode()) <= PAYLOAD_LIMIT for payload in payloads)
    told = [decoded(payload) for payload in payloads]
    assert all(isinstance(message, ThreadsChanged) for message in told)
    assert [tuple(c) for m in told if isinstance(m, ThreadsChanged) for c in m.changes] == changes
    assert threads_changed("node", []) == []


def test_a_change_too_long_for_any_payload_is_dropped_and_the_rest_told():
    kept = ("u", "t1", "created")
    assert threads_changed("node", [("u", "t" * PAYLOAD_LIMIT, "created"), kept]) == (
        threads_changed("node", [kept])
    )
