"""The unchanged gateway, and what it has imported once it is up and idle, for
``bench_footprint``: which venv a figure is for, read from the modules themselves.

Idle RSS is mostly imports, and some could be there only because the venv has them:
google-genai imports aiohttp and httpx2 when it finds them, httpx its command line's
pygments (``gateway/optional_imports.py`` keeps the last two out; aiohttp, which google-genai
then sends with, stays). Then a figure from this
checkout's venv (the test extras installed) would not be a deployment's (``pip install .``).
Once /ping answers and the gateway has sat still for a second, a thread prints one JSON line
and ends the process: the imported modules (``modules``), and the top-level packages among
them that no distribution in the gateway's own requirements (``agent-gateway`` and what it
requires, extras left out) provides (``outside``), each with the distributions that do;
and how many pydantic models each package has built (``built``).
``tests/test_idle_imports.py`` reads the modules the same way.

    python -m scripts._idle_census [gateway flags...]
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request

from gateway import __main__ as gateway

# How long the gateway sits still after /ping first answers, as bench_footprint's idle.
SETTLE_SECONDS = 1.0


def requirements(root: str = "agent-gateway") -> set[str]:
    """The distributions ``root`` requires, all the way down, extras left out (normalized
    names)."""
    import importlib.metadata as metadata

    from packaging.requirements import Requirement

    found: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        key = _normalized(name)
        if key in found:
            continue
        found.add(key)
        try:
            required = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in required:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


def census() -> dict[str, object]:
    # Read before the census imports what it needs to read the distributions.
    modules = sorted(sys.modules.copy())
    import importlib.metadata as metadata

    provided = metadata.packages_distributions()
    wanted = requirements()
    tops = {name.split(".")[0] for name in modules}
    outside = {
        top: sorted(set(provided[top]))
        for top in sorted(tops)
        if top in provided and not wanted & {_normalized(d) for d in provided[top]}
    }
    return {"modules": modules, "outside": outside, "built": built_models()}


def built_models() -> dict[str, int]:
    """How many pydantic models each package has built (its validator made) by now: those
    of ``gateway.deferred_schemas.DEFERRED`` are built when first used."""
    import pydantic

    seen: set[type[pydantic.BaseModel]] = set()
    todo: list[type[pydantic.BaseModel]] = [pydantic.BaseModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    built: dict[str, int] = {}
    for model in seen:
        if model.__dict__.get("__pydantic_complete__"):
            top = ".".join(model.__module__.split(".")[:2])
            built[top] = built.get(top, 0) + 1
    return built


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def report(port: str) -> None:
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=1):
                break
        except OSError:
            time.sleep(0.05)
    time.sleep(SETTLE_SECONDS)
    print(json.dumps(census()), flush=True)
    os._exit(0)


def main() -> int:
    flags = sys.argv[1:]
    port = flags[flags.index("--port") + 1]
    threading.Thread(target=report, args=(port,), daemon=True).start()
    return gateway.main(flags)


if __name__ == "__main__":
    sys.exit(main())
