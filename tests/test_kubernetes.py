"""The example manifest of deploy/kubernetes/, read as Kubernetes would: its probes ask doors
the gateway has (liveness one that a model outage leaves alone), the grace period outlasts
the drain, secrets come from a Secret, every GATEWAY_* it sets is a real setting, and the pod
runs as the image's user."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml

from gateway.config import Settings
from gateway.doors.app import DOORS
from tests.support import ROOT
from tests.support.dockerfile import stages

pytestmark = pytest.mark.unit

MANIFEST = ROOT / "deploy" / "kubernetes" / "gateway.yaml"


def documents() -> dict[str, dict[str, Any]]:
    with MANIFEST.open(encoding="utf-8") as text:
        return {document["kind"]: document for document in yaml.safe_load_all(text)}


def pod() -> dict[str, Any]:
    spec: dict[str, Any] = documents()["Deployment"]["spec"]["template"]["spec"]
    return spec


def container() -> dict[str, Any]:
    [gateway] = pod()["containers"]
    return gateway


def env() -> dict[str, dict[str, Any]]:
    return {variable["name"]: variable for variable in container()["env"]}


def test_the_probes_ask_doors_the_gateway_has() -> None:
    probes = {
        name: container()[name]["httpGet"]
        for name in ("startupProbe", "livenessProbe", "readinessProbe")
    }
    assert {probe["path"] for probe in probes.values()} <= DOORS.keys()


def test_liveness_asks_only_whether_the_process_serves() -> None:
    gateway = container()
    assert gateway["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert gateway["startupProbe"]["httpGet"]["path"] == "/livez"
    # /ping and /readyz are 503 while the model is unreachable: a liveness probe on them
    # would restart every pod in a provider outage.
    assert gateway["readinessProbe"]["httpGet"]["path"] == "/readyz"
    ports = {port["name"]: port["containerPort"] for port in gateway["ports"]}
    assert ports == {"http": 8080}
    for name in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert gateway[name]["httpGet"]["port"] == "http"
    [service_port] = documents()["Service"]["spec"]["ports"]
    assert service_port["targetPort"] == "http"


def test_the_grace_period_outlasts_the_drain() -> None:
    drain = float(env()["GATEWAY_DRAIN_SECONDS"]["value"])
    assert pod()["terminationGracePeriodSeconds"] >= drain + 5


def test_secrets_come_from_a_secret() -> None:
    for name in ("GATEWAY_DB", "GATEWAY_SERVICE_TOKEN"):
        assert "value" not in env()[name]
        assert env()[name]["valueFrom"]["secretKeyRef"]["name"] == "agent-gateway"


def test_every_gateway_variable_is_a_setting() -> None:
    settings = {f"GATEWAY_{field.name.upper()}" for field in dataclasses.fields(Settings)}
    assert {name for name in env() if name.startswith("GATEWAY_")} <= settings


def test_the_pod_runs_as_the_images_user_with_bounded_resources() -> None:
    [user] = stages()[-1].all("USER")
    uid, _, gid = user.partition(":")
    security = pod()["securityContext"]
    assert (security["runAsNonRoot"], security["runAsUser"], security["runAsGroup"]) == (
        True,
        int(uid),
        int(gid),
    )
    resources = container()["resources"]
    assert resources["requests"]["memory"] and resources["limits"]["memory"]
