"""A2UI's parts without a server: what a client renders, a tool's operations checked, a
thread's surfaces folded, and a press on a surface checked against them."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from gateway import a2ui
from gateway import wire as p
from gateway.a2ui.actions import check_action, told
from gateway.a2ui.catalogs import BASIC_CATALOG_IDS, CAPABILITIES, ClientCatalogs, client_catalogs
from gateway.a2ui.operations import MAX_OPERATIONS, check_operations
from gateway.a2ui.surfaces import Surfaces
from gateway.examples.navigator.work_requests import REQUESTS, _card, _data, _decided
from gateway.hub.inputs import NewTurn, read_input, starts_turn
from tests.support.agui import user_input

pytestmark = pytest.mark.unit

NEW_BASIC = "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"
CARD = "work-request-R-1042"


def capabilities(value: Any) -> list[p.Context]:
    return [p.Context(description=CAPABILITIES, value=json.dumps(value))]


def basic() -> ClientCatalogs:
    catalogs = client_catalogs(capabilities({"supportedCatalogIds": [a2ui.BASIC_CATALOG_ID]}))
    assert catalogs is not None
    return catalogs


def card_operations(status: str = "pending") -> list[dict[str, Any]]:
    """The demo's card of R-1042, as its tool returns it."""
    request = REQUESTS["R-1042"]
    return [
        {"createSurface": {"surfaceId": CARD, "catalogId": a2ui.BASIC_CATALOG_ID}},
        a2ui.update_components(CARD, _card(request, status, True)),
        a2ui.update_data_model(CARD, _data(request, status)),
    ]


def shown(operations: list[dict[str, Any]]) -> Surfaces:
    surfaces = Surfaces()
    for operation in operations:
        surfaces.apply(operation)
    return surfaces


def press(name: str = "approve", status: Any = "pending", **fields: Any) -> p.UserAction:
    action = {
        "name": name,
        "surfaceId": CARD,
        "sourceComponentId": name,
        "context": {"requestId": "R-1042", "status": status},
    }
    return msgspec.convert(action | fields, p.UserAction)


# --- what a client renders -----------------------------------------------------------------


def test_a_client_that_advertises_nothing_renders_nothing() -> None:
    assert client_catalogs([p.Context(description="surface", value="side-panel")]) is None


@pytest.mark.parametrize(
    "value",
    [{"supportedCatalogIds": [NEW_BASIC]}, {"v0.9": {"supportedCatalogIds": [NEW_BASIC]}}],
    ids=["as docs/a2ui.md", "as A2UI's schema nests it"],
)
def test_either_id_of_the_basic_catalog_brings_its_components(value: dict[str, Any]) -> None:
    catalogs = client_catalogs(capabilities(value))
    assert catalogs is not None
    for catalog_id in BASIC_CATALOG_IDS:
        assert catalogs.supports(catalog_id)
        assert {"Card", "Button", "Text", "Row", "Column"} <= (
            catalogs.components(catalog_id) or set()
        )


def test_inline_catalogs_bring_their_own_components_and_other_ids_only_their_id() -> None:
    inline = {"catalogId": "acme:cards", "components": {"Badge": {"type": "object"}}}
    catalogs = client_catalogs(
        capabilities({"supportedCatalogIds": ["acme:charts"], "inlineCatalogs": [inline]})
    )
    assert catalogs is not None
    assert catalogs.components("acme:cards") == {"Badge"}
    assert catalogs.supports("acme:charts") and catalogs.components("acme:charts") is None
    assert not catalogs.supports(a2ui.BASIC_CATALOG_ID)


@pytest.mark.parametrize(
    "value", ["not json", json.dumps({"supportedCatalogIds": "basic"}), json.dumps([1])]
)
def test_capabilities_that_cannot_be_read_are_refused_naming_the_entry(value: str) -> None:
    with pytest.raises(p.GatewayError) as refused:
        client_catalogs([p.Context(description=CAPABILITIES, value=value)])
    assert refused.value.code is p.ErrorCode.VALIDATION_ERROR
    assert CAPABILITIES in refused.value.message and "supportedCatalogIds" in refused.value.message


# --- a tool's operations -------------------------------------------------------------------


def test_a_card_the_client_renders_is_shown_whole_with_its_version() -> None:
    checked = check_operations(card_operations(), basic(), Surfaces())
    [(surface_id, operations)] = checked.shown
    assert surface_id == CARD and len(operations) == 3
    assert all(operation["version"] == a2ui.VERSION for operation in operations)
    assert checked.note == {"shown": [CARD]}


def test_a_client_without_a_catalog_is_shown_nothing_and_the_model_is_told() -> None:
    checked = check_operations(card_operations(), None, Surfaces())
    assert checked.shown == []
    assert checked.note["shown"] == [] and CAPABILITIES in checked.note["notShown"]


def test_a_component_the_clients_catalog_lacks_keeps_that_surface_back() -> None:
    lacking = client_catalogs(
        capabilities(
            {"inlineCatalogs": [{"catalogId": a2ui.BASIC_CATALOG_ID, "components": {"Text": {}}}]}
        )
    )
    other = [
        a2ui.create_surface("note", "acme:cards"),
        a2ui.update_components("note", [{"id": "root", "component": "Text", "text": "hi"}]),
    ]
    checked = check_operations(card_operations() + other, lacking, Surfaces())
    assert checked.shown == []
    assert "'Button', 'Card', 'Column', 'Row'" in checked.note["notShown"]
    assert "does not render catalog 'acme:cards'" in checked.note["notShown"]


def test_updates_need_the_surface_and_a_surface_shown_again_is_drawn_anew() -> None:
    checked = check_operations(_decided(REQUESTS["R-1042"], "approved"), basic(), Surfaces())
    assert checked.shown == [] and checked.note["notShown"] == (
        f"Surface {CARD!r} was not shown: this thread shows no such surface to change."
    )  # nothing the user misses: no advice to say it in words
    again = check_operations(card_operations(), basic(), shown(card_operations()))
    [(_, operations)] = again.shown
    assert operations[0] == a2ui.delete_surface(CARD)
    assert "createSurface" in operations[1]


@pytest.mark.parametrize(
    ("operations", "said"),
    [
        ({"createSurface": {"surfaceId": CARD}}, "catalogId"),
        (
            [{"createSurface": {"surfaceId": 7, "catalogId": "x"}}],
            "a2ui_operations[0].createSurface.surfaceId",
        ),
        ([{"beginRendering": {"surfaceId": CARD}}], "beginRendering"),
        ([a2ui.delete_surface(CARD) | a2ui.create_surface(CARD)], "exactly one"),
        ([{**a2ui.delete_surface(CARD), "version": "v0.8"}], "version"),
        ([a2ui.delete_surface(CARD)] * (MAX_OPERATIONS + 1), f"at most {MAX_OPERATIONS}"),
        ([a2ui.update_data_model(CARD, "x" * 300_000)], "bytes of JSON"),
        ([a2ui.update_data_model(CARD, json.loads("[" * 40 + "]" * 40))], "levels deep"),
        ([a2ui.update_data_model(CARD, {1: "not a JSON key"})], "not JSON"),
        ("a card", "must be a list"),
    ],
)
def test_operations_out_of_bounds_or_shape_show_nothing_and_say_where(
    operations: Any, said: str
) -> None:
    checked = check_operations(operations, basic(), shown(card_operations()))
    assert checked.shown == []
    assert said in checked.note["notShown"]


# --- a thread's surfaces -------------------------------------------------------------------


def test_a_thread_folds_its_surfaces_from_its_activity_messages() -> None:
    messages = [
        {"id": "u", "role": "user", "content": "R-1042 보여줘"},
        {"id": "a", "role": "activity", "activityType": "a2ui-surface",
         "content": {"operations": card_operations()}},
        {"id": "b", "role": "activity", "activityType": "a2ui-surface",
         "content": {"operations": _decided(REQUESTS["R-1042"], "approved")}},
        {"id": "c", "role": "activity", "activityType": "a2ui-action",
         "content": {"userAction": {"surfaceId": "gone"}}},
    ]  # fmt: skip
    surface = Surfaces.of_messages(messages).get(CARD)
    assert surface is not None
    assert (
        surface.value_at("/status") == "approved" and surface.value_at("/statusLabel") == "승인됨"
    )
    assert surface.components["approve"]["component"] == "Button"
    assert surface.drawn("title") is not None and surface.drawn("approve") is None


def test_data_model_paths_set_and_remove_as_a2ui_says() -> None:
    surfaces = shown([a2ui.create_surface("s")])
    surfaces.apply(a2ui.update_data_model("s", {"a": {"b": [1, 2]}}))
    surfaces.apply(a2ui.update_data_model("s", 3, "/a/b/1"))
    surfaces.apply(a2ui.update_data_model("s", "x", "/a/c~1d"))
    surfaces.apply({"updateDataModel": {"surfaceId": "s", "path": "/a/b/0"}})
    surface = surfaces.get("s")
    assert surface is not None and surface.data == {"a": {"b": [3], "c/d": "x"}}
    surfaces.apply(a2ui.delete_surface("s"))
    assert surfaces.get("s") is None


# --- a press on a surface ------------------------------------------------------------------


def test_a_press_the_surface_defines_is_taken_and_told_as_the_middleware_words_it() -> None:
    action = press()
    check_action(action, shown(card_operations()))
    assert told(action) == (
        'User performed action "approve" on surface "work-request-R-1042" (component: approve).'
        ' Context: {"requestId":"R-1042","status":"pending"}'
    )


@pytest.mark.parametrize(
    ("action", "said"),
    [
        (press(surfaceId="work-request-R-9"), "shows no surface 'work-request-R-9'"),
        (press(sourceComponentId="delete"), "has no 'delete'"),
        (press(sourceComponentId="title"), "does not send 'approve'"),
        (press(name="reject", sourceComponentId="approve"), "does not send 'reject'"),
        (press(context={"requestId": "R-1042"}), "not the ['requestId', 'status']"),
        (press(context={"requestId": "R-7", "status": "pending"}), 'sends requestId "R-7"'),
        (press(status=True), 'status is now "pending", not true'),
    ],
)
def test_a_press_the_surface_does_not_define_is_refused_with_a_sentence(
    action: p.UserAction, said: str
) -> None:
    with pytest.raises(p.GatewayError) as refused:
        check_action(action, shown(card_operations()))
    assert refused.value.code is p.ErrorCode.VALIDATION_ERROR
    assert said in refused.value.message, refused.value.message


def test_a_press_on_a_card_that_changed_since_it_was_drawn_is_stale() -> None:
    decided = shown(card_operations() + _decided(REQUESTS["R-1042"], "approved"))
    with pytest.raises(p.GatewayError, match='status is now "approved", not "pending"'):
        check_action(press(), decided)
    # Pressed as it shows now, the button is gone from the card.
    with pytest.raises(p.GatewayError, match="no longer shows 'approve'"):
        check_action(press(status="approved"), decided)
    deleted = shown([*card_operations(), a2ui.delete_surface(CARD)])
    with pytest.raises(p.GatewayError, match="shows no surface"):
        check_action(press(), deleted)


def test_values_the_client_resolves_are_taken_as_sent() -> None:
    button = {
        "id": "go",
        "component": "Button",
        "child": "root",
        "action": {
            "event": {
                "name": "go",
                "context": {"item": {"path": "name"}, "when": {"call": "now", "args": {}}},
            }
        },
    }
    column = {"id": "root", "component": "Column", "children": ["go"]}
    surfaces = shown([a2ui.create_surface("s"), a2ui.update_components("s", [column, button])])
    action = {"name": "go", "surfaceId": "s", "sourceComponentId": "go"}
    check_action(
        msgspec.convert(action | {"context": {"item": "A", "when": 1}}, p.UserAction), surfaces
    )


# --- a press at the door -------------------------------------------------------------------


def action_input(user_action: Any) -> p.RunAgentInput:
    frame = user_input("t", "")
    frame["messages"] = []
    frame["forwardedProps"] = {"a2uiAction": {"userAction": user_action}}
    return p.decode_input(json.dumps(frame))


def pressed_with(context: Any) -> dict[str, Any]:
    return {"name": "a", "surfaceId": CARD, "sourceComponentId": "a", "context": context}


@pytest.mark.parametrize(
    ("user_action", "said"),
    [
        ({"name": "approve", "surfaceId": 7}, "`$.forwardedProps.a2uiAction.userAction.surfaceId`"),
        ({"name": "approve", "surfaceId": CARD}, "sourceComponentId"),
        ("approve", "Expected `object`"),
        (pressed_with({"x": "y" * 9000}), "holds 9008 bytes of JSON"),
        (pressed_with({"x": json.loads("[" * 9 + "]" * 9)}), "is nested more than 8 levels deep"),
        (pressed_with(["not", "an object"]), "userAction.context`"),
    ],
)
def test_a_press_out_of_shape_or_bounds_is_refused_at_the_door(user_action: Any, said: str) -> None:
    with pytest.raises(p.GatewayError) as refused:
        action_input(user_action)
    assert refused.value.code is p.ErrorCode.VALIDATION_ERROR
    assert said in refused.value.message, refused.value.message


def test_a_press_is_a_new_turn_and_never_an_answer() -> None:
    run_input = action_input(
        {"name": "approve", "surfaceId": CARD, "sourceComponentId": "approve", "context": {}}
    )
    assert starts_turn(run_input)
    turn = read_input(run_input, {}, set(), 900.0, 0.0)
    assert isinstance(turn, NewTurn) and turn.action is not None
    assert turn.action.surface_id == CARD and turn.message_id.startswith("a2ui-action-")
    assert turn.text.startswith('User performed action "approve"')
    both = msgspec.structs.replace(
        run_input, resume=[p.ResumeEntry(interrupt_id="i", status="cancelled")]
    )
    assert not starts_turn(both)
    with pytest.raises(p.GatewayError, match="not both"):
        read_input(both, {}, set(), 900.0, 0.0)
