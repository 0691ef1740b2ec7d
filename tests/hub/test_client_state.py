"""What a client's ``RunAgentInput.state`` writes to its thread (``gateway.hub.client_state``),
read with no server and no model: changed keys only, kept keys kept, scopes, bounds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway import wire as p
from gateway.hub.client_state import (
    APP,
    MAX_STATE_KEYS,
    SESSION,
    USER,
    StateRules,
    read_edit,
    scope_of,
)

pytestmark = pytest.mark.unit

THREAD: dict[str, Any] = {
    "recipe": {"title": "Pancakes", "ingredients": ["flour", "milk"]},
    "servings": 2,
    "user:units": "metric",
    "app:banner": "welcome",
}
RULES = StateRules()


def test_a_client_that_sends_back_the_snapshot_it_was_sent_writes_nothing() -> None:
    echoed = json.loads(json.dumps(THREAD))  # as it comes back over the wire
    # Key order within a value is not a change.
    echoed["recipe"] = {"ingredients": ["flour", "milk"], "title": "Pancakes"}
    edit = read_edit(echoed, THREAD, RULES)
    assert edit is not None
    assert edit.delta == {} and edit.ignored == [] and edit.notices() == []
    assert edit.snapshot == THREAD


def test_null_and_an_empty_object_share_no_state() -> None:
    assert read_edit(None, THREAD, RULES) is None
    assert read_edit({}, THREAD, RULES) is None  # CopilotKit's before it has any


def test_an_edit_writes_the_keys_it_changes_and_keeps_those_it_leaves_out() -> None:
    edited = {"recipe": {"title": "Pancakes", "ingredients": ["flour", "oat milk"]}}
    edit = read_edit({**edited, "servings": 2, "note": None}, THREAD, RULES)
    assert edit is not None
    assert edit.delta == {**edited, "note": None}  # null is a value: ADK removes nothing
    assert edit.snapshot == {**THREAD, **edited, "note": None}


def test_true_is_not_one_and_one_is_not_one_point_oh() -> None:
    edit = read_edit({"flag": 1, "count": 2.0}, {"flag": True, "count": 2}, RULES)
    assert edit is not None and edit.delta == {"flag": 1, "count": 2.0}


def test_keys_of_scopes_a_client_may_not_write_keep_the_threads_values_and_are_named() -> None:
    sent = {**THREAD, "user:units": "imperial", "app:banner": "hacked", "temp:x": 1}
    edit = read_edit(sent, THREAD, RULES)
    assert edit is not None
    assert edit.delta == {}
    assert edit.ignored == ["user:units", "app:banner", "temp:x"]
    assert edit.snapshot == THREAD
    [told] = edit.notices()
    assert isinstance(told, p.Custom) and told.value["code"] == "STATE_KEYS_IGNORED"
    assert "'user:units', 'app:banner', 'temp:x'" in told.value["message"]


def test_an_operator_may_let_clients_write_user_state_never_temp_state() -> None:
    rules = StateRules(frozenset({SESSION, USER}))
    edit = read_edit({"user:units": "imperial", "temp:x": 1}, THREAD, rules)
    assert edit is not None
    assert edit.delta == {"user:units": "imperial"} and edit.ignored == ["temp:x"]
    assert [scope_of(k) for k in ("a", "user:a", "app:a", "temp:a")] == [
        SESSION,
        USER,
        APP,
        None,
    ]


def test_with_no_scope_allowed_a_client_writes_nothing() -> None:
    edit = read_edit({"servings": 4}, THREAD, StateRules(frozenset()))
    assert edit is not None and edit.delta == {} and edit.ignored == ["servings"]


def test_a_notice_names_ten_keys_and_counts_the_rest() -> None:
    edit = read_edit({f"temp:{i}": i for i in range(25)}, {}, RULES)
    assert edit is not None
    [told] = edit.notices()
    assert isinstance(told, p.Custom) and "and 15 more" in told.value["message"]


def test_a_state_that_is_not_an_object_is_refused() -> None:
    for sent, kind in (([1, 2], "an array"), ("x", "a string"), (3, "a number")):
        with pytest.raises(p.GatewayError) as refused:
            read_edit(sent, THREAD, RULES)
        assert refused.value.code is p.ErrorCode.VALIDATION_ERROR
        assert f"not {kind}" in refused.value.message


def test_an_edit_that_would_make_the_threads_state_too_large_is_refused() -> None:
    rules = StateRules(max_bytes=1000)
    with pytest.raises(p.GatewayError) as refused:
        read_edit({"notes": "x" * 1000}, THREAD, rules)
    assert refused.value.code is p.ErrorCode.VALIDATION_ERROR
    assert "at most 1000 (GATEWAY_MAX_STATE_BYTES)" in refused.value.message
    many = {f"k{i}": i for i in range(MAX_STATE_KEYS)}
    with pytest.raises(p.GatewayError) as refused:
        read_edit(many, THREAD, RULES)
    assert f"at most {MAX_STATE_KEYS}" in refused.value.message


def test_an_echo_of_a_large_state_is_never_refused() -> None:
    large = {"notes": "x" * 5000}
    edit = read_edit(large, large, StateRules(max_bytes=1000))  # the agent made it so
    assert edit is not None and edit.delta == {}
