"""The Dockerfile read as the builder reads it, for the tests that lint it and run its steps.

Enough of the syntax for this repository's Dockerfile: comments and parser directives, lines
continued with a backslash, ``ARG`` defaults substituted into ``FROM``, stages with their
instructions in order, and the exec form (``["cmd", "arg"]``) with any ``--flag=value``
options before it.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from pathlib import Path

from tests.support import ROOT

DOCKERFILE = ROOT / "Dockerfile"


@dataclasses.dataclass
class Stage:
    base: str
    name: str = ""
    instructions: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        """The arguments of each of this stage's ``keyword`` instructions, in order."""
        return [args for name, args in self.instructions if name == keyword]

    def env(self) -> dict[str, str]:
        """The variables the stage's ``ENV`` instructions set (``KEY=value`` pairs)."""
        found: dict[str, str] = {}
        for args in self.all("ENV"):
            found.update(env_pairs(args))
        return found


def env_pairs(args: str) -> dict[str, str]:
    """The variables one ``ENV KEY=value ...`` instruction sets, ``$VAR`` left as written."""
    return dict(pair.partition("=")[::2] for pair in shlex.split(args))


def instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """Each instruction as (KEYWORD, arguments), continuation lines joined, comments gone."""
    found, pending = [], ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, args = pending.strip().partition(" ")
        found.append((keyword.upper(), re.sub(r"\s+", " ", args).strip()))
        pending = ""
    return found


def stages(path: Path = DOCKERFILE) -> list[Stage]:
    """The build stages in order; each ``FROM``'s base with the ``ARG`` defaults put in."""
    args: dict[str, str] = {}
    found: list[Stage] = []
    for keyword, rest in instructions(path):
        if keyword == "ARG" and not found:
            name, _, default = rest.partition("=")
            args[name] = default
        elif keyword == "FROM":
            base, _, name = rest.partition(" AS ")
            base = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args[m[1] or m[2]], base.strip())
            found.append(Stage(base=base, name=name.strip()))
        else:
            found[-1].instructions.append((keyword, rest))
    return found


def exec_form(args: str) -> list[str]:
    """The command of an exec-form instruction, past options such as ``--mount=...`` (and
    past ``CMD`` in a ``HEALTHCHECK``)."""
    while args.startswith("--"):
        args = args.split(" ", 1)[1]
    args = args.removeprefix("CMD ")
    command = json.loads(args)
    assert isinstance(command, list) and all(isinstance(part, str) for part in command), args
    return command
