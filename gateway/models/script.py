"""A model that plays a script file, so anyone can try an agent offline, without a key.

``GATEWAY_MODEL=script:turns.json agent-gateway serve my.agent:root_agent`` puts it in
place of every LlmAgent's model. The script is a JSON object with a list of rules; on every
model call the first rule that matches what the model is shown decides the reply::

    {"rules": [
      {"user": "expenses", "call": {"name": "list_expenses"}},
      {"after": "list_expenses", "say": "You have {count} expenses."},
      {"user": "open (?P<id>E-\\\\d+)",
       "call": {"name": "showExpense", "args": {"expenseId": "{id}"}}},
      {"after": "showExpense", "result": {"status": "opened"}, "say": "I opened {expenseId}."},
      {"after": "showExpense", "say": "Your browser did not open it ({status})."}
    ]}

What a rule matches:

- ``user``: a regular expression searched (case-insensitively) in the user's last words.
  Another agent's turn that ADK relays to a sub-agent is not the user's words.
- ``after``: the name of the tool whose response the model was just given. A rule without
  ``after`` matches only at the start of a turn, when the user has spoken last; a rule with
  one only right after that tool's response, so a turn cannot loop on its first rule.
- ``result``: fields the response must hold, with these values (``a.b`` reaches into nested
  objects, ``items.0`` into lists).

What it does, exactly one of:

- ``say``: text, streamed in word-sized chunks, that ends the turn.
- ``call``: one function call ``{"name", "args"}`` or a list of them, made together
  (``transfer_to_agent`` hands the turn to a sub-agent the ADK way).

``{name}`` in the text or in an argument is a field of the tool response, else an argument
of the call it answers, else a named (or numbered) group of the rule's ``user`` pattern; an
argument that is only ``{name}`` keeps the value's type. ``{{`` and ``}}`` are braces. A
rule whose placeholders cannot all be filled does not match, so the next rule can say it
another way. A rule calls only tools the request offers, with arguments their declarations
accept (``transfer_to_agent`` names only the agents this agent may hand off to), else it
does not match either: one script can serve a coordinator and its sub-agents, each meeting
the rules it can follow. When no rule matches, the model says ``FALLBACK``.

A ``comment`` (on the script or a rule) is for its reader. A script that cannot be used
fails at start-up with a ``ModelError`` naming the file and the rule.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Mapping, Sequence
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import msgspec
import pydantic
from google.adk.models.llm_request import LlmRequest
from google.genai import types
from jsonschema.validators import Draft202012Validator, validator_for  # type: ignore[import-untyped]

from gateway.models import ModelError
from gateway.models.offline import Call, OfflineLlm, Reply, Say
from gateway.store.cut_off import before_restart
from gateway.translate.tool_results import dump_json
from gateway.wire.pointers import MISSING, value_at

__all__ = ["FALLBACK", "Script", "ScriptLlm", "Seen", "ToolResponse", "load", "read", "respond"]

log = logging.getLogger(__name__)

FALLBACK = (
    "I am an offline script model, and my script ({script}) has no rule for this, "
    "so I have no answer to give."
)
# ADK fences what it relays into a request (another agent's turn, a dynamic instruction)
# with markers like <<<BEGIN_QUOTED_AGENT_CONTENT>>>: such text is not the user's words.
_ADK_FENCE = "<<<BEGIN_"
# What ADK's PreloadMemoryTool puts before the user's words (or after a tool's response)
# holds past conversations: neither the user's words now nor a response.
_ADK_MEMORY = "<PAST_CONVERSATIONS>"
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_PATH = re.compile(r"[\w-]+(?:\.[\w-]+)*")


# --- the file, as written -------------------------------------------------------------------


class _CallSpec(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    args: dict[str, Any] = {}


class _RuleSpec(msgspec.Struct, forbid_unknown_fields=True):
    user: str | None = None
    after: str | None = None
    result: dict[str, Any] | None = None
    say: str | None = None
    call: _CallSpec | list[_CallSpec] | None = None
    comment: str = ""


class _ScriptSpec(msgspec.Struct, forbid_unknown_fields=True):
    rules: list[_RuleSpec]
    comment: str = ""


# --- the script, checked --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Template:
    """Text with ``{placeholders}``; ``whole`` is the path when the text is one placeholder."""

    pieces: tuple[str | tuple[str, ...], ...]

    @property
    def whole(self) -> tuple[str, ...] | None:
        only = self.pieces[0] if len(self.pieces) == 1 else None
        return only if isinstance(only, tuple) else None

    def fill(self, values: Sequence[Mapping[str, Any]]) -> str | None:
        text = []
        for piece in self.pieces:
            if isinstance(piece, str):
                text.append(piece)
                continue
            value = _lookup(piece, values)
            if value is MISSING:
                return None
            text.append(value if isinstance(value, str) else _as_text(value))
        return "".join(text)


@dataclasses.dataclass(frozen=True)
class _Rule:
    number: int
    user: re.Pattern[str] | None
    after: str | None
    result: Mapping[tuple[str, ...], Any]
    say: _Template | None
    calls: tuple[tuple[str, Any], ...]


@dataclasses.dataclass(frozen=True)
class Script:
    """The rules of one script file, checked; ``name`` is the file's, for the fallback."""

    name: str
    rules: tuple[_Rule, ...]


def load(path: Traversable | Path | str) -> Script:
    """Reads and checks a script file; ModelError names the file and the rule."""
    path = Path(path) if isinstance(path, str) else path
    where = f"Script file {path}"
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ModelError(f"{where} cannot be read ({error.strerror or error}).") from None
    try:
        spec = msgspec.json.decode(raw, type=_ScriptSpec)
    except msgspec.ValidationError as error:
        raise ModelError(f"{where}: {_located(str(error))}.") from None
    except msgspec.DecodeError as error:
        raise ModelError(f"{where} is not valid JSON ({error}).") from None
    if not spec.rules:
        raise ModelError(f"{where} has no rules; add at least one to 'rules'.")
    rules = tuple(_rule(number, rule, where) for number, rule in enumerate(spec.rules, 1))
    return Script(path.name, rules)


def _located(message: str) -> str:
    """msgspec's error with its ``$.rules[2].call`` path said as "rule 3, call"."""
    text, _, path = message.partition(" - at `")
    path = path.rstrip("`")
    found = re.match(r"\$\.rules\[(\d+)\]\.?(.*)", path)
    if found:
        rest = f" ({found.group(2)})" if found.group(2) else ""
        if "unknown field" in text and not rest:
            text += "; a rule has user, after, result, say or call (and a comment)"
        return f"rule {int(found.group(1)) + 1}{rest}: {text}"
    return f"{text} (at {path})" if path and path != "$" else text


def _rule(number: int, spec: _RuleSpec, where: str) -> _Rule:
    def problem(text: str) -> ModelError:
        return ModelError(f"{where}: rule {number} {text}.")

    if (spec.say is None) == (spec.call is None):
        raise problem(
            "has both 'say' and 'call'; a rule does one of them"
            if spec.say is not None
            else "has neither 'say' nor 'call'; give it one"
        )
    if spec.result is not None and spec.after is None:
        raise problem("has 'result' but no 'after'; 'result' checks the response of that tool")
    if spec.after is not None and not spec.after:
        raise problem("has an empty 'after'; name the tool whose response it follows")
    user = None
    if spec.user is not None:
        try:
            user = re.compile(spec.user, re.IGNORECASE)
        except re.error as error:
            raise problem(f"'user' is not a valid regular expression ({error})") from None
    result = {}
    for key, value in (spec.result or {}).items():
        if not _PATH.fullmatch(key):
            raise problem(f"'result' key {key!r} is not a field name or a path like 'a.b'")
        result[tuple(key.split("."))] = value
    calls: list[tuple[str, Any]] = []
    specs = [spec.call] if isinstance(spec.call, _CallSpec) else spec.call or []
    if spec.call is not None and not specs:
        raise problem("has an empty 'call' list; give it at least one call")
    for index, call in enumerate(specs):
        if not call.name:
            raise problem(f"call {index + 1} has an empty 'name'")
        calls.append((call.name, _compile(call.args, lambda text: problem(f"'args' {text}"))))
    say = None
    if spec.say is not None:
        if not spec.say.strip():
            raise problem("has an empty 'say'")
        say = _template(spec.say, lambda text: problem(f"'say' {text}"))
    return _Rule(number, user, spec.after, result, say, tuple(calls))


def _template(text: str, problem: Any) -> _Template:
    pieces: list[str | tuple[str, ...]] = []
    end = 0
    for found in _PLACEHOLDER.finditer(text):
        pieces.append(text[end : found.start()])
        end = found.end()
        token = found.group(0)
        if token in ("{{", "}}"):
            pieces.append(token[0])
        elif found.group(1) is None:
            raise problem(f"has a lone {token!r} at {found.start()}; write {token * 2!r}")
        elif not _PATH.fullmatch(found.group(1)):
            raise problem(f"has {token!r}, which is not a field name or a path like 'a.b'")
        else:
            pieces.append(tuple(found.group(1).split(".")))
    pieces.append(text[end:])
    return _Template(tuple(piece for piece in pieces if piece != ""))


def _compile(value: Any, problem: Any) -> Any:
    """Arguments with every string a template, checked."""
    if isinstance(value, str):
        return _template(value, problem)
    if isinstance(value, dict):
        return {key: _compile(item, problem) for key, item in value.items()}
    if isinstance(value, list):
        return [_compile(item, problem) for item in value]
    return value


# --- what the model is shown ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ToolResponse:
    """The tool response the model was just given, and the arguments of its call."""

    name: str
    result: Mapping[str, Any]
    args: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Seen:
    """What a model call shows: the user's last words, the response it follows (None at
    the start of a turn), and the tools offered, each with its parameters' JSON Schema."""

    words: str
    response: ToolResponse | None
    tools: Mapping[str, Mapping[str, Any] | None]


def read(llm_request: LlmRequest) -> Seen:
    # After a restart cut the reply to a response off, the script replies to it again.
    contents = [c for c in before_restart(llm_request.contents) if not _recalled(c)]
    return Seen(_words(contents), _response(contents), _tools(llm_request))


def _recalled(content: types.Content) -> bool:
    return content.role == "user" and any(
        _ADK_MEMORY in (p.text or "") for p in content.parts or ()
    )


def _words(contents: Sequence[types.Content]) -> str:
    for content in reversed(contents):
        if content.role != "user":
            continue
        texts = [
            part.text
            for part in content.parts or ()
            if part.text and not part.thought and _ADK_FENCE not in part.text
        ]
        if texts:
            return " ".join(texts)
    return ""


def _response(contents: Sequence[types.Content]) -> ToolResponse | None:
    if not contents or contents[-1].role != "user":
        return None
    responses = [part.function_response for part in contents[-1].parts or ()]
    answered = [response for response in responses if response is not None]
    if not answered:
        return None
    last = answered[-1]
    # ADK strips call ids before the model: the call is the latest one of that name.
    args: Mapping[str, Any] = {}
    for content in reversed(contents[:-1]):
        calls = [p.function_call for p in content.parts or () if p.function_call]
        named = [call for call in calls if call.name == last.name]
        if content.role == "model" and named:
            args = named[-1].args or {}
            break
    # What the tool returned, as JSON: a pydantic model or a dataclass as its fields.
    response = json.loads(dump_json(last.response or {}))
    return ToolResponse(last.name or "", response, args)


def _tools(llm_request: LlmRequest) -> dict[str, Mapping[str, Any] | None]:
    schemas: dict[str, Mapping[str, Any] | None] = dict.fromkeys(llm_request.tools_dict)
    for tool in llm_request.config.tools or ():
        for declaration in getattr(tool, "function_declarations", None) or ():
            if declaration.name in schemas and isinstance(declaration.parameters_json_schema, dict):
                schemas[declaration.name] = declaration.parameters_json_schema
    return schemas


# --- playing it -----------------------------------------------------------------------------


def respond(script: Script, seen: Seen) -> Reply:
    """The reply of the first rule that matches, or the fallback."""
    for rule in script.rules:
        reply = _apply(rule, seen)
        if reply is not None:
            return reply
    return Say(FALLBACK.format(script=script.name))


def _apply(rule: _Rule, seen: Seen) -> Reply | None:
    response = seen.response
    if rule.after is None:
        if response is not None:
            return None
    elif response is None or response.name != rule.after:
        return None
    groups: dict[str, Any] = {}
    if rule.user is not None:
        found = rule.user.search(seen.words)
        if found is None:
            return None
        numbered = enumerate(found.groups(), 1)
        groups = {str(n): g for n, g in numbered if g is not None}
        groups |= {k: g for k, g in found.groupdict().items() if g is not None}
    values: list[Mapping[str, Any]] = [response.result, response.args] if response else []
    values.append(groups)
    for path, expected in rule.result.items():
        if _lookup(path, values[:1]) != expected:
            return None
    if rule.say is not None:
        text = rule.say.fill(values)
        return None if text is None else Say(text)
    calls = []
    for name, template in rule.calls:
        args = _fill(template, values)
        if not isinstance(args, dict) or not _offered(rule, name, args, seen):
            return None
        calls.append((name, args))
    return Call(calls)


def _offered(rule: _Rule, name: str, args: dict[str, Any], seen: Seen) -> bool:
    if name not in seen.tools:
        log.debug("script rule %d skipped: %s is not offered to this agent", rule.number, name)
        return False
    schema = seen.tools[name]
    if schema is None:
        return True
    validator = validator_for(schema, default=Draft202012Validator)(schema)
    error = next(iter(validator.iter_errors(args)), None)
    if error is not None:
        log.debug(
            "script rule %d skipped: %s does not take %s (%s)",
            rule.number,
            name,
            args,
            error.message,
        )
        return False
    return True


def _fill(template: Any, values: Sequence[Mapping[str, Any]]) -> Any:
    """The arguments with their placeholders filled; MISSING if one cannot be."""
    if isinstance(template, _Template):
        if template.whole:
            return _lookup(template.whole, values)
        text = template.fill(values)
        return MISSING if text is None else text
    if isinstance(template, dict):
        filled = {key: _fill(item, values) for key, item in template.items()}
        return MISSING if any(item is MISSING for item in filled.values()) else filled
    if isinstance(template, list):
        items = [_fill(item, values) for item in template]
        return MISSING if any(item is MISSING for item in items) else items
    return template


def _lookup(path: tuple[str, ...], values: Sequence[Mapping[str, Any]]) -> Any:
    """The value at ``path`` in the first of ``values`` that has its first key."""
    for source in values:
        if path[0] in source:
            return value_at(source, path)
    return MISSING


def _as_text(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


class ScriptLlm(OfflineLlm):
    """The script model: ``reply`` plays ``script`` on what each request shows."""

    model: str = "script"
    # Every rule in every log line that shows the model would bury the line.
    script: Script = pydantic.Field(repr=False)

    @classmethod
    def from_file(cls, path: Traversable | Path | str, pace_ms: float = 0.0) -> ScriptLlm:
        script = load(path)
        return cls(model=f"script:{script.name}", script=script, pace_ms=pace_ms)

    def reply(self, llm_request: LlmRequest) -> Reply:
        return respond(self.script, read(llm_request))
