"""AG-UI messages: what a thread says, as a RunAgentInput resends it and a snapshot shows it.

A message is tagged by its ``role``; content parts (text, image, audio, video, document) by
their ``type``, as AG-UI 1.0 defines them.
"""

from __future__ import annotations

from typing import Any, Literal

from gateway.wire.base import Wire


class TextPart(Wire, tag_field="type", tag="text"):
    text: str
    id: str | None = None


class ImagePart(Wire, tag_field="type", tag="image"):
    source: dict[str, Any]
    id: str | None = None


class AudioPart(Wire, tag_field="type", tag="audio"):
    source: dict[str, Any]
    id: str | None = None


class VideoPart(Wire, tag_field="type", tag="video"):
    source: dict[str, Any]
    id: str | None = None


class DocumentPart(Wire, tag_field="type", tag="document"):
    source: dict[str, Any]
    id: str | None = None


ContentPart = TextPart | ImagePart | AudioPart | VideoPart | DocumentPart


Content = str | list[ContentPart]


class FunctionCall(Wire):
    name: str
    arguments: str


class ToolCall(Wire, omit_defaults=False):
    """A call in an assistant message; ``type`` is always sent, as @ag-ui/client requires,
    and may be left out by a client."""

    id: str
    function: FunctionCall
    type: Literal["function"] = "function"


class UserMessage(Wire, tag_field="role", tag="user"):
    id: str
    content: Content
    name: str | None = None


class AssistantMessage(Wire, tag_field="role", tag="assistant"):
    id: str
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    # The ADK agent that spoke, and the subagent invocation it spoke in (absent: the root).
    name: str | None = None
    subagent_run_id: str | None = None
    # How a reply cut off ended: {"ended": "stopped" | "failed" | "interrupted"}.
    metadata: dict[str, Any] | None = None


class ToolMessage(Wire, tag_field="role", tag="tool"):
    id: str
    content: Content
    tool_call_id: str
    error: str | None = None
    subagent_run_id: str | None = None


class SystemMessage(Wire, tag_field="role", tag="system"):
    id: str
    content: str
    name: str | None = None


class DeveloperMessage(Wire, tag_field="role", tag="developer"):
    id: str
    content: str
    name: str | None = None


class ActivityMessage(Wire, tag_field="role", tag="activity"):
    """Structured progress that is not conversation (an A2UI surface, a press on one)."""

    id: str
    activity_type: str
    content: dict[str, Any]
    subagent_run_id: str | None = None


class ReasoningMessage(Wire, tag_field="role", tag="reasoning"):
    id: str
    content: str
    subagent_run_id: str | None = None


Message = (
    UserMessage
    | AssistantMessage
    | ToolMessage
    | SystemMessage
    | DeveloperMessage
    | ActivityMessage
    | ReasoningMessage
)


def trailing_tool_messages(messages: list[Message]) -> range:
    """Where the tool messages that end ``messages`` are: the results an input carries."""
    first = len(messages)
    while first > 0 and isinstance(messages[first - 1], ToolMessage):
        first -= 1
    return range(first, len(messages))


def text_of(content: Content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if isinstance(part, TextPart))
