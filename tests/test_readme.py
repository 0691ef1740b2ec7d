"""Every code block of the README is run or checked, so an example can no longer be wrong.

The README's fenced blocks are read by their language tag. ``json`` blocks must parse;
``python`` blocks compile, and run: the first requests against a gateway on loopback (the
demo, its port put for 8080), the embedding example with a stand-in ``my_pkg``; ``bash``
blocks are split into commands, and each is run (``curl`` and ``agent-gateway-chat`` against
the gateway) or checked where running it would install or run the suite (the extra, the test
tier, the module or the file it names exists). A block the test cannot run says why just
above it, ``<!-- not run: ... -->``; a command no rule knows fails the test, so a new kind of
example comes with its check. The table of contents is the one ``scripts/readme_toc.py``
writes, and the demo's users table says what the demo's directory and policy do.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts import readme_toc
from scripts._bench import LocalGateway, local_gateway

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(
    r"(?:<!-- not run: (?P<why>[^>]+?) -->\n)?^```(?P<tag>\w*)\n(?P<body>.*?)^```$", re.S | re.M
)
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
BIN = Path(sys.executable).parent
MOST_NOT_RUN = 4


@dataclasses.dataclass(frozen=True)
class Block:
    line: int
    tag: str
    body: str
    not_run: str | None

    def __str__(self) -> str:
        return f"README.md:{self.line} ({self.tag})"


def blocks(tag: str) -> list[Block]:
    return [
        Block(README.count("\n", 0, found.start("tag")) + 1, tag, found["body"], found["why"])
        for found in FENCE.finditer(README)
        if found["tag"] == tag
    ]


def commands(block: Block) -> list[str]:
    """A bash block's commands as written: a line ends one unless it ends in a backslash or
    inside a quote (a JSON body over several lines); comment-only lines are dropped."""
    found, pending = [], ""
    for line in block.body.splitlines():
        pending += line + "\n"
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:
            continue  # a quote still open
        if pending.rstrip().endswith("\\"):
            continue
        if words:
            found.append(pending.strip())
        pending = ""
    return found


@pytest.fixture(scope="module")
def gateway() -> Iterator[LocalGateway]:
    with local_gateway() as running:
        yield running


def on(gateway: LocalGateway, text: str) -> str:
    return text.replace("127.0.0.1:8080", f"127.0.0.1:{gateway.port}")


def run(
    argv: list[str], *, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs a README command as a reader would, with this venv's commands on PATH."""
    path = f"{BIN}{os.pathsep}{os.environ['PATH']}"
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "PATH": path, **(env or {})},
    )
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done


def test_every_block_is_tagged_and_few_are_not_run() -> None:
    found = list(FENCE.finditer(README))
    assert len(found) >= 10
    not_run = [match["why"] for match in found if match["why"]]
    # Short on purpose: an example nobody runs is the one that goes stale.
    assert len(not_run) <= MOST_NOT_RUN, not_run


@pytest.mark.parametrize("block", blocks("json"), ids=str)
def test_json_blocks_parse(block: Block) -> None:
    json.loads(block.body)


@pytest.mark.parametrize("block", blocks("python"), ids=str)
def test_python_blocks_compile(block: Block) -> None:
    compile(block.body, str(block), "exec")


def test_the_websocket_example_approves_a_request(gateway: LocalGateway) -> None:
    (example,) = [block for block in blocks("python") if "websockets" in block.body]
    done = run([sys.executable, "-c", on(gateway, example.body)])
    assert "업무 요청 R-1042 건을 승인합니다" in done.stdout
    assert "R-1042 요청을 승인했습니다" in done.stdout


def test_the_embedding_example_mounts_the_gateway(tmp_path: Path) -> None:
    (example,) = [block for block in blocks("python") if "create_app" in block.body]
    package = tmp_path / "my_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    # The reader's agent: any ADK agent; an example's stands in.
    agent = "from gateway.examples.expenses.agent import root_agent  # noqa: F401\n"
    (package / "agent.py").write_text(agent)
    check = "\nassert any(getattr(r, 'path', '') == '/agent' for r in app.routes), app.routes\n"
    (tmp_path / "service.py").write_text(example.body + check)
    run([sys.executable, "service.py"], cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})


def every_command() -> list[tuple[Block, str]]:
    return [(block, command) for block in blocks("bash") for command in commands(block)]


@pytest.mark.parametrize(("block", "command"), every_command(), ids=lambda x: str(x)[:60])
def test_bash_commands_run_or_hold(block: Block, command: str, gateway: LocalGateway) -> None:
    words = shlex.split(command, comments=True)
    if block.not_run:
        return
    if words[0] == "curl":
        done = run(["bash", "-c", on(gateway, command)])
        assert '"type":"RUN_FINISHED"' in done.stdout, done.stdout
        assert "RUN_ERROR" not in done.stdout
    elif "|" in words and words[words.index("|") + 1] == "agent-gateway-chat":
        done = run(["bash", "-c", command], env={"GATEWAY_PORT": str(gateway.port)})
        assert "[approval] rejected" in done.stdout, done.stdout
    elif words[:3] == ["python3", "-m", "venv"]:
        # The first line of the README: the install, then the demo; each part checked.
        assert "&&" in words and "agent-gateway" in command
    elif words[0].endswith("pip") or words[:2] == ["pip", "install"]:
        extras = re.findall(r"\.\[(\w+)\]", command)
        assert set(extras) <= set(PYPROJECT["project"]["optional-dependencies"]), extras
    elif words[0] == "bash":
        assert (ROOT / words[1]).is_file(), words[1]
    elif words[0].endswith("pytest"):
        markers = [
            line.split(":")[0] for line in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]
        ]
        assert words[words.index("-m") + 1] in markers
    elif words[:2] == ["agent-gateway", "serve"]:
        target = words[2]
        if target.startswith(("my_pkg", "./my_agent")):
            return  # the reader's own agent: test_the_embedding_example_mounts_the_gateway
        assert importlib.util.find_spec(target.split(":")[0]) is not None, target
        done = run(["agent-gateway", "serve", target, "--help"])
        assert "AGENT" in done.stdout
    else:
        pytest.fail(
            f"{block}: no rule runs or checks {command!r}: add one here, or say why above the"
            " block with <!-- not run: ... -->"
        )


def test_the_table_of_contents_is_current() -> None:
    assert readme_toc.with_contents(README) == README, "run: python scripts/readme_toc.py"


def test_the_demo_users_table_says_what_the_demo_does() -> None:
    from gateway.context import Caller
    from gateway.examples.navigator import work_requests
    from gateway.examples.navigator.screens import catalog

    directory = catalog.load()
    section = README.split("## The demo's users", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)` \| (ORG-\d+) \| (.+?) \| (.+?) \|$", section, re.M)
    assert sorted(user for user, *_ in rows) == sorted(directory.users)
    for user, org, screens, requests in rows:
        assert directory.users[user].org == org
        assert re.match(rf"\D*{len(directory.permitted(user))} ", screens), (user, screens)
        asker = Caller(user_id=user)
        decides = work_requests.refusal("R-1042", asker, deciding=True) is None
        sees = work_requests.refusal("R-1042", asker, deciding=False) is None
        assert ("decides them" in requests) == decides, (user, requests)
        assert requests.startswith("none") == (not sees), (user, requests)
