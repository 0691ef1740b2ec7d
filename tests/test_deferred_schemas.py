"""ADK's pydantic models are built when first used, and nothing else about them changes
(``gateway.deferred_schemas``); a user's model, an ADK agent's subclass too, is built as its
class statement runs, as without the gateway. Each check runs in a fresh interpreter: this
one imported ADK long ago."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import ROOT
from tests.support.budgets import scaled

pytestmark = pytest.mark.unit

PROBE = """
import json
import gateway
from pydantic._internal import _config
from google.adk.auth.auth_credential import AuthCredential, AuthCredentialTypes
from google.adk.agents import LlmAgent
import pydantic

imported = AuthCredential.__pydantic_complete__
credential = AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key="k")
try:
    AuthCredential(auth_type="no such type")
    refused = None
except pydantic.ValidationError as error:
    refused = error.errors()[0]["type"]


class TheirAgent(LlmAgent):
    flavour: str = "plain"


class TheirModel(pydantic.BaseModel):
    size: int


print(json.dumps({
    "built_as_imported": imported,
    "built_when_used": AuthCredential.__pydantic_complete__,
    "dumped": credential.model_dump(mode="json", exclude_none=True),
    "refused": refused,
    "schema_title": AuthCredential.model_json_schema()["title"],
    "theirs_built_at_once": [TheirAgent.__pydantic_complete__, TheirModel.__pydantic_complete__],
    "default_after": _config.config_defaults["defer_build"],
}))
"""


def test_adks_models_wait_for_their_first_use_and_behave_as_before() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["built_as_imported"] is False
    assert found["built_when_used"] is True
    assert found["dumped"] == {"auth_type": "apiKey", "api_key": "k"}
    assert found["refused"] == "enum"
    assert found["schema_title"] == "AuthCredential"
    assert found["theirs_built_at_once"] == [True, True]
    assert found["default_after"] is False
