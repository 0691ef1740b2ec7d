"""One of each AG-UI event the gateway emits, as the wire's types (``gateway.wire``), for the
tests of what every event becomes: its 0.0.x shape, and what each official client accepts."""

from __future__ import annotations

from gateway import wire as p


def every_event() -> list[p.Event]:
    """One of each event the gateway emits, with every field 1.0 added that it fills."""
    return [
        p.RunStarted(thread_id="t", run_id="r", protocol_version=p.PROTOCOL_VERSION),
        p.TextMessageStart(message_id="u", role="user"),
        p.TextMessageContent(message_id="u", delta="안녕"),
        p.TextMessageEnd(message_id="u"),
        p.ToolCallStart(tool_call_id="c", tool_call_name="f", parent_message_id="a"),
        p.ToolCallArgs(tool_call_id="c", delta="{}"),
        p.ToolCallEnd(tool_call_id="c"),
        p.ToolCallResult(
            message_id="tr",
            tool_call_id="c",
            content=[p.TextPart(text="done"), p.ImagePart(source={"type": "file", "value": "f"})],
            role="tool",
        ),
        p.StateSnapshot(snapshot={"a": 1}),
        p.StateDelta(delta=[{"op": "add", "path": "/b", "value": 2}]),
        p.MessagesSnapshot(
            messages=[
                p.UserMessage(
                    id="u",
                    content=[
                        p.TextPart(text="이 사진"),
                        p.ImagePart(source={"type": "url", "value": "https://x/y.png"}),
                        p.ImagePart(source={"type": "file", "value": "file-1"}),
                    ],
                ),
                p.AssistantMessage(id="a", content="x", metadata={"ended": "stopped"}),
                p.ToolMessage(id="tm", tool_call_id="c", content=[p.TextPart(text="{}")]),
            ]
        ),
        p.Custom(name="gateway.notice", value={"code": "X", "message": "x"}),
        p.ReasoningStart(message_id="r1"),
        p.ReasoningMessageStart(message_id="r1", role="reasoning"),
        p.ReasoningMessageContent(message_id="r1", delta="hmm"),
        p.ReasoningMessageEnd(message_id="r1"),
        p.ReasoningEnd(message_id="r1"),
        p.SubagentStarted(subagent_run_id="s", name="helper"),
        p.SubagentFinished(subagent_run_id="s", outcome=p.SuspendedOutcome(interrupt_ids=["i"])),
        p.RunFinished(
            thread_id="t",
            run_id="r",
            outcome=p.SuccessOutcome(pending_tool_call_ids=["c"]),
            usage=[p.TokenUsage(model="m", input_tokens=1, cache_write_input_tokens=1)],
        ),
    ]
