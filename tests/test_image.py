"""The container image, built and started where no base image can be pulled: the Dockerfile's
own steps, read from it and run in order in a fresh venv, each image path mapped to a folder
here. The build stage's script turns a clean copy of the checkout into wheels, the final
stage's installs them offline into a new venv, and the gateway starts with the image's
environment and command, then is asked whether it is healthy by the HEALTHCHECK's command,
serves a run, and drains and ends on SIGTERM. Only the address differs: 127.0.0.1 for
the image's 0.0.0.0, so a test never listens on this shared machine's network."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.agui import new_id, sse_events, user_input
from tests.support.budgets import eventually, scaled
from tests.support.checkout import clean_copy, succeed
from tests.support.dockerfile import Stage, env_pairs, exec_form, stages
from tests.support.ports import free_port
from tests.support.tokens import SECRET, token

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git ls-files"),
    pytest.mark.process,
]


class Image:
    """The image's file system laid out under ``root``, and its environment as it builds."""

    def __init__(self, root: Path) -> None:
        self.source = clean_copy(root / "source")
        self.places = {
            "/src": self.source,  # the build stage's WORKDIR, the build context copied there
            "/wheels": root / "wheels",
            "/opt/venv": root / "venv",
            "/opt/gateway": self.source / "docker",  # what the final stage COPYs from docker/
            "/data": root / "data",
        }
        self.places["/data"].mkdir()
        # The base image's `python`, and none of this machine's GATEWAY_* settings.
        self.base = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
        self.base["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        self.env: dict[str, str] = {}
        self.cwd = root

    def here(self, path: str) -> str:
        """``path`` of the image as the folder standing for it here."""
        for image_path, folder in self.places.items():
            if path == image_path or path.startswith(image_path + "/"):
                return str(folder) + path[len(image_path) :]
        return path

    def build(self, stage: Stage) -> None:
        """Runs ``stage``'s instructions that build here: WORKDIR, ENV and every RUN of a
        docker/ script (the lint test holds that the only other RUN is useradd)."""
        self.env = dict(self.base)
        for keyword, args in stage.instructions:
            if keyword == "WORKDIR":
                self.cwd = Path(self.here(args))
            elif keyword == "ENV":
                for name, value in env_pairs(args).items():
                    value = value.replace("$PATH", self.env["PATH"])
                    parts = value.split(os.pathsep) if name == "PATH" else [value]
                    self.env[name] = os.pathsep.join(map(self.here, parts))
                # The one thing kept from this machine: pip's cache, not every download again.
                self.env.pop("PIP_NO_CACHE_DIR", None)
            elif keyword == "RUN" and exec_form(args)[0] == "sh":
                succeed(
                    *map(self.here, exec_form(args)),
                    cwd=self.cwd,
                    env=self.env,
                    timeout=scaled(900),
                )

    def command(self, args: str) -> list[str]:
        """An exec-form command of the image, its program found on the image's PATH."""
        command = [self.here(part) for part in exec_form(args)]
        program = shutil.which(command[0], path=self.env["PATH"])
        assert program, f"{command[0]} is not on the image's PATH"
        return [program, *command[1:]]


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Image, Stage]]:
    image = Image(tmp_path_factory.mktemp("image"))
    *builders, final = stages()
    for stage in builders:
        image.build(stage)
    image.build(final)
    yield image, final


async def test_the_image_builds_starts_healthy_serves_and_drains_on_sigterm(
    image: tuple[Image, Stage], tmp_path: Path
) -> None:
    built, final = image
    [entrypoint], [cmd], [check] = (
        final.all("ENTRYPOINT"),
        final.all("CMD"),
        final.all("HEALTHCHECK"),
    )
    port = free_port()
    env = built.env | {
        "GATEWAY_HOST": "127.0.0.1",
        "GATEWAY_PORT": str(port),
        "GATEWAY_JWT_SECRET": SECRET,
        "GATEWAY_SCRIPTED_PACE_MS": "0",
    }
    assert built.env["GATEWAY_AUTH"] == "jwt" and built.env["GATEWAY_HOST"] == "0.0.0.0"
    healthcheck = built.command(check)

    def healthy() -> bool:
        return subprocess.run(healthcheck, env=env, capture_output=True, timeout=10).returncode == 0

    assert not healthy(), "nothing listens yet"
    log = tmp_path / "gateway.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            built.command(entrypoint) + exec_form(cmd),
            cwd=built.cwd,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        await eventually(
            lambda: process.poll() is not None or healthy(), 90, what="a healthy gateway"
        )
        assert process.poll() is None, log.read_text()[-3000:]
        assert (built.places["/data"] / "gateway.db").is_file()  # GATEWAY_DB of the image

        async with httpx.AsyncClient(timeout=scaled(30)) as client:
            response = await client.post(
                f"http://127.0.0.1:{port}/invocations",
                json=user_input(new_id("t"), "안녕"),
                headers={"Authorization": f"Bearer {token()}"},
            )
        assert response.status_code == 200, response.text
        assert sse_events(response.content)[-1]["type"] == "RUN_FINISHED"

        process.send_signal(signal.SIGTERM)
        # uvicorn raises the signal it caught again once it has drained and shut down, so the
        # container's status is 143, as for any program that ends on SIGTERM.
        assert process.wait(timeout=scaled(30)) == -signal.SIGTERM, log.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    messages = [line.get("message", "") for line in lines]
    assert any(message.startswith("drained in") for message in messages), messages[-5:]
    assert messages[-1].startswith("Finished server process"), messages[-5:]
