"""An OpenAI-compatible server: ``POST /v1/chat/completions`` streamed as SSE chunks.

The stream is what OpenAI, vLLM and Ollama send: a first chunk with the role, text in
``delta.content``, tool calls keyed by ``index`` whose ``arguments`` arrive split across
chunks (parallel calls interleaved), a chunk with ``finish_reason``, a last chunk with
``choices: []`` and the ``usage`` when ``stream_options.include_usage`` asks, then
``data: [DONE]``. ``GET /v1/models`` lists the one model.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from typing import Any

from google.genai import types

from tests.support.providers.provider import Plan, Provider, sse

MODEL = "local-model"


class ChatCompletions(Provider):
    model_name = f"openai/{MODEL}"
    generation_path = "/v1/chat/completions"
    probe_path = "/v1/models"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self) -> dict[str, str]:
        return {"OPENAI_BASE_URL": self.url, "OPENAI_API_KEY": "sk-local-test"}

    def listing(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "local"}],
        }

    def conversation(self, request: dict[str, Any]) -> tuple[list[types.Content], frozenset[str]]:
        contents: list[types.Content] = []
        names: dict[str, str] = {}
        for message in request["messages"]:
            role = message["role"]
            if role == "user":
                text = _text(message.get("content"))
                contents.append(types.Content(role="user", parts=[types.Part(text=text)]))
            elif role == "assistant":
                parts = [types.Part(text=message["content"])] if message.get("content") else []
                for call in message.get("tool_calls") or []:
                    names[call["id"]] = call["function"]["name"]
                    args = json.loads(call["function"]["arguments"] or "{}")
                    function_call = types.FunctionCall(
                        id=call["id"], name=call["function"]["name"], args=args
                    )
                    parts.append(types.Part(function_call=function_call))
                contents.append(types.Content(role="model", parts=parts))
            elif role == "tool":
                response = types.FunctionResponse(
                    id=message["tool_call_id"],
                    name=names.get(message["tool_call_id"], ""),
                    response=json.loads(message["content"] or "{}"),
                )
                part = types.Part(function_response=response)
                last = contents[-1] if contents else None
                if last is not None and last.role == "user" and _all_responses(last):
                    last.parts = [*(last.parts or []), part]
                else:
                    contents.append(types.Content(role="user", parts=[part]))
        tools = frozenset(tool["function"]["name"] for tool in request.get("tools") or [])
        return contents, tools

    def wants_thoughts(self, request: dict[str, Any]) -> bool:
        return False  # ADK's Chat Completions adapter reads no reasoning from a stream

    def frames(self, plan: Plan, request: dict[str, Any]) -> list[bytes]:
        completion = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        created = int(time.time())
        usage_asked = bool((request.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            body: dict[str, Any] = {
                "id": completion,
                "object": "chat.completion.chunk",
                "created": created,
                "model": request["model"],
                "system_fingerprint": "fp_local",
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
            if usage_asked:
                body["usage"] = None
            return sse(body)

        out = [chunk({"role": "assistant", "content": ""})]
        out += [chunk({"content": piece}) for piece in plan.text]
        streams = []
        for index, (name, args) in enumerate(plan.calls):
            start = {
                "index": index,
                "id": f"call_{uuid.uuid4().hex[:20]}",
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            out.append(chunk({"tool_calls": [start]}))
            arguments = json.dumps(args, ensure_ascii=False)
            third = max(1, len(arguments) // 3)
            streams.append(
                [
                    {"index": index, "function": {"arguments": arguments[at : at + third]}}
                    for at in range(0, len(arguments), third)
                ]
            )
        # Parallel calls' arguments interleaved: only the index says whose a piece is.
        for piece in itertools.chain.from_iterable(itertools.zip_longest(*streams)):
            if piece is not None:
                out.append(chunk({"tool_calls": [piece]}))
        out.append(chunk({}, "tool_calls" if plan.calls else "stop"))
        if usage_asked:
            usage = {
                "prompt_tokens": plan.prompt_tokens,
                "completion_tokens": plan.output_tokens,
                "total_tokens": plan.prompt_tokens + plan.output_tokens,
            }
            body = {
                "id": completion,
                "object": "chat.completion.chunk",
                "created": created,
                "model": request["model"],
                "choices": [],
                "usage": usage,
            }
            out.append(sse(body))
        out.append(b"data: [DONE]\n\n")
        return out

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {429: "requests", 500: "server_error"}.get(status, "invalid_request_error")
        code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def stream_error(self) -> bytes:
        return sse(
            {
                "error": {
                    "message": "The server had an error while processing your request.",
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            }
        )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if part.get("type") == "text")


def _all_responses(content: types.Content) -> bool:
    return all(part.function_response is not None for part in content.parts or [])
