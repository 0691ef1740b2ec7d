"""What a caller is told of a store failure while its input takes the thread, for a typed
run and a live turn alike: a code and a sentence, never the store's own message."""

from __future__ import annotations

import pytest

from gateway import wire as p
from gateway.hub.refusals import store_refusal
from gateway.store import QuarantinedThreadError, StoreError
from gateway.store.quarantine import Quarantine

pytestmark = pytest.mark.unit


def test_a_damaged_thread_is_told_as_quarantined_without_the_stores_words() -> None:
    damaged = Quarantine("t-1", "demo", 7, "data", "not JSON at byte 3", 0.0)
    refusal = store_refusal(QuarantinedThreadError(damaged), "t-1")
    assert refusal is not None and refusal.code is p.ErrorCode.INTERNAL_ERROR
    assert "set aside" in refusal.message and "byte 3" not in refusal.message


def test_a_lost_database_is_told_as_unavailable() -> None:
    refusal = store_refusal(StoreError("connection refused by 10.0.0.5"), "t-1")
    assert refusal is not None and refusal.code is p.ErrorCode.STORE_UNAVAILABLE
    assert "10.0.0.5" not in refusal.message


def test_anything_else_is_not_a_store_refusal() -> None:
    assert store_refusal(ValueError("boom"), "t-1") is None
