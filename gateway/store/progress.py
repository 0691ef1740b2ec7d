"""What one stored event does to its thread's open calls and run, read from the event alone.

The store keeps every function call without a response yet (``open_calls``), so a load can
reach back past its window to a call still waiting on the browser, and a restart can find
the runs a crash cut off (``close_interrupted``). It also keeps whether a thread's run is
open: whether the model owes a reply. Both follow from each event as it is appended (and
from every stored event when a migration rebuilds them); the SQLite backend keeps them in
its ``open_calls`` table (``sqlite.open_calls``) and in ``sessions.run_open``.

An agent's own long-running tool answers its call at once with an interim result, marked
on its event (``INTERIM_KEY``, by ``gateway.tools.long_running``): that answer leaves the
call open and the run paused on it, as a browser call's does.
"""

from __future__ import annotations

import dataclasses

from google.adk.events import Event

from gateway.context import event_metadata
from gateway.store.cut_off import is_owed

# Where an event's interim results are marked (their call ids), under the gateway's key.
INTERIM_KEY = "interim"


def interim_results(event: Event) -> set[str]:
    """The call ids whose response in ``event`` is an interim result, not the final one."""
    found = event_metadata(event).get(INTERIM_KEY)
    return {str(call_id) for call_id in found} if isinstance(found, list) else set()


@dataclasses.dataclass(frozen=True, slots=True)
class RunProgress:
    """What one stored event does to the calls and the run of its thread."""

    calls: tuple[tuple[str, str, bool], ...]  # (call id, tool name, long running) it makes
    answers: tuple[str, ...]  # call ids it answers
    run_open: bool | None  # True: the model owes a reply; None: the event does not say

    @classmethod
    def of(cls, event: Event) -> RunProgress:
        if event.content is None or not event.content.parts:
            # A model error ends its run; a content-less event (state, agent end) says nothing.
            return cls((), (), False if event.error_code else None)
        long_running = event.long_running_tool_ids or set()
        calls = tuple(
            (call.id, call.name or "", call.id in long_running)
            for call in event.get_function_calls()
            if call.id
        )
        interim = interim_results(event)
        answers = tuple(
            r.id for r in event.get_function_responses() if r.id and r.id not in interim
        )
        if answers or any(not lr for _, _, lr in calls):
            run_open: bool | None = True  # the model continues after a server call or a result
        elif calls or interim:
            run_open = False  # paused on the browser or a ticket: waiting is not being cut off
        elif event.author == "user":
            run_open = True  # the model owes a reply to what the user said
        elif is_owed(event):
            run_open = True  # cut off, its reply still owed: open until it is asked again
        elif any(part.text and not part.thought for part in event.content.parts):
            run_open = False  # the model replied
        else:
            run_open = None
        return cls(calls, answers, run_open)
