"""The end of a run whose process died, as its thread's log tells it.

The store closes the cut-off run in the thread's history (``close_interrupted_thread``);
its watchers, on any process, follow the thread's log, where the run stops mid-stream. The
process that took the dead lease writes the run's end there: an END for each message, tool
call or span it left open, innermost first, then RUN_ERROR saying what happened. Numbered
after the log's head (the taker holds the lease, so no one else writes), they reach every
watcher as the run's own last events would have, and a reattach by cursor after the crash
is answered from the log like any other. The RUN_ERROR's code, ``RUN_INTERRUPTED``, tells
a client the process was lost, not that anything unexpected failed.
"""

from __future__ import annotations

from gateway import wire as p
from gateway.hub import eventlog
from gateway.store.frames import FrameLog, LoggedFrame

# How far back the log is read for the cut-off run's start; beyond it, only RUN_ERROR.
READ_BACK = 2000

CUT_OFF = (
    "The gateway process running this reply stopped before it finished; what it had said "
    "is kept, marked interrupted. Send your message again to go on."
)


def closing_frames(log: FrameLog) -> list[LoggedFrame]:
    """The frames that end the run the log's tail leaves open; none if it ends a run."""
    if not log.frames or isinstance(
        p.decode_event(log.frames[-1].data), p.RunFinished | p.RunError
    ):
        return []  # the run had ended: nothing was cut off in the log
    open_items: dict[str, tuple[p.Event, str | None]] = {}
    for frame in log.frames:
        event = p.decode_event(frame.data)
        match event:
            case p.RunStarted():
                open_items.clear()
            case p.TextMessageStart(message_id=key):
                open_items[f"text {key}"] = (p.TextMessageEnd(message_id=key), frame.only_for)
            case p.ToolCallStart(tool_call_id=key):
                open_items[f"call {key}"] = (p.ToolCallEnd(tool_call_id=key), frame.only_for)
            case p.ReasoningStart(message_id=key):
                open_items[f"span {key}"] = (p.ReasoningEnd(message_id=key), frame.only_for)
            case p.ReasoningMessageStart(message_id=key):
                open_items[f"thought {key}"] = (
                    p.ReasoningMessageEnd(message_id=key),
                    frame.only_for,
                )
            case p.TextMessageEnd(message_id=key):
                open_items.pop(f"text {key}", None)
            case p.ToolCallEnd(tool_call_id=key):
                open_items.pop(f"call {key}", None)
            case p.ReasoningEnd(message_id=key):
                open_items.pop(f"span {key}", None)
            case p.ReasoningMessageEnd(message_id=key):
                open_items.pop(f"thought {key}", None)
    ends = [*reversed(open_items.values())]
    ends.append((p.RunError(message=CUT_OFF, code=p.ErrorCode.RUN_INTERRUPTED.value), None))
    return [
        eventlog.frame(eventlog.numbered(event, log.head + n), only_for=only_for, not_for=None)
        for n, (event, only_for) in enumerate(ends, start=1)
    ]
