"""Configuration (``docs/getting-started.md#where-the-data-lives``): config.toml in the platformdirs
config dir, the workspace's config.yaml in the reference format, database URL resolution, the
operator name — as functions and through the real CLI."""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select
from sqlalchemy.engine import make_url

from roundtable_console.store.db.database import open_store
from roundtable_console.store.db.models import AgentSession, AgentSessionEvent, Event
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.tui import config
from roundtable_console.tui.cli import cli
from roundtable_console.tui.cli.invocation import CliState
from roundtable_console.tui.config import (
    ConfigError,
    Settings,
    load_settings,
    resolve_adapters,
    resolve_database_url,
    resolve_operator,
    workspace_adapters,
)
from tests.conftest import FakeClock

FULL_TOML = """\
database = "sqlite:////srv/roundtable/shared.db"
operator = "dana"
refresh_seconds = 0.5
stale_after_seconds = 600
theme = "textual-light"

[adapters.codex]
command = "codex"
supports_resume = true
resume_pattern = "codex resume {{external_session_id}}"
supports_mcp = true
supports_readonly_workspace = true
captures_session_id = true
external_session_id_pattern = "^[a-z0-9-]+$"

[adapters.claude]
resume_pattern = "claude --resume {{external_session_id}}"
"""

REFERENCE_YAML = """\
adapters:
  codex:
    command: codex
    supports_resume: true
    resume_pattern: "codex exec resume {{external_session_id}}"
    supports_mcp: false
    supports_readonly_workspace: true
    captures_session_id: true
  gemini:
    command: gemini
    supports_resume: false
"""


pytestmark = pytest.mark.usefixtures("isolated_env")


def user_config(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "xdg-config" / "roundtable" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def workspace(tmp_path: Path, yaml_text: str | None = None, name: str = "ws") -> Path:
    root = tmp_path / name
    (root / ".roundtable").mkdir(parents=True)
    if yaml_text is not None:
        (root / ".roundtable" / "config.yaml").write_text(yaml_text, encoding="utf-8")
    return root


# ------------------------------------------------------------------------------------ config.toml


def test_config_toml_is_read_from_the_xdg_config_dir(tmp_path: Path) -> None:
    assert config.config_dir() == tmp_path / "xdg-config" / "roundtable"
    path = user_config(tmp_path, FULL_TOML)
    settings = load_settings()
    assert settings.source == path
    assert settings.database == "sqlite:////srv/roundtable/shared.db"
    assert settings.operator == "dana"
    assert settings.refresh_seconds == 0.5
    assert settings.stale_after_seconds == 600.0
    assert settings.theme == "textual-light"
    assert set(settings.adapters) == {"codex", "claude"}


def test_every_adapter_key_of_config_toml_is_read(tmp_path: Path) -> None:
    user_config(tmp_path, FULL_TOML)
    codex = load_settings().adapters["codex"]
    assert codex == AdapterConfig(
        name="codex",
        command="codex",
        supports_resume=True,
        resume_pattern="codex resume {{external_session_id}}",
        supports_mcp=True,
        supports_readonly_workspace=True,
        captures_session_id=True,
        external_session_id_pattern="^[a-z0-9-]+$",
        explicit=True,
    )
    assert codex.expand("abc") == "codex resume abc"
    claude = load_settings().adapters["claude"]
    assert (claude.command, claude.supports_resume) == (None, False)


def test_a_missing_config_gives_the_documented_defaults(tmp_path: Path) -> None:
    settings = load_settings()
    assert settings == Settings()
    assert (settings.refresh_seconds, settings.stale_after_seconds) == (2.0, 300.0)
    assert (settings.database, settings.operator, settings.theme) == (None, None, None)
    assert settings.sort == "attention"  # the console opens with what needs a human first
    assert dict(settings.adapters) == {}


def test_the_consoles_first_order_is_one_the_list_knows(tmp_path: Path) -> None:
    user_config(tmp_path, 'sort = "last_seen"\n')
    assert load_settings().sort == "last_seen"
    path = user_config(tmp_path, 'sort = "newest"\n')
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert str(path) in raised.value.message and "attention, started" in raised.value.message


@pytest.mark.parametrize(
    ("text", "group"),
    [
        ("", None),
        ('group = "none"', None),
        ('group = "run"', "run"),
        ('group = " agent "', "agent"),
    ],
)
def test_the_lists_first_grouping_is_read(tmp_path: Path, text: str, group: str | None) -> None:
    user_config(tmp_path, text)
    assert load_settings().group == group


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("", "off"),
        ('notify = "bell"', "bell"),
        ('notify = " desktop "', "desktop"),
        ('notify = ""', "off"),
    ],
)
def test_what_the_console_adds_to_a_notification_is_read(
    tmp_path: Path, text: str, mode: str
) -> None:
    user_config(tmp_path, text)
    assert load_settings().notify == mode


def test_blank_strings_in_config_toml_count_as_unset(tmp_path: Path) -> None:
    user_config(tmp_path, 'database = " "\noperator = ""\ntheme = "  "\n')
    settings = load_settings()
    assert (settings.database, settings.operator, settings.theme) == (None, None, None)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("refresh_seconds = [", "not valid TOML"),
        ("operator = 'unterminated", "not valid TOML"),
        ('refresh_seconds = "2"', "refresh_seconds"),
        ("refresh_seconds = 0", "refresh_seconds"),
        ("refresh_seconds = -1", "refresh_seconds"),
        ("refresh_seconds = true", "refresh_seconds"),
        ("refresh_seconds = nan", "refresh_seconds"),
        ("stale_after_seconds = inf", "stale_after_seconds"),
        ("stale_after_seconds = 1e300", "stale_after_seconds"),
        ("stale_after_seconds = {}", "stale_after_seconds"),
        ("database = 3", "database"),
        ("operator = ['a']", "operator"),
        ("theme = 1", "theme"),
        ('group = "status"', "group must be one of none, workspace, run, agent"),
        ("group = 1", "group"),
        ('notify = "popup"', "notify must be one of off, bell, desktop, not 'popup'"),
        ("notify = true", "notify"),
        ("adapters = 3", "adapters"),
        ("adapters = ['codex']", "adapters"),
        ("[adapters]\ncodex = 'x'", "adapters.codex"),
        ("[adapters.codex]\nresume_pattern = 3", "adapters.codex.resume_pattern"),
        ("[adapters.codex]\ncommand = ['codex']", "adapters.codex.command"),
        ("[adapters.codex]\nsupports_resume = 'yes'", "adapters.codex.supports_resume"),
        ("[adapters.codex]\ncaptures_session_id = 1", "adapters.codex.captures_session_id"),
        ("[adapters.codex]\nexternal_session_id_pattern = '(['", "external_session_id_pattern"),
    ],
)
def test_a_bad_config_toml_is_a_config_error_naming_the_file(
    tmp_path: Path, text: str, names: str
) -> None:
    path = user_config(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert raised.value.code == "invalid_configuration"
    assert str(path) in raised.value.message
    assert names in raised.value.message
    assert raised.value.message.endswith(".")


def test_a_config_toml_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    path = user_config(tmp_path, b'operator = "\xff\xfe"\n')
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert str(path) in raised.value.message


def test_an_explicit_path_is_read_instead_of_the_user_config(tmp_path: Path) -> None:
    user_config(tmp_path, 'operator = "from-xdg"\n')
    other = tmp_path / "elsewhere.toml"
    other.write_text('operator = "from-file"\n')
    assert load_settings(other).operator == "from-file"
    assert load_settings().operator == "from-xdg"


# ------------------------------------------------------------------------------ workspace config


def test_the_workspace_config_yaml_is_read_in_the_reference_format(tmp_path: Path) -> None:
    root = workspace(tmp_path, REFERENCE_YAML)
    adapters = workspace_adapters(root)
    assert set(adapters) == {"codex", "gemini"}
    codex = adapters["codex"]
    assert codex.command == "codex"
    assert codex.supports_resume and codex.supports_readonly_workspace
    assert codex.captures_session_id and not codex.supports_mcp
    assert codex.explicit
    assert codex.expand("e-1") == "codex exec resume e-1"
    assert adapters["gemini"].expand("e-1") is None


def test_the_workspace_adapters_win_for_that_workspace_only(tmp_path: Path) -> None:
    user_config(tmp_path, FULL_TOML)
    settings = load_settings()
    root = workspace(tmp_path, REFERENCE_YAML)
    merged = resolve_adapters(settings, root)
    assert merged["codex"].resume_pattern == "codex exec resume {{external_session_id}}"
    # Adapters only the user configured stay; adapters only the workspace has are added.
    assert merged["claude"] == settings.adapters["claude"]
    assert "gemini" in merged
    elsewhere = resolve_adapters(settings, None)
    assert elsewhere["codex"].resume_pattern == "codex resume {{external_session_id}}"
    plain = resolve_adapters(settings, workspace(tmp_path, None, name="plain"))
    assert plain == dict(settings.adapters)


def test_a_workspace_without_config_yaml_has_no_adapters(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    assert workspace_adapters(bare) == {}
    assert workspace_adapters(workspace(tmp_path, "# only a comment\n", name="c")) == {}
    assert workspace_adapters(workspace(tmp_path, "adapters:\n", name="d")) == {}


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("adapters: [codex", "not valid YAML"),
        ("- codex\n- claude\n", "mapping at the top level"),
        ("adapters:\n  - codex\n", "adapters must be a table"),
        ("adapters:\n  codex: codex\n", "adapters.codex must be a table"),
        ("adapters:\n  codex:\n    supports_resume: 'yes'\n", "adapters.codex.supports_resume"),
        ("adapters:\n  codex:\n    resume_pattern: 12\n", "adapters.codex.resume_pattern"),
    ],
)
def test_a_bad_workspace_config_is_a_config_error_naming_the_file(
    tmp_path: Path, text: str, names: str
) -> None:
    root = workspace(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        workspace_adapters(root)
    assert str(root / ".roundtable" / "config.yaml") in raised.value.message
    assert names in raised.value.message


def test_a_root_that_is_missing_or_not_a_directory_is_a_config_error(tmp_path: Path) -> None:
    afile = tmp_path / "file.txt"
    afile.write_text("x")
    with pytest.raises(ConfigError, match="no such directory"):
        workspace_adapters(tmp_path / "missing")
    with pytest.raises(ConfigError, match="is not a directory"):
        workspace_adapters(afile)
    with pytest.raises(ConfigError, match="is not a directory"):
        resolve_database_url(db=None, root=afile, settings=Settings())


# ---------------------------------------------------------------------------- URL resolution


def all_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Every source of the database URL set at once, each naming a different database."""
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("ROUNDTABLE_DB", "sqlite:////from/env.db")
    return {
        "db": "sqlite:////from/flag.db",
        "root": root,
        "settings": Settings(database="sqlite:////from/config.db"),
    }


def test_url_resolution_takes_the_first_source_that_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = all_sources(tmp_path, monkeypatch)
    root = sources["root"]
    assert resolve_database_url(**sources) == "sqlite:////from/flag.db"
    sources["db"] = None
    assert resolve_database_url(**sources) == "sqlite:////from/env.db"
    monkeypatch.delenv("ROUNDTABLE_DB")
    assert resolve_database_url(**sources) == f"sqlite:///{root}/.roundtable/roundtable.db"
    assert (root / ".roundtable").is_dir()
    sources["root"] = None
    assert resolve_database_url(**sources) == "sqlite:////from/config.db"
    sources["settings"] = Settings()
    default = tmp_path / "xdg-data" / "roundtable" / "roundtable.db"
    assert resolve_database_url(**sources) == f"sqlite:///{default}"
    assert config.default_database_path() == default


def test_blank_flag_and_environment_values_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROUNDTABLE_DB", "   ")
    settings = Settings(database="sqlite:////from/config.db")
    assert resolve_database_url(db=" ", root=None, settings=settings) == "sqlite:////from/config.db"
    assert resolve_database_url(db=" sqlite:////x.db ", root=None, settings=settings) == (
        "sqlite:////x.db"
    )


def test_root_reuses_an_existing_workspace_dir_and_refuses_a_file_in_its_place(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path, REFERENCE_YAML)
    url = resolve_database_url(db=None, root=root, settings=Settings())
    assert make_url(url).database == str(root / ".roundtable" / "roundtable.db")
    assert (root / ".roundtable" / "config.yaml").read_text() == REFERENCE_YAML
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / ".roundtable").write_text("a file, not a directory")
    with pytest.raises(ConfigError, match="Cannot create"):
        resolve_database_url(db=None, root=blocked, settings=Settings())
    assert (blocked / ".roundtable").read_text() == "a file, not a directory"


@pytest.mark.parametrize("name", ["what?", "100%", "a%20b", "x#y", "sp ace"])
def test_a_root_or_data_dir_with_url_characters_names_exactly_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    root = tmp_path / name
    root.mkdir()
    url = resolve_database_url(db=None, root=root, settings=Settings())
    expected = root / ".roundtable" / "roundtable.db"
    assert make_url(url).database == str(expected)
    open_store(url).dispose()
    assert expected.is_file()
    # Nothing was created under a truncated or decoded name.
    assert {p.name for p in tmp_path.iterdir()} <= {"xdg-config", "xdg-data", name}
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / name / "data"))
    default = resolve_database_url(db=None, root=None, settings=Settings())
    assert make_url(default).database == str(
        tmp_path / name / "data" / "roundtable" / "roundtable.db"
    )


# ------------------------------------------------------------------------------------ operator


def test_operator_order_flag_config_environment_login(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(getpass, "getuser", lambda: "login-name")
    monkeypatch.setenv("ROUNDTABLE_OPERATOR", "env-op")
    settings = Settings(operator="config-op")
    assert resolve_operator(flag="flag-op", settings=settings) == "flag-op"
    assert resolve_operator(flag=None, settings=settings) == "config-op"
    assert resolve_operator(flag="  ", settings=settings) == "config-op"
    assert resolve_operator(flag=None, settings=Settings()) == "env-op"
    monkeypatch.setenv("ROUNDTABLE_OPERATOR", " ")
    assert resolve_operator(flag=None, settings=Settings()) == "login-name"
    monkeypatch.delenv("ROUNDTABLE_OPERATOR")
    assert resolve_operator(flag=" padded ", settings=Settings()) == "padded"


def test_operator_without_a_login_name_is_still_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_login() -> str:
        raise OSError("no login")

    monkeypatch.setattr(getpass, "getuser", no_login)
    assert resolve_operator(flag=None, settings=Settings()) == "unknown-operator"


# ------------------------------------------------------------------------------ through the CLI


def run(clock: FakeClock, *args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), obj=CliState(clock=clock))
    assert "Traceback" not in result.output
    return result


def register_args(session_id: str, *extra: str) -> list[str]:
    return [
        "sessions", "register", "--id", session_id, "--agent", "a1", "--run", "r1",
        "--adapter", "codex", "--cwd", "/w", *extra,
    ]  # fmt: skip


def read(url: str, model: Any) -> list[Any]:
    store = open_store(url)
    try:
        with store.read() as db:
            return list(db.execute(select(model.__table__)).all())
    finally:
        store.dispose()


def test_cli_records_the_configured_operator_as_the_actor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    url = f"sqlite:///{tmp_path / 'ops.db'}"
    user_config(tmp_path, 'operator = "config-op"\n')
    monkeypatch.setenv("ROUNDTABLE_OPERATOR", "env-op")
    for session_id in ("s1", "s2"):
        assert run(clock, *register_args(session_id), "--db", url).exit_code == 0
    assert run(clock, "sessions", "pause", "--session", "s1", "--db", url).exit_code == 0
    flagged = run(
        clock, "sessions", "stop", "--session", "s2", "--operator", "flag-op", "--db", url
    )
    assert flagged.exit_code == 0
    actors = {row.type: row.actor_id for row in read(url, Event)}
    assert actors == {"session.paused": "config-op", "session.stopped": "flag-op"}
    payloads = {
        row.event_type: json.loads(row.payload_json)
        for row in read(url, AgentSessionEvent)
        if row.event_type != "registered"
    }
    assert payloads["paused"]["actor"] == "config-op"
    assert payloads["stopped"]["actor"] == "flag-op"


def test_cli_register_expands_configured_resume_patterns(tmp_path: Path, clock: FakeClock) -> None:
    url = f"sqlite:///{tmp_path / 'patterns.db'}"
    user_config(tmp_path, FULL_TOML)
    root = workspace(tmp_path, REFERENCE_YAML)
    cases = [
        ("user", ["--external-session-id", "e-1"], "codex resume e-1"),
        (
            "workspace",
            ["--external-session-id", "e-2", "--root", str(root)],
            "codex exec resume e-2",
        ),
        ("given", ["--external-session-id", "e-3", "--resume-command", "mine"], "mine"),
        ("no-external-id", [], None),
        ("blank-external-id", ["--external-session-id", " "], None),
    ]
    for session_id, extra, _ in cases:
        result = run(clock, *register_args(session_id, *extra), "--db", url)
        assert result.exit_code == 0, result.stderr
    stored = {row.id: row.external_resume_command for row in read(url, AgentSession)}
    assert stored == {session_id: expected for session_id, _, expected in cases}


def test_cli_builtin_adapters_have_no_pattern_unless_configured(
    tmp_path: Path, clock: FakeClock
) -> None:
    url = f"sqlite:///{tmp_path / 'builtin.db'}"
    for adapter in ("codex", "claude", "gemini", "opencode", "generic"):
        argv = register_args(adapter, "--external-session-id", "e-1", "--db", url)
        argv[argv.index("--adapter") + 1] = adapter
        assert run(clock, *argv).exit_code == 0
    stored = {row.id: row.external_resume_command for row in read(url, AgentSession)}
    assert stored == dict.fromkeys(("codex", "claude", "gemini", "opencode", "generic"))


def test_cli_follows_the_url_resolution_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    def resolved(*args: str) -> str:
        result = run(clock, "db", "upgrade", "--json", *args)
        assert result.exit_code == 0, result.stderr
        return make_url(json.loads(result.stdout)["database"]).database or ""

    default = tmp_path / "xdg-data" / "roundtable" / "roundtable.db"
    assert resolved() == str(default)
    assert default.is_file()
    user_config(tmp_path, f'database = "sqlite:///{tmp_path / "config.db"}"\n')
    assert resolved() == str(tmp_path / "config.db")
    root = workspace(tmp_path)
    assert resolved("--root", str(root)) == str(root / ".roundtable" / "roundtable.db")
    monkeypatch.setenv("ROUNDTABLE_DB", f"sqlite:///{tmp_path / 'env.db'}")
    assert resolved("--root", str(root)) == str(tmp_path / "env.db")
    flag = tmp_path / "flag.db"
    assert resolved("--root", str(root), "--db", f"sqlite:///{flag}") == str(flag)


def test_cli_stale_after_seconds_and_bad_config_reach_every_command(
    tmp_path: Path, clock: FakeClock
) -> None:
    url = f"sqlite:///{tmp_path / 'stale.db'}"
    assert run(clock, *register_args("s1"), "--db", url).exit_code == 0
    clock.advance(seconds=60)
    assert (
        json.loads(run(clock, "sessions", "--stale", "--json", "--db", url).stdout)["items"] == []
    )
    user_config(tmp_path, "stale_after_seconds = 30\n")
    stale = json.loads(run(clock, "sessions", "--stale", "--json", "--db", url).stdout)
    assert [item["id"] for item in stale["items"]] == ["s1"]
    path = user_config(tmp_path, "stale_after_seconds = inf\n")
    refused = run(clock, "sessions", "--stale", "--json", "--db", url)
    assert refused.exit_code == 2
    error = json.loads(refused.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "invalid_configuration"
    assert str(path) in error["message"]


def test_cli_a_bad_workspace_config_is_bad_input(tmp_path: Path, clock: FakeClock) -> None:
    root = workspace(tmp_path, "adapters: [codex")
    result = run(clock, *register_args("s1", "--external-session-id", "e"), "--root", str(root))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: ")
    assert str(root / ".roundtable" / "config.yaml") in result.stderr
    assert not (root / ".roundtable" / "roundtable.db").exists()


def test_an_environment_value_that_is_not_utf8_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    url = f"sqlite:///{tmp_path / 'env.db'}"
    assert run(clock, *register_args("s1"), "--db", url).exit_code == 0
    cases: list[tuple[str, Callable[[], object], list[str]]] = [
        (
            "ROUNDTABLE_DB",
            lambda: resolve_database_url(db=None, root=None, settings=Settings()),
            ["sessions", "--json"],
        ),
        (
            "ROUNDTABLE_OPERATOR",
            lambda: resolve_operator(flag=None, settings=Settings()),
            ["sessions", "pause", "--session", "s1", "--json", "--db", url],
        ),
    ]
    for name, resolve, argv in cases:
        monkeypatch.setenv(name, "caf\udce9")
        with pytest.raises(ConfigError, match=f"\\${name} is not valid UTF-8"):
            resolve()
        # Only when it is the source that counts: a flag or the config wins before it.
        assert resolve_operator(flag="flag-op", settings=Settings()) == "flag-op"
        assert resolve_database_url(db="sqlite:////x.db", root=None, settings=Settings()) == (
            "sqlite:////x.db"
        )
        result = run(clock, *argv)
        assert result.exit_code == 2
        error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
        assert error["code"] == "invalid_configuration"
        assert name in error["message"]
        monkeypatch.delenv(name)
    assert [row.status for row in read(url, AgentSession)] == ["active"]
