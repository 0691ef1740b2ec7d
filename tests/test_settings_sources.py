"""Settings an operator can see: a settings file under the variables, a warning with the
nearest name for a GATEWAY_* variable no setting reads, the start-up lines saying every
value and where it came from with the secrets redacted, and create_app reading the
environment as the command does, under what its code sets."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest

from gateway import config
from gateway.api import create_app

pytestmark = pytest.mark.unit

SECRET = "s3cret-jwt-secret-of-thirty-two-bytes!"
TOKEN = "service-token-of-thirty-two-bytes-long!"


def resolve(argv: list[str], environ: dict[str, str]) -> config.Resolved:
    parser = argparse.ArgumentParser()
    config.add_arguments(parser)
    config.add_config_argument(parser)
    return config.resolve(parser.parse_args(argv), environ)


def test_a_mistyped_variable_is_warned_with_the_nearest_name() -> None:
    resolved = resolve([], {"GATEWAY_PROT": "18119", "GATEWAY_DB": "x.db", "GATEWAY_ZZZ": "1"})
    assert resolved.settings.port == 8080
    assert resolved.unknown == [
        "GATEWAY_PROT is not a setting and is ignored; did you mean GATEWAY_PORT?",
        "GATEWAY_ZZZ is not a setting and is ignored",
    ]


def test_the_settings_file_is_under_the_variables_and_the_flags(tmp_path: Path) -> None:
    file = tmp_path / "gateway.toml"
    file.write_text(
        'port = 9000\ndb = "file.db"\nallowed-origins = ["https://a.example", "https://b.example"]\n'
        'predict_state = [{state_key = "doc", tool = "write", tool_argument = "text"}]\n'
        "warm_up_runs = 0\n"
    )
    resolved = resolve(["--port", "9100"], {"GATEWAY_CONFIG": str(file), "GATEWAY_DB": "env.db"})
    settings = resolved.settings
    assert (settings.port, settings.db, settings.warm_up_runs) == (9100, "env.db", 0)
    assert settings.allowed_origins == "https://a.example,https://b.example"
    assert '"state_key": "doc"' in settings.predict_state
    sources = resolved.sources
    assert (sources["port"], sources["db"], sources["warm_up_runs"]) == ("flag", "env", str(file))
    assert sources["busy"] == "default"
    # The flag names a file too.
    assert resolve(["--config", str(file)], {}).settings.port == 9000


def test_a_settings_file_with_a_mistake_stops_with_a_sentence(tmp_path: Path) -> None:
    file = tmp_path / "gateway.toml"
    file.write_text("prot = 9000\n")
    with pytest.raises(SystemExit, match="'prot' is not a setting; did you mean port"):
        resolve(["--config", str(file)], {})
    file.write_text('port = "eighty"\n')
    with pytest.raises(SystemExit, match=r"gateway\.toml: port='eighty' is not a valid int"):
        resolve(["--config", str(file)], {})
    file.write_text("port = \n")
    with pytest.raises(SystemExit, match="is not valid TOML"):
        resolve(["--config", str(file)], {})
    with pytest.raises(SystemExit, match="cannot be read"):
        resolve(["--config", str(tmp_path / "absent.toml")], {})


def test_the_start_up_lines_say_every_setting_and_its_source_with_secrets_redacted() -> None:
    environ = {
        "GATEWAY_DB": "postgresql://gw:hunter2@db.internal/gateway?password=hunter3",
        "GATEWAY_JWT_SECRET": SECRET,
        "GATEWAY_SERVICE_TOKEN": TOKEN,
        "GATEWAY_AUTH": "jwt",
    }
    lines = config.describe(resolve(["--port", "9000"], environ))
    text = "\n".join(lines)
    assert lines[0] == f"agent-gateway {config.version()}"
    for secret in (SECRET, TOKEN, "hunter2", "hunter3"):
        assert secret not in text
    assert "settings from flags: port=9000" in lines
    [env] = [line for line in lines if line.startswith("settings from GATEWAY_* variables:")]
    assert "db=postgresql://gw:[redacted]@db.internal/gateway?password=[redacted]" in env
    assert "jwt_secret=[redacted]" in env and "service_token=[redacted]" in env
    defaults = " ".join(line for line in lines if line.startswith("settings from defaults:"))
    assert "busy=interrupt" in defaults and 'model=""' in defaults
    # Every setting is said exactly once, and no line is longer than the log keeps.
    for name in config.setting_names():
        assert text.count(f" {name}=") == 1, name
    assert all(len(line) <= config.LINE_LIMIT + config.SHOWN_VALUE + 40 for line in lines)


def test_create_app_reads_the_environment_under_what_its_code_sets(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.config")
    monkeypatch.setenv("GATEWAY_USER_THREADS", "7")
    monkeypatch.setenv("GATEWAY_MAX_RUNS", "9")
    monkeypatch.setenv("GATEWAY_PROT", "18119")
    app = create_app(None, config.Settings(db=":memory:", max_runs=3))
    assert (app.settings.user_threads, app.settings.max_runs, app.settings.db) == (7, 3, ":memory:")
    said = [record.getMessage() for record in caplog.records]
    assert "GATEWAY_PROT is not a setting and is ignored; did you mean GATEWAY_PORT?" in said
    assert any(line.startswith("settings from code: db=:memory: max_runs=3") for line in said)
    # Told not to, it takes the settings as they are.
    alone = create_app(None, config.Settings(db=":memory:"), environ=False)
    assert alone.settings.user_threads == config.Settings().user_threads
