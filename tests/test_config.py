"""Settings: flags win over environment variables, which win over defaults."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from gateway import config

pytestmark = pytest.mark.unit


def parse(argv: list[str], environ: dict[str, str]) -> config.Settings:
    parser = argparse.ArgumentParser()
    config.add_arguments(parser)
    return config.load(parser.parse_args(argv), environ)


def test_defaults_match_the_readme() -> None:
    settings = parse([], {})
    assert (settings.host, settings.port, settings.model, settings.auth) == (
        "127.0.0.1",
        8080,
        "",
        "dev",
    )
    assert settings.client_tool_timeout == 120.0


def test_dev_mode_listens_on_loopback_unless_the_host_is_set() -> None:
    from gateway.api import create_app, server_config

    dev = parse([], {})
    assert server_config(dev, create_app(None, dev)).host == "127.0.0.1"
    # jwt mode keeps the AgentCore contract, 0.0.0.0:8080.
    assert parse([], {"GATEWAY_AUTH": "jwt"}).host == "0.0.0.0"
    assert config.Settings(auth="jwt").host == "0.0.0.0"
    assert config.Settings().host == "127.0.0.1"
    # Set explicitly, by variable or flag, the host is kept in either mode.
    assert parse([], {"GATEWAY_HOST": "0.0.0.0"}).host == "0.0.0.0"
    assert parse(["--host", "::"], {"GATEWAY_AUTH": "jwt"}).host == "::"
    assert parse(["--host", "10.1.2.3"], {}).host == "10.1.2.3"


def test_environment_then_flags() -> None:
    environ = {"GATEWAY_PORT": "9000", "GATEWAY_DB": ":memory:", "GATEWAY_SCRIPTED_PACE_MS": "0"}
    assert parse([], environ).port == 9000
    settings = parse(["--port", "9100"], environ)
    assert (settings.port, settings.db, settings.scripted_pace_ms) == (9100, ":memory:", 0.0)


@pytest.mark.parametrize(
    ("name", "value"), [("GATEWAY_PORT", "eighty"), ("GATEWAY_DURABILITY", "maybe")]
)
def test_bad_values_stop_with_a_sentence(name: str, value: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse([], {name: value})
    assert name in str(stopped.value)


def test_workers_are_auto_unless_a_number_is_given() -> None:
    assert parse([], {}).workers == config.AUTO_WORKERS
    assert parse([], {"GATEWAY_WORKERS": "Auto"}).workers == config.AUTO_WORKERS
    assert parse(["--workers", "0"], {"GATEWAY_WORKERS": "auto"}).workers == 0
    assert parse([], {"GATEWAY_WORKERS": "3"}).workers == 3
    # The start-up line and --help spell it as the variable does.
    shown = config.describe(config.resolve(environ={"GATEWAY_WORKERS": "auto"}))
    assert any("workers=auto" in line for line in shown)
    parser = argparse.ArgumentParser()
    config.add_arguments(parser, only=["workers"])
    assert "default auto)" in " ".join(parser.format_help().split())
    with pytest.raises(SystemExit) as stopped:
        parse([], {"GATEWAY_WORKERS": "many"})
    assert "GATEWAY_WORKERS" in str(stopped.value)


def test_auto_workers_count_the_cores_the_cgroup_allows(tmp_path: Path) -> None:
    from gateway.api import cpu_quota

    assert cpu_quota(tmp_path) is None  # no cgroup files: no quota
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpu_quota(tmp_path) is None
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cpu_quota(tmp_path) == 1.5
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cpu_quota(tmp_path) is None
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("200000\n")
    assert cpu_quota(tmp_path) == 2.0


def test_the_state_scopes_clients_may_write_are_named_or_none() -> None:
    assert config.client_state(parse([], {})) == {"session"}
    assert config.client_state(parse(["--client-state", "session, user"], {})) == {
        "session",
        "user",
    }
    assert config.client_state(parse([], {"GATEWAY_CLIENT_STATE": "none"})) == frozenset()
    with pytest.raises(SystemExit) as stopped:
        config.client_state(parse([], {"GATEWAY_CLIENT_STATE": "session,temp"}))
    assert "GATEWAY_CLIENT_STATE may name session, user, app or none, not temp" in str(
        stopped.value
    )


def test_every_setting_is_in_the_readme() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for field in config.Settings.__dataclass_fields__:
        assert config.env_name(field) in readme, f"{config.env_name(field)} missing from README"


def test_settings_flags_go_before_or_after_the_command() -> None:
    from gateway.__main__ import parse

    def parse_command_line(argv: list[str]) -> tuple[argparse.Namespace, config.Settings]:
        args, resolved = parse(argv)
        return args, resolved.settings

    args, settings = parse_command_line(["serve", "my.agent:root_agent", "--port", "9000"])
    assert (args.command, settings.agent, settings.port) == ("serve", "my.agent:root_agent", 9000)
    _, settings = parse_command_line(["--port", "9001", "serve"])
    assert settings.port == 9001 and settings.agent == ""
    args, settings = parse_command_line(["threads", "--user", "U", "--db", "x.db", "--app", "A"])
    assert (args.user, args.app, settings.db) == ("U", "A", "x.db")
    _, settings = parse_command_line(["--db", "y.db", "export", "T"])
    assert settings.db == "y.db"
