"""Resume and launch, the decision (store.resume.launch): the program found as execvp finds it,
every refusal before the resume with nothing changed, the resume against the row the plan was
made from, and the tmux command (argv as separate arguments, never a shell line). On SQLite and
on PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roundtable_console.store import errors
from roundtable_console.store.db.database import Store
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.resume.launch import (
    LaunchPlan,
    find_program,
    read_launch,
    resume_for_launch,
    tmux_command,
    tmux_refusal,
    tmux_window_name,
)
from roundtable_console.store.writes.lifecycle import pause
from roundtable_console.store.writes.transfer import export_records
from tests.conftest import FakeClock
from tests.helpers import history, session_row
from tests.test_tui_support import add_agent, add_session

FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
FAKE = {
    "fake": AdapterConfig(name="fake", resume_pattern="fake-agent --resume {{external_session_id}}")
}


def agent_bin(tmp_path: Path) -> str:
    """A directory holding ``fake-agent`` (the test's fake adapter program): the PATH to use."""
    directory = tmp_path / "bin"
    directory.mkdir(exist_ok=True)
    link = directory / "fake-agent"
    if not link.exists():
        link.symlink_to(FAKE_AGENT)
    return str(directory)


def paused_session(store: Store, tmp_path: Path, session_id: str = "s1", **values: object) -> Path:
    """A paused session of an enabled agent, its adapter the fake one; its working directory."""
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    with store.read() as db:
        known = db.exec_driver_sql("SELECT count(*) FROM agents WHERE id = 'ada'").scalar()
    if not known:
        add_agent(store, "ada")
    fields = {
        "agent_id": "ada",
        "adapter": "fake",
        "external_session_id": "ext-42",
        "working_directory": str(workdir),
        "status": "paused",
        **values,
    }
    add_session(store, session_id, **fields)
    return workdir


def dump(store: Store) -> list[str]:
    lines: list[str] = []
    with store.read() as db:
        export_records(db=db, write=lines.append)
    return lines


def launch_of(store: Store, path: str, adapters: dict[str, AdapterConfig] = FAKE) -> LaunchPlan:
    return read_launch(store=store, adapters=adapters, session_id="s1", path=path)


# --- the program, as execvp finds it ----------------------------------------------------------


def test_a_bare_name_is_looked_up_on_path(tmp_path: Path) -> None:
    bin_dir = agent_bin(tmp_path)
    assert find_program("fake-agent", str(tmp_path), bin_dir) == os.path.join(bin_dir, "fake-agent")
    assert find_program("fake-agent", str(tmp_path), str(tmp_path / "empty")) is None
    assert find_program("", str(tmp_path), bin_dir) is None


def test_a_name_with_a_slash_and_relative_path_entries_are_the_working_directorys(
    tmp_path: Path,
) -> None:
    agent_bin(tmp_path)
    # ./bin/fake-agent from tmp_path; "bin" on PATH means tmp_path/bin from there, not from here.
    assert find_program("./bin/fake-agent", str(tmp_path), "") == os.path.join(
        tmp_path, "./bin/fake-agent"
    )
    assert find_program("fake-agent", str(tmp_path), "bin") == str(tmp_path / "bin/fake-agent")
    assert find_program("./bin/fake-agent", str(tmp_path / "bin"), "") is None
    assert find_program("fake-agent", str(tmp_path / "bin"), "bin") is None


def test_a_file_that_is_not_executable_is_not_a_program(tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("not a program")
    assert find_program("notes", str(tmp_path), str(tmp_path)) is None


# --- the plan, and every refusal before the resume -------------------------------------------


def test_a_launch_plan_is_the_resume_plan_in_the_sessions_directory(
    store: Store, tmp_path: Path
) -> None:
    workdir = paused_session(store, tmp_path)
    launch = launch_of(store, agent_bin(tmp_path))
    assert launch.argv[:3] == ("fake-agent", "--resume", "ext-42")
    assert launch.argv[3] == launch.view.briefing.markdown
    assert launch.argv[3].startswith("# Roundtable Resume Briefing")
    assert launch.cwd == str(workdir)
    assert launch.program == os.path.join(agent_bin(tmp_path), "fake-agent")
    assert launch.session.version == session_row(store)["version"]


@pytest.mark.parametrize(
    ("setup", "reason", "words"),
    [
        ("no adapter", "not_resumable", "is not resumable: Adapter 'fake' is not configured"),
        ("no external id", "not_resumable", "has no external session id"),
        ("missing directory", "working_directory", "does not exist on this machine"),
        ("a file", "working_directory", "is not a directory on this machine"),
        ("relative directory", "working_directory", "is not an absolute path"),
        ("program missing", "program_not_found", "The program 'fake-agent' of adapter 'fake'"),
    ],
)
def test_what_cannot_be_launched_is_refused_in_words_and_changes_nothing(
    store: Store, tmp_path: Path, setup: str, reason: str, words: str
) -> None:
    values: dict[str, object] = {}
    if setup == "no external id":
        values["external_session_id"] = None
    if setup == "missing directory":
        values["working_directory"] = str(tmp_path / "gone")
    if setup == "a file":
        (tmp_path / "file").write_text("x")
        values["working_directory"] = str(tmp_path / "file")
    if setup == "relative directory":
        values["working_directory"] = "work"
    paused_session(store, tmp_path, **values)
    before = dump(store)
    path = str(tmp_path / "empty") if setup == "program missing" else agent_bin(tmp_path)
    with pytest.raises(errors.NotLaunchable) as refused:
        launch_of(store, path, adapters={} if setup == "no adapter" else FAKE)
    assert refused.value.code == "not_launchable"
    assert refused.value.details == {"reason": reason}
    assert words in refused.value.message
    assert refused.value.message.endswith("Nothing was started.") or "nothing was started" in (
        refused.value.message
    )
    assert "ext-42" not in refused.value.message  # the external id is sensitive
    assert dump(store) == before


# --- the resume --------------------------------------------------------------------------------


def test_the_resume_records_the_operator_and_a_retry_with_its_key_replays(
    store: Store, tmp_path: Path
) -> None:
    paused_session(store, tmp_path)
    launch = launch_of(store, agent_bin(tmp_path))
    clock = FakeClock()
    outcome = resume_for_launch(
        store=store, launch=launch, actor="olivia", idempotency_key="k1", clock=clock
    )
    assert (outcome.session.status, outcome.replayed) == ("resuming", False)
    events = history(store)
    assert [event for event, _payload in events] == ["registered", "resuming"]
    assert events[-1][1]["actor"] == "olivia"
    # A launch that failed after its resume is tried again with the same key: the session is
    # resuming now, and the plan is made again; the resume replays, nothing is written twice.
    again = launch_of(store, agent_bin(tmp_path))
    replay = resume_for_launch(
        store=store, launch=again, actor="olivia", idempotency_key="k1", clock=clock
    )
    assert replay.replayed
    assert len(history(store)) == 2
    # Without the key, a resuming session is not resumed again.
    before = dump(store)
    with pytest.raises(errors.IllegalSessionTransition):
        resume_for_launch(store=store, launch=again, actor="olivia", idempotency_key="k2")
    assert dump(store) == before


def test_a_row_that_changed_since_the_plan_is_not_resumed(store: Store, tmp_path: Path) -> None:
    paused_session(store, tmp_path, status="active")
    launch = launch_of(store, agent_bin(tmp_path))
    with store.write() as db:
        pause(db=db, session_id="s1", actor="someone-else")
    before = dump(store)
    with pytest.raises(errors.SessionTransitionConflict):
        resume_for_launch(store=store, launch=launch, actor="olivia", idempotency_key="k1")
    assert dump(store) == before


@pytest.mark.parametrize(
    ("status", "enabled", "code"),
    [
        ("active", True, "illegal_session_transition"),
        ("paused", False, "agent_unavailable"),
    ],
)
def test_the_resumes_own_rules_still_hold(
    store: Store, tmp_path: Path, status: str, enabled: bool, code: str
) -> None:
    paused_session(store, tmp_path, status=status)
    if not enabled:
        with store.write() as db:
            db.exec_driver_sql("UPDATE agents SET is_enabled = 0 WHERE id = 'ada'")
    launch = launch_of(store, agent_bin(tmp_path))
    before = dump(store)
    with pytest.raises(errors.StoreError) as refused:
        resume_for_launch(store=store, launch=launch, actor="olivia", idempotency_key="k1")
    assert refused.value.code == code
    assert dump(store) == before


# --- tmux ------------------------------------------------------------------------------------


def test_the_tmux_command_passes_the_argv_as_separate_arguments(
    store: Store, tmp_path: Path
) -> None:
    workdir = paused_session(store, tmp_path, session_id="s1")
    launch = launch_of(store, agent_bin(tmp_path))
    command = tmux_command(launch, tmux="/usr/bin/tmux", path="/opt/bin:/usr/bin")
    assert command == [
        "/usr/bin/tmux", "new-window", "-P", "-F", "#{window_index} #{pane_id}", "-n", "s1",
        "-c", str(workdir), "-e", "PATH=/opt/bin:/usr/bin", "-e", "ROUNDTABLE_SESSION_ID=s1",
        "--", *launch.argv,
    ]  # fmt: skip


def test_a_tmux_window_name_is_plain() -> None:
    assert tmux_window_name("sess-01") == "sess-01"
    assert tmux_window_name("[bold]x #{pane} $(rm)") == "bold-x-pane-rm"
    assert tmux_window_name("###") == "session"
    assert len(tmux_window_name("x" * 200)) == 40


def test_a_command_too_long_for_tmux_is_known_before_the_resume(
    store: Store, tmp_path: Path
) -> None:
    paused_session(store, tmp_path)
    launch = launch_of(store, agent_bin(tmp_path))
    command = tmux_command(launch, tmux="tmux", path="/usr/bin")
    assert tmux_refusal(command) is None
    long = {"fake": AdapterConfig(name="fake", resume_pattern="fake-agent " + "x" * 17_000)}
    refusal = tmux_refusal(tmux_command(launch_of(store, agent_bin(tmp_path), long), tmux="tmux",
                                        path="/usr/bin"))  # fmt: skip
    assert refusal is not None
    assert "tmux takes at most about 15 KiB" in refusal
    assert "roundtable resume --session S --exec" in refusal


def test_a_hash_in_the_working_directory_is_no_tmux_format(store: Store, tmp_path: Path) -> None:
    """tmux expands formats in -c, and "#(cmd)" runs cmd: the directory's "#" is escaped."""
    odd = tmp_path / "#(touch PWNED)"
    odd.mkdir()
    paused_session(store, tmp_path, session_id="s1", working_directory=str(odd))
    command = tmux_command(launch_of(store, agent_bin(tmp_path)), tmux="tmux", path=None)
    assert command[command.index("-c") + 1] == str(tmp_path / "##(touch PWNED)")
