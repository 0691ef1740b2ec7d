"""The Gemini API: ``POST /v1beta/models/M:streamGenerateContent?alt=sse`` and ``GET`` the model.

The stream is what ``generativelanguage.googleapis.com`` sends: ``data: <response>`` frames
ended by CRLF CRLF, each a ``GenerateContentResponse`` with one candidate; thought parts
(``"thought": true``) first when ``thinkingConfig.includeThoughts`` asks for them, then the
text, or the function calls of the turn in one chunk with a ``thoughtSignature`` on the
first; ``usageMetadata`` on every chunk, counting so far; ``finishReason`` on the last.
A 429 says when to retry in a ``google.rpc.RetryInfo`` detail, as Google's APIs do.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from google.genai import types

from tests.support.providers.provider import Plan, Provider, sse

MODEL = "gemini-2.5-flash"
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
}
# What the model signs its reasoning with; it must come back with the call it is on.
SIGNATURE = base64.b64encode(b"local-thought-signature").decode()


class GeminiApi(Provider):
    model_name = MODEL
    generation_path = f"/v1beta/models/{MODEL}:streamGenerateContent"
    probe_path = f"/v1beta/models/{MODEL}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {"GOOGLE_GEMINI_BASE_URL": self.url, "GOOGLE_API_KEY": "local-test-key"}

    def listing(self) -> dict[str, Any]:
        return {
            "name": f"models/{MODEL}",
            "displayName": "Gemini 2.5 Flash (local)",
            "inputTokenLimit": 1048576,
            "outputTokenLimit": 65536,
            "supportedGenerationMethods": ["generateContent", "countTokens"],
            "thinking": True,
        }

    def conversation(self, request: dict[str, Any]) -> tuple[list[types.Content], frozenset[str]]:
        contents = [
            types.Content(role=content.get("role"), parts=[_part(p) for p in content["parts"]])
            for content in request["contents"]
        ]
        tools = frozenset(
            declaration["name"]
            for tool in request.get("tools") or []
            for declaration in tool.get("functionDeclarations") or []
        )
        return contents, tools

    def wants_thoughts(self, request: dict[str, Any]) -> bool:
        thinking = (request.get("generationConfig") or {}).get("thinkingConfig") or {}
        # Proto JSON takes a field's name as written too; google-genai sends it so here.
        return bool(thinking.get("includeThoughts") or thinking.get("include_thoughts"))

    def frames(self, plan: Plan, request: dict[str, Any]) -> list[bytes]:
        response_id = uuid.uuid4().hex[:16]
        chunks: list[list[dict[str, Any]]] = [[{"text": t, "thought": True}] for t in plan.thoughts]
        chunks += [[{"text": piece}] for piece in plan.text]
        if plan.calls:
            calls: list[dict[str, Any]] = [
                {"functionCall": {"name": name, "args": args}} for name, args in plan.calls
            ]
            calls[0]["thoughtSignature"] = SIGNATURE
            chunks.append(calls)
        out = []
        thoughts = output = 0
        for index, parts in enumerate(chunks):
            if parts[0].get("thought"):
                thoughts += 1
            else:
                output += 3 * len(parts) if "functionCall" in parts[0] else 1
            usage = {
                "promptTokenCount": plan.prompt_tokens,
                "candidatesTokenCount": output,
                "totalTokenCount": plan.prompt_tokens + output + thoughts,
            }
            if thoughts:
                usage["thoughtsTokenCount"] = thoughts
            candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
            if index == len(chunks) - 1:
                candidate["finishReason"] = "STOP"
            body = {
                "candidates": [candidate],
                "usageMetadata": usage,
                "modelVersion": MODEL,
                "responseId": response_id,
            }
            out.append(sse(body, b"\r\n\r\n"))
        return out

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        error: dict[str, Any] = {
            "code": status,
            "message": message,
            "status": _STATUS.get(status, "UNKNOWN"),
        }
        if status == 429:
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": f"{self.retry_after}s",
                }
            ]
        return {"error": error}

    def retry_headers(self) -> list[tuple[bytes, bytes]]:
        return []  # Google's APIs say it in the body's RetryInfo

    def stream_error(self) -> bytes:
        error = {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}
        return sse({"error": error}, b"\r\n\r\n")


def _part(part: dict[str, Any]) -> types.Part:
    if "functionCall" in part:
        call = part["functionCall"]
        return types.Part(
            function_call=types.FunctionCall(
                id=call.get("id"), name=call["name"], args=call.get("args") or {}
            )
        )
    if "functionResponse" in part:
        answer = part["functionResponse"]
        return types.Part(
            function_response=types.FunctionResponse(
                id=answer.get("id"), name=answer["name"], response=answer.get("response") or {}
            )
        )
    return types.Part(text=part.get("text"), thought=part.get("thought"))
