"""The real agent CLIs from npm (tests/agent_clis, which tests/provisioning.py brings), their
model API pointed at a loopback stand-in (tests/fake_models.py), with `roundtable hooks install`
run for them: each run leaves its session (the agent's own id, its status changes, its history,
its transcript), and the agent's own resume continues that conversation on the same session."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roundtable_console.store.db.database import open_store
from tests.fake_models import ANSWER, fake_model_api
from tests.hook_support import ROOT, history, session

CLIS = ROOT / "tests" / "agent_clis" / "node_modules"
CLAUDE = CLIS / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
CODEX = CLIS / ".bin" / "codex"
GEMINI = CLIS / ".bin" / "gemini"
RUN_SECONDS = 180


def _need(program: Path) -> Path:
    assert program.exists(), (
        f"{program} is missing: run `npm ci --prefix tests/agent_clis` (the suite does)"
    )
    return program


@pytest.fixture
def api() -> Iterator[Any]:
    with fake_model_api() as server:
        yield server


@pytest.fixture
def place(tmp_path: Path) -> dict[str, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    open_store(url).dispose()
    return {
        "home": home,
        "project": project,
        "db": Path(url.removeprefix("sqlite:///")),
        "spool": tmp_path / "spool.jsonl",
    }


def _url(place: dict[str, Path]) -> str:
    return f"sqlite:///{place['db']}"


def _base_env(place: dict[str, Path], **extra: str) -> dict[str, str]:
    env = {
        "PATH": f"{Path(os.sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(place["home"]),
        "ROUNDTABLE_HOOK_SPOOL": str(place["spool"]),
        "LANG": "C.UTF-8",
        **extra,
    }
    return env


def _install(agent: str, place: dict[str, Path], env: dict[str, str], *more: str) -> None:
    """Hooks of ``agent`` on the place's store; a permission request is not waited for unless
    ``more`` says ``--permission-wait`` (tests/test_requests_real.py: a human answers)."""
    done = subprocess.run(
        [str(Path(os.sys.executable).parent / "roundtable"), "hooks", "install", agent,
         "--db", _url(place), "--permission-wait", "0", *more],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout


def _run(argv: list[str], place: dict[str, Path], env: dict[str, str]) -> str:
    """The agent's run, watched by strace: it reaches nothing beyond loopback (a lookup of a
    name is a datagram to a name server, so it is caught as well)."""
    trace = place["home"].parent / f"network-{len(list(place['home'].parent.glob('network-*')))}"
    done = subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "--seccomp-bpf",
            "-e",
            f"trace={','.join(NETWORK_CALLS)}",
            "-o",
            str(trace),
            *argv,
        ],  # fmt: skip
        cwd=place["project"],
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{argv[0]} exited {done.returncode}: {done.stderr[-3000:]}"
    assert "roundtable hooks:" not in done.stderr, done.stderr[-2000:]
    assert beyond_loopback(trace.read_text()) == [], argv[0]
    return done.stdout


NETWORK_CALLS = ("connect", "sendto", "sendmsg", "sendmmsg")
_INET_ADDRESS = re.compile(r'inet_(?:addr\(|pton\(AF_INET6?, )"([^"]+)"')


def beyond_loopback(strace_output: str) -> list[str]:
    """The calls of a trace that name an internet address other than loopback's."""
    return [
        line
        for line in strace_output.splitlines()
        for address in _INET_ADDRESS.findall(line)
        if not ipaddress.ip_address(address).is_loopback
        and address not in ("::ffff:127.0.0.1", "::")
    ]


def test_the_network_watch_sees_a_name_lookup_and_lets_loopback_pass() -> None:
    """What strace printed for Codex before its offline switches, and for loopback."""
    lookup = (
        "30805 connect(7, {sa_family=AF_INET, sin_port=htons(53), "
        'sin_addr=inet_addr("10.255.255.53")}, 16) = 0'
    )
    v6 = (
        '7 sendto(3, "x", 1, 0, {sa_family=AF_INET6, sin6_port=htons(53), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "2001:db8::53", &sin6_addr), sin6_scope_id=0}, 28) = 1'
    )
    local = (
        "8 connect(19, {sa_family=AF_INET, sin_port=htons(39189), "
        'sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS\n'
        "9 connect(3, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), "
        'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0\n'
        '9 connect(22, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT'
    )
    assert beyond_loopback("\n".join([lookup, local, v6])) == [lookup, v6]
    assert beyond_loopback(local) == []


def _only_session(place: dict[str, Path]) -> str:
    import sqlite3

    with sqlite3.connect(place["db"]) as conn:
        rows = conn.execute("SELECT id FROM agent_sessions").fetchall()
    assert len(rows) == 1, rows
    return rows[0][0]


def _claude_env(place: dict[str, Path], api: Any, **extra: str) -> dict[str, str]:
    return _base_env(
        place,
        ANTHROPIC_BASE_URL=f"http://127.0.0.1:{api.server_address[1]}",
        ANTHROPIC_API_KEY="sk-ant-test-not-a-key",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        **extra,
    )


def test_claude_code_reports_itself_and_resumes_its_own_conversation(
    place: dict[str, Path], api: Any
) -> None:
    claude = str(_need(CLAUDE))
    env = _claude_env(place, api)
    _install("claude-code", place, env, "--project", str(place["project"]))
    out = json.loads(
        _run([claude, "-p", "make the marker file", "--output-format", "json"], place, env)
    )
    external = out["session_id"]
    sid = _only_session(place)
    assert sid == f"claude-{external}"
    found = session(_url(place), sid)
    assert (found.adapter, found.provider, found.external_session_id) == (
        "claude",
        "anthropic",
        external,
    )
    assert found.external_resume_command == f"claude --resume {external}"
    assert found.working_directory == str(place["project"])
    assert found.status == "ended" and found.ended_at is not None
    transcript = Path(found.metadata_json and json.loads(found.metadata_json)["transcript_path"])
    assert transcript.is_file() and transcript.is_relative_to(place["home"])
    events = history(_url(place), sid)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "registered" and kinds[-1] == "ended"
    statuses = [payload.get("status") for kind, payload in events if kind == "heartbeat"]
    assert "running" in statuses and statuses[-1] == "active"  # worked, then its turn done
    # The permission it asked for (the tool writes a file) was a wait, in the agent's words.
    waits = [payload.get("waiting") for _, payload in events if payload.get("waiting")]
    assert waits == ["asks to run Bash: touch roundtable-marker"], events
    first_start = found.started_at

    # Resume: the same conversation (the earlier turns sent again), the same session.
    before = len(api.requests)
    again = json.loads(
        _run(
            [claude, "--resume", external, "-p", "and once more", "--output-format", "json"],
            place,
            env,
        )
    )
    assert again["session_id"] == external and again["result"] == ANSWER
    resumed_request = api.requests[before][1]
    texts = json.dumps(resumed_request["messages"])
    assert "make the marker file" in texts and "and once more" in texts
    assert _only_session(place) == sid
    resumed = session(_url(place), sid)
    assert resumed.started_at == first_start and resumed.status == "ended"
    assert [kind for kind, _ in history(_url(place), sid)].count("registered") == 2


def test_a_claude_code_started_by_roundtable_reports_on_that_session(
    place: dict[str, Path], api: Any
) -> None:
    """The console's R and resume --exec give the agent ROUNDTABLE_SESSION_ID: its hooks write
    to that session, which keeps its agent and run."""
    from roundtable_console.store.writes.agent_writes import register

    store = open_store(_url(place))
    with store.write() as db:
        register(
            db=db,
            session_id="planned-7",
            agent_id="planner",
            run_id="sprint",
            adapter="claude",
            working_directory=str(place["project"]),
            status="resuming",
        )
    store.dispose()
    env = _claude_env(place, api, ROUNDTABLE_SESSION_ID="planned-7")
    _install("claude-code", place, env, "--project", str(place["project"]))
    out = json.loads(_run([str(_need(CLAUDE)), "-p", "go", "--output-format", "json"], place, env))
    assert _only_session(place) == "planned-7"
    found = session(_url(place), "planned-7")
    assert (found.agent_id, found.run_id) == ("planner", "sprint")
    assert found.external_session_id == out["session_id"]
    assert found.status == "ended"


# Codex 0.169 looks up github.com (its plugins), chatgpt.com and ab.chatgpt.com at start, whatever
# its provider, unless these (and check_for_update_on_startup) are off.
CODEX_OFFLINE = (
    "[analytics]\nenabled = false\n\n"
    "[features]\nplugins = false\nremote_plugin = false\napps = false\n"
    "api_key_model_discovery = false\n"
)


def _codex_env(place: dict[str, Path], api: Any) -> dict[str, str]:
    codex_home = place["home"] / ".codex"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model_provider = "fake"\nmodel = "gpt-fake"\ncheck_for_update_on_startup = false\n\n'
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "http://127.0.0.1:{api.server_address[1]}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "FAKE_OPENAI_KEY"\n\n'
        f'[projects."{place["project"]}"]\ntrust_level = "trusted"\n\n' + CODEX_OFFLINE
    )
    return _base_env(place, CODEX_HOME=str(codex_home), FAKE_OPENAI_KEY="not-a-key")


def test_codex_reports_itself_through_trusted_hooks_and_resumes(
    place: dict[str, Path], api: Any
) -> None:
    codex = str(_need(CODEX))
    env = _codex_env(place, api)
    _install("codex", place, env, "--project", str(place["project"]))
    _run([codex, "exec", "--skip-git-repo-check", "make the marker file"], place, env)
    sid = _only_session(place)
    found = session(_url(place), sid)
    external = found.external_session_id
    assert sid == f"codex-{external}"
    assert (found.adapter, found.provider, found.model) == ("codex", "openai", "gpt-fake")
    assert found.external_resume_command == f"codex resume {external}"
    assert found.status == "ended"
    transcript = Path(json.loads(found.metadata_json)["transcript_path"])
    assert transcript.is_file() and external in transcript.name
    kinds = [kind for kind, _ in history(_url(place), sid)]
    assert kinds[0] == "registered" and kinds[-1] == "ended" and "heartbeat" in kinds

    before = len(api.requests)
    _run([codex, "exec", "--skip-git-repo-check", "resume", external, "and once more"], place, env)
    assert "make the marker file" in json.dumps(api.requests[before][1]["input"])
    assert _only_session(place) == sid
    assert session(_url(place), sid).started_at == found.started_at


def _gemini_env(place: dict[str, Path], api: Any) -> dict[str, str]:
    settings = place["home"] / ".gemini" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    # Usage statistics off: else Gemini CLI looks up play.googleapis.com to send them.
    settings.write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
    }))  # fmt: skip
    return _base_env(
        place,
        GOOGLE_GEMINI_BASE_URL=f"http://127.0.0.1:{api.server_address[1]}",
        GEMINI_API_KEY="not-a-key",
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )


def test_gemini_cli_reports_itself_and_resumes(place: dict[str, Path], api: Any) -> None:
    gemini = str(_need(GEMINI))
    env = _gemini_env(place, api)
    _install("gemini", place, env)  # the user's settings, merged with its auth
    settings = json.loads((place["home"] / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    flags = ["-m", "gemini-2.5-flash", "--approval-mode", "yolo", "--output-format", "json"]
    out = json.loads(_run([gemini, "-p", "make the marker file", *flags], place, env))
    sid = _only_session(place)
    found = session(_url(place), sid)
    external = found.external_session_id
    assert sid == f"gemini-{external}" and out.get("session_id", external) == external
    assert found.external_resume_command == f"gemini --resume {external}"
    assert found.status == "ended"
    kinds = [kind for kind, _ in history(_url(place), sid)]
    assert kinds[0] == "registered" and kinds.count("ended") == 1  # its repeated ends, once

    before = len(api.requests)
    _run([gemini, "--resume", external, "-p", "and once more", *flags], place, env)
    resumed = [body for _, body in api.requests[before:] if "contents" in body]
    assert any("make the marker file" in json.dumps(body["contents"]) for body in resumed)
    assert _only_session(place) == sid
