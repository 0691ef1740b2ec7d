"""The pieces of a rich ``LlmRequest`` the model adapters' tests send both ways (the SDK's
and the gateway's): the demo's ``find_screen``, declared as a JSON schema, one call of it
and its result, and an image."""

from __future__ import annotations

from google.genai import types

FIND_SCREEN = types.FunctionDeclaration(
    name="find_screen",
    description="Finds a screen.",
    parameters_json_schema={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
)


def call_and_result() -> tuple[types.FunctionCall, types.FunctionResponse]:
    """A call of ``find_screen`` and its result, paired by id."""
    call = types.FunctionCall(id="call-1", name="find_screen", args={"query": "업무 요청"})
    result = types.FunctionResponse(id="call-1", name="find_screen", response={"id": "MNU-3120"})
    return call, result


def image(data: bytes = b"\x89PNG") -> types.Part:
    return types.Part(inline_data=types.Blob(mime_type="image/png", data=data))
