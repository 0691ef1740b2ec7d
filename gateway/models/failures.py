"""What a model provider's failure means to the person waiting: a code and a sentence.

The failures a user will meet, from the SDKs ADK's adapters use (openai for ``OpenAILlm``,
google-genai for ``Gemini``, and httpx under both): the endpoint cannot be reached or
times out, the key is missing (google-genai refuses to build its client: no API key, no
Vertex AI project, no Google credentials) or refused, the model is unknown, the provider
rate limits (and says when to try again), fails before or during its stream, the connection
breaks mid-stream, or a chunk cannot be read. Each becomes a ``ModelFailure`` (a sentence
that says what to fix, and one log line); anything else is not a provider's failure, and
stays unexpected (logged with its traceback under an error id).
"""

from __future__ import annotations

import dataclasses
import email.utils
import json
import re
import sys
import time
from collections.abc import Iterator
from typing import Any

from google.genai import errors as genai_errors

from gateway import wire as p
from gateway.adk.hosting import first_line

__all__ = ["ModelFailure", "classify", "retry_after"]

# The longest wait a sentence quotes as seconds; longer ones are quoted in minutes.
SECONDS_SHOWN = 90


@dataclasses.dataclass(frozen=True)
class ModelFailure:
    """``sentence`` is the client's; ``detail`` (what the provider said) is the log's."""

    code: p.ErrorCode
    sentence: str
    detail: str


def classify(error: BaseException) -> ModelFailure | None:
    """The failure ``error`` (raised by a model call) is, or None if it is none of them."""
    if _without_credentials(error):
        return _failure(
            NO_CREDENTIALS, f"no credentials: {type(error).__name__}: {first_line(error)}"
        )
    kind = _openai_kind(error) or _transport_kind(error)
    said = _said(error)
    if isinstance(kind, int):
        return _refused(kind, retry_after(error), said)
    if kind is not None:
        return _failure(_SENTENCES[kind], said)
    return None


NO_CREDENTIALS = (
    "The gateway has no credentials for the model provider; the operator has to set the API "
    "key (GOOGLE_API_KEY for Gemini) or the Vertex AI project and credentials."
)

# What google-genai says when it cannot build a client for lack of credentials.
_MISSING_CREDENTIALS = ("No API key was provided", "Project or API key must be set")


def _without_credentials(error: BaseException) -> bool:
    """google-genai found no key or project, or google-auth no credentials (Vertex AI)."""
    if type(error).__name__ == "DefaultCredentialsError" and type(error).__module__.startswith(
        "google.auth"
    ):
        return True
    return isinstance(error, ValueError) and any(
        said in str(error) for said in _MISSING_CREDENTIALS
    )


_SENTENCES = {
    "timeout": "The model took too long to answer; try again in a moment.",
    "connect": "The model cannot be reached right now; try again in a moment.",
    "broke": "The connection to the model broke while it answered; try again in a moment.",
    "stream": "The model provider failed while it answered; try again in a moment.",
    "unreadable": "The model provider sent an answer the gateway could not read; try again.",
}


def _openai_kind(error: BaseException) -> int | str | None:
    """An openai SDK error's HTTP status, or what went wrong; None for any other error."""
    if not _from_openai(error):
        return None
    import openai  # imported already: the error is its

    if isinstance(error, openai.APIStatusError):
        return error.status_code
    if isinstance(error, openai.APITimeoutError):
        return "timeout"
    if isinstance(error, openai.APIConnectionError):
        return "connect"
    if isinstance(error, openai.APIError):  # the provider's error event in a 200 stream
        return "stream"
    return None


def _from_openai(error: BaseException) -> bool:
    return type(error).__module__.startswith("openai")


def _transport_kind(error: BaseException) -> int | str | None:
    """google-genai's HTTP status, or what went wrong in the HTTP client under an SDK."""
    if isinstance(error, genai_errors.APIError):
        return error.code if isinstance(error.code, int) and error.code >= 400 else "stream"
    if isinstance(error, json.JSONDecodeError | genai_errors.UnknownApiResponseError):
        return "unreadable"
    for kind in ("timeout", "connect", "broke"):
        if isinstance(error, _transport(kind)):
            return kind
    return None


def retry_after(error: BaseException) -> float | None:
    """The seconds a 429 asks to wait: ``retry-after-ms``, ``retry-after`` (seconds or an
    HTTP date), or a google.rpc.RetryInfo ``retryDelay`` in the error's details."""
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return float(ms) / 1000
        if (value := headers.get("retry-after")) is not None:
            return _seconds_or_date(str(value))
    except ValueError:
        pass
    for detail in _details(error):
        delay = detail.get("retryDelay")
        if isinstance(delay, str) and (match := re.fullmatch(r"(\d+(?:\.\d+)?)s", delay)):
            return float(match.group(1))
    return None


def _refused(status: int, wait: float | None, said: str) -> ModelFailure:
    if status == 429:
        when = f"in {_duration(wait)}" if wait is not None else "in a minute"
        # Google says RESOURCE_EXHAUSTED and "quota" for a quota used up, OpenAI
        # insufficient_quota: waiting may not be enough, and the operator should know.
        sentence = (
            f"The model provider's quota for the gateway is used up; try again {when}, or the "
            "operator has to raise the quota."
            if "quota" in said.lower()
            else f"The model provider is limiting how often it is asked; try again {when}."
        )
        return ModelFailure(
            p.ErrorCode.RATE_LIMIT_EXCEEDED,
            sentence,
            f"HTTP 429 (retry after {_duration(wait)}): {said}" if wait else f"HTTP 429: {said}",
        )
    if status in (401, 403) or (status == 400 and "API_KEY_INVALID" in said):
        return _failure(
            "The model provider refused the gateway's credentials; the operator has to fix "
            "the API key.",
            f"HTTP {status}: {said}",
        )
    if status == 404:
        return _failure(
            "The model provider does not know the model the agent asks for; the operator has "
            "to check the model name.",
            f"HTTP 404: {said}",
        )
    if status >= 500:
        return _failure(
            f"The model provider failed (HTTP {status}); try again in a moment.",
            f"HTTP {status}: {said}",
        )
    return _failure(
        f"The model provider refused the request (HTTP {status}); the operator has to check "
        "the model's settings.",
        f"HTTP {status}: {said}",
    )


def _failure(sentence: str, detail: str) -> ModelFailure:
    return ModelFailure(p.ErrorCode.AGENT_ERROR, sentence, detail)


# The HTTP clients' exceptions under the SDKs, by what went wrong: google-genai uses httpx
# (or httpx2 where GOOGLE_GENAI_HTTP_CLIENT says so, or aiohttp where it is installed:
# gateway.optional_imports); openai wraps httpx's, but not mid-stream.
_TRANSPORT_MODULES = ("httpx", "httpx2", "aiohttp")
_TRANSPORT_NAMES = {
    "timeout": ("TimeoutException", "ServerTimeoutError"),
    "connect": ("ConnectError", "ClientConnectorError"),
    "broke": ("RemoteProtocolError", "ReadError", "ServerDisconnectedError", "ClientPayloadError"),
}


def _transport(kind: str) -> tuple[type[BaseException], ...]:
    """The exception types of ``kind`` of the transports imported: one that is not cannot
    have raised (importing it to ask would cost aiohttp's 9.6 MiB on a first failure)."""
    found: list[type[BaseException]] = [TimeoutError] if kind == "timeout" else []
    for module_name in _TRANSPORT_MODULES:
        if (module := sys.modules.get(module_name)) is not None:
            found += [getattr(module, n) for n in _TRANSPORT_NAMES[kind] if hasattr(module, n)]
    return tuple(found)


def _said(error: BaseException) -> str:
    """What the provider said: its error message, else the exception's first line."""
    if isinstance(error, genai_errors.APIError):
        return f"{error.status or ''} {error.message or ''}".strip() + _reason(error)
    body = getattr(error, "body", None)  # openai: the response's "error" object
    if isinstance(body, dict) and isinstance(message := body.get("message"), str):
        code = body.get("code") or body.get("type")
        return message + (f" ({code})" if code else "")
    cause = error.__cause__
    if _from_openai(error) and cause is not None:  # "Connection error.": the cause says what
        return f"{first_line(error)} ({type(cause).__name__}: {first_line(cause)})"
    return f"{type(error).__name__}: {first_line(error)}"


def _reason(error: genai_errors.APIError) -> str:
    reasons = [str(d["reason"]) for d in _details(error) if isinstance(d.get("reason"), str)]
    return f" ({', '.join(reasons)})" if reasons else ""


def _details(error: BaseException) -> Iterator[dict[str, Any]]:
    body: Any = getattr(error, "details", None)  # google-genai: the response's JSON
    if isinstance(body, dict):
        details = (body.get("error") or {}).get("details") or []
        yield from (d for d in details if isinstance(d, dict))


def _seconds_or_date(value: str) -> float:
    try:
        return max(0.0, float(value))
    except ValueError:
        moment = email.utils.parsedate_to_datetime(value)  # raises ValueError if neither
        return max(0.0, moment.timestamp() - time.time())


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds <= SECONDS_SHOWN:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min"
