"""Server-side rules checked before a call can reach a browser, or a person's approval.

``navigateToScreen`` runs in the browser, but whether it may run is decided here, by an
ADK before-tool callback: ``screenId`` is required and is the only destination
(``routeHint`` is metadata, never followed); the screen must exist and be one the user may
open; ``orgScope``, when given, must be the user's own org; and only the side-panel chat
may navigate (the surface comes from the run's context, side panel when absent).

A refusal is a dict, and ADK (2.13) treats a dict from a before-tool callback as the
tool's response: the tool does not run, the after-tool callbacks (the audit) see the
refusal, the function response is stored, and the model is called again in the same run,
so it explains the refusal at once and no browser is asked. The call's event is still
marked long-running (ADK decides that from the tool before any callback), so readers of
a thread must treat a call with a response as closed, as ``gateway.hub.open_calls`` and the
translator do; the call then never appears in ``pendingToolCallIds``.

The surface comes from the run's context entries (``gateway.context``).

``approveWorkRequest`` and ``rejectWorkRequest`` are refused the same way when the caller
(``gateway.context.caller``) may not decide the request (``work_requests.refusal``), so
nobody is asked to approve a call that could not run; the tools check again as they run.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from gateway.context import caller, run_context
from gateway.examples.navigator import work_requests
from gateway.examples.navigator.screens.catalog import ScreenCatalog

log = logging.getLogger(__name__)

NAVIGATE = "navigateToScreen"
SURFACE = "surface"
SIDE_PANEL = "side-panel"
SURFACES = frozenset({SIDE_PANEL, "full-screen", "modal"})

BeforeToolCallback = Callable[[BaseTool, dict[str, Any], ToolContext], dict[str, Any] | None]


@dataclasses.dataclass(frozen=True)
class Refusal:
    """Why a call was not passed on: the tool result the model gets instead."""

    # The navigateToScreen result status: "not_found", "denied", "not_allowed_here" or
    # "error".
    status: str
    # One word for logs and the audit: which rule refused.
    reason: str
    # A sentence the model can relay; it never names a screen the user may not open.
    message: str

    def as_result(self) -> dict[str, str]:
        return {"status": self.status, "reason": self.reason, "message": self.message}


def navigation_policy(
    screens: ScreenCatalog, user_id: str, args: Mapping[str, Any], context: Mapping[str, str]
) -> Refusal | None:
    """The refusal for a navigateToScreen call, or None when the browser may be asked."""
    screen_id = args.get("screenId")
    if not isinstance(screen_id, str) or not screen_id.strip():
        return Refusal(
            "error",
            "screen_id_required",
            "screenId가 없어 화면을 열지 않았습니다. find_screen으로 화면을 찾은 뒤 그 "
            "screenId로 다시 요청하세요.",
        )
    user = screens.users.get(user_id)
    if user is None:
        return Refusal(
            "denied", "unknown_user", "사용자 정보를 찾을 수 없어 화면을 열 수 없습니다."
        )
    if screen_id not in screens.screens:
        # A screen nobody may open is "not found", not "not yours": telling the user they
        # lack the right to a screen that does not exist sends them to an administrator
        # for nothing (issue 29). That an id exists is all a user learns of a forbidden
        # screen; its name is never told.
        log.info("navigateToScreen refused: %s does not exist (for %s)", screen_id, user_id)
        return Refusal(
            "not_found",
            "screen_not_found",
            f"{screen_id} 화면은 없습니다. 그런 화면이 없다고 안내하세요.",
        )
    if not screens.may_open(user_id, screen_id):
        log.info("navigateToScreen refused: %s is not permitted for %s", screen_id, user_id)
        return Refusal(
            "denied",
            "screen_not_available",
            f"{screen_id} 화면은 이 사용자가 열 수 없는 화면입니다. 권한이 없다고 안내하세요.",
        )
    org_scope = args.get("orgScope")
    if org_scope is not None and org_scope != user.org:
        return Refusal(
            "denied",
            "org_scope_mismatch",
            f"{org_scope} 조직의 화면은 열 수 없습니다. 이 사용자의 조직은 {user.org}입니다.",
        )
    screen = screens.screens[screen_id]
    route_hint = args.get("routeHint")
    if route_hint is not None and route_hint != screen.route:
        log.info(
            "navigateToScreen %s: routeHint %r is not the catalog route %r; it is ignored",
            screen_id,
            route_hint,
            screen.route,
        )
    surface = context.get(SURFACE, SIDE_PANEL)
    if surface != SIDE_PANEL:
        return Refusal(
            "not_allowed_here",
            "surface",
            f"이 대화창({surface})에서는 화면을 이동할 수 없고, 메뉴는 대화창에 가려 보이지 "
            f"않습니다. 사용자에게 채팅을 '패널' 보기로 바꾸거나 닫은 뒤 메뉴에서 "
            f"{screen.name} 화면을 열어 달라고 안내하세요.",
        )
    return None


def build_before_tool_callback(screen_catalog: ScreenCatalog) -> BeforeToolCallback:
    """The agent's before-tool callback: navigation policy for navigateToScreen, who may
    decide for the work-request decisions, else pass."""

    def before_tool(
        tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        if tool.name in work_requests.DECIDING_TOOLS:
            return _deciding(tool.name, args)
        if tool.name != NAVIGATE:
            return None
        refusal = navigation_policy(
            screen_catalog, tool_context.user_id, args, run_context(tool_context)
        )
        if refusal is None:
            return None
        log.info(
            "navigateToScreen %s for %s refused (%s): the browser is not asked",
            args.get("screenId"),
            tool_context.user_id,
            refusal.reason,
        )
        return refusal.as_result()

    return before_tool


def _deciding(tool: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
    """A decision on a work request the caller may not make is refused before a person is
    asked to approve it."""
    asker = caller()
    refused = work_requests.refusal(args.get("requestId"), asker, deciding=True)
    if refused is None:
        return None
    log.info(
        "%s %s for %s refused: no approval is asked (%s)",
        tool,
        args.get("requestId"),
        asker.user_id if asker else "nobody",
        refused,
    )
    return {"error": refused}
