"""What a session changed (issue 43, point 2), read by its host: a session started by ``roundtable
new`` in a worktree of its own (a stand-in agent), whose worktree then holds a commit, an edit
not committed, a file not yet added, a binary file, a secret and terminal escapes. Through a real
``roundtable serve``: the commits, the files and the patch (redacted, escapes shown, the binary
named), a large patch paged by offset and read whole page by page, the command line through the
server and on the store; what cannot be read is said (a session with no host, a host offline),
an agent token reads its own agent's only, and nothing the repository's config names is run."""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path
from typing import Any

from tests import http_calls
from tests.helpers import history, register_session
from tests.hosts_support import Team, ended, wait_until
from tests.test_hosts_launch import operator_page
from tests.test_hosts_new import git, machine, repository, roundtable, team

__all__ = ["machine", "team"]  # the fixtures of tests/test_hosts_new.py: a server, a laptop

SECRET = "sk-ant-api03-" + "Q" * 40


def changes(team: Team, session_id: str, token: str = "vic", offset: int = 0) -> dict[str, Any]:
    answer = http_calls.get(
        f"{team.served.url}/api/v1/workspaces/ws-1/sessions/{session_id}/changes",
        params={"offset": str(offset)}, headers=team.bearer(token), timeout=60,
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_a_sessions_changes_are_read_by_its_host(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    project = repository(tmp_path / "api")
    (project / "notes.txt").write_text("one\ntwo\n")
    (project / ".gitattributes").write_text("*.txt filter=x\n")
    git(project, "add", "notes.txt", ".gitattributes")
    git(project, "commit", "-q", "-m", "notes")
    pwned = tmp_path / "pwned"
    # The repository's config names programs (the agent may write it): none of them is run.
    git(project, "config", "diff.external", f"touch {pwned}")
    git(project, "config", "core.fsmonitor", f"touch {pwned}")
    host = team.host("--project", str(project), "--worktrees", str(tmp_path / "wt"), env=machine)
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        started = http_calls.post(
            f"{team.served.url}/api/v1/hosts/laptop/sessions",
            json={"project": "api", "agent": "claude-code", "worktree": True,
                  "branch": "rt/csv", "prompt": "add the csv export", "workspace_id": "ws-1"},
            headers={**team.bearer("ops"), "Idempotency-Key": uuid.uuid4().hex}, timeout=90,
        )  # fmt: skip
        assert started.status_code == 201, started.text
        session_id, tree = started.json()["session_id"], Path(started.json()["directory"])
        base = started.json()["base"]
        nothing = changes(team, session_id)
        assert nothing["available"] is True and nothing["files"] == [] and nothing["patch"] == ""
        assert nothing["branch"] == "rt/csv" and nothing["base"] == base
        # What the agent did: a commit, an edit not committed, new files not yet added.
        (tree / "export.py").write_text("def export():\n\treturn 'csv'\n")
        git(tree, "add", "export.py")
        git(tree, "commit", "-q", "-m", "Add the CSV export")
        (tree / "notes.txt").write_text("one\nTWO\n")
        (tree / "config.env").write_text(f"ANTHROPIC_API_KEY={SECRET}\ntitle=\x1b]0;owned\x07\n")
        (tree / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)))
        # A filter the repository defines for its files: never run by the host.
        git(project, "config", "filter.x.clean", f"sh -c 'touch {pwned}; cat'")
        git(project, "config", "filter.x.process", f"touch {pwned}")
        shown = changes(team, session_id)
        assert [c["subject"] for c in shown["commits"]] == ["Add the CSV export"]
        files = {item["path"]: item for item in shown["files"]}
        assert files["export.py"] == {"path": "export.py", "status": "added", "added": 2,
                                      "deleted": 0, "binary": False}  # fmt: skip
        assert files["notes.txt"]["status"] == "modified" and files["notes.txt"]["added"] == 1
        assert files["config.env"]["status"] == "untracked"
        assert files["logo.png"]["binary"] is True and files["logo.png"]["added"] is None
        patch = shown["patch"]
        # Tabs shown as spaces (to the fourth column: the diff's "+" takes the first).
        assert "+def export():\n+   return 'csv'" in patch and "-two\n+TWO" in patch
        assert SECRET not in patch and "ANTHROPIC_API_KEY=[REDACTED]" in patch
        assert "\x1b" not in patch and "\x07" not in patch and "\\e]0;owned" in patch
        assert "Binary files /dev/null and b/logo.png differ" in patch
        assert shown["next_offset"] is None
        # A large patch, a page at a time: the pages, end to end, are the patch.
        (tree / "big.txt").write_text("".join(f"line {n}\n" for n in range(60_000)))
        pages, offset = [], 0
        while True:
            page = changes(team, session_id, offset=offset)
            pages.append(page["patch"])
            assert page["patch"].endswith("\n")
            if page["next_offset"] is None:
                break
            offset = page["next_offset"]
        whole = "".join(pages)
        assert len(pages) >= 3 and "+line 0\n" in whole and "+line 59999\n" in whole
        assert whole.count("+line ") == 60_000
        # The command line: through the server, and on the store.
        through = roundtable(team, "changes", session_id, "--files", "--server",
                             team.served.url, "--token-env", "RT_VIC",
                             env={"RT_VIC": team.tokens["vic"]})  # fmt: skip
        assert through.returncode == 0, through.stderr
        assert "rt/csv" in through.stdout and "Add the CSV export" in through.stdout
        assert "binary  logo.png" in through.stdout and "@@" not in through.stdout
        on_store = roundtable(team, "changes", session_id, "--json", "--db", team.url)
        assert on_store.returncode == 0, on_store.stderr
        read = json.loads(on_store.stdout)
        assert [item for item in read["files"] if item["path"] != "big.txt"] == shown["files"]
        assert read["next_offset"] is not None
        # The web console's page of it, in Chromium: the files, the patch coloured by line.
        with operator_page(team) as page:
            page.goto(f"{team.served.url}/sessions/{session_id}")
            page.click("text=Changes")
            page.wait_for_url(f"**/sessions/{session_id}/changes")
            rows = page.locator(".changed-files tbody tr")
            assert rows.count() == len(read["files"])
            assert page.locator(".patch .add").first.inner_text().startswith("+")
            assert SECRET not in page.content()
            assert page.locator("text=Next page of the patch").count() == 1
            page.screenshot(path=str(tmp_path / "changes.png"), full_page=False)
            page.click("text=Next page of the patch")
            page.wait_for_url("**/changes?offset=*")
            page.locator("h2", has_text="Patch from byte").wait_for()
        # An agent token reads its own agent's sessions' changes only.
        hooks = http_calls.get(
            f"{team.served.url}/api/v1/workspaces/ws-1/sessions/{session_id}/changes",
            headers=team.bearer("hooks"),
        )  # fmt: skip
        assert hooks.status_code == 403  # an agent's token: the rows it writes name anything
        # A row an agent's token wrote, naming this session's worktree: the host reads nothing
        # of it, and removes nothing.
        forged = http_calls.put(
            f"{team.served.url}/api/v1/workspaces/ws-1/sessions/forged",
            json={"agent_id": "claude-code", "run_id": "r", "adapter": "claude",
                  "working_directory": str(tree), "host": "laptop",
                  "metadata": {"worktree": {"path": str(tree), "project": str(project),
                                            "branch": "rt/csv", "base": base}}},
            headers={**team.bearer("hooks"), "Idempotency-Key": "forge"}, timeout=30,
        )  # fmt: skip
        assert forged.status_code in (200, 201), forged.text
        read_forged = changes(team, "forged")
        assert read_forged["available"] is False and "not a worktree the host made for it" in (
            read_forged["reason"])  # fmt: skip
        taken = finish(team, "forged", discard=True)
        assert taken.status_code == 409 and "not a worktree" in taken.json()["detail"]
        assert tree.is_dir()
        bad = http_calls.get(
            f"{team.served.url}/api/v1/workspaces/ws-1/sessions/{session_id}/changes",
            params={"offset": "-1"}, headers=team.bearer("vic"),
        )  # fmt: skip
        assert bad.status_code == 400
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
    assert not pwned.exists()
    wait_until(lambda: not team.online("laptop"), "the host offline")
    offline = changes(team, session_id)
    assert offline["available"] is False and "offline" in offline["reason"]
    refused = roundtable(team, "changes", session_id, "--db", team.url)
    assert refused.returncode == 1 and "offline" in refused.stderr


def test_a_session_with_no_host_or_another_agents_says_so(team: Team) -> None:
    with team.store.write() as db:
        register_session(db, "by-hand", working_directory="/srv/api", workspace_id="ws-1")
        register_session(db, "codex-s", agent_id="codex", working_directory="/srv/api",
                         workspace_id="ws-1", host="laptop")  # fmt: skip
    shown = changes(team, "by-hand")
    assert shown == {"available": False, "reason": shown["reason"]}
    assert "no host" in shown["reason"]
    others = http_calls.get(
        f"{team.served.url}/api/v1/workspaces/ws-1/sessions/codex-s/changes",
        headers=team.bearer("hooks"),
    )  # fmt: skip
    assert others.status_code == 403
    unknown = changes(team, "codex-s")  # its host was never seen
    assert unknown["available"] is False and "no host" in unknown["reason"]
    cli = roundtable(team, "changes", "by-hand", "--db", team.url)
    assert cli.returncode == 1 and "no host" in cli.stderr and "Traceback" not in cli.stderr


def new_session(team: Team, branch: str) -> dict[str, Any]:
    started = http_calls.post(
        f"{team.served.url}/api/v1/hosts/laptop/sessions",
        json={"project": "api", "agent": "claude-code", "worktree": True, "branch": branch,
              "prompt": "add the csv export", "workspace_id": "ws-1"},
        headers={**team.bearer("ops"), "Idempotency-Key": uuid.uuid4().hex}, timeout=90,
    )  # fmt: skip
    assert started.status_code == 201, started.text
    return dict(started.json())


def finish(team: Team, session_id: str, token: str = "ops", **body: Any) -> Any:
    return http_calls.post(
        f"{team.served.url}/api/v1/workspaces/ws-1/sessions/{session_id}/finish",
        json=body, headers=team.bearer(token), timeout=90,
    )  # fmt: skip


def test_finishing_removes_the_worktree_keeps_the_branch_and_ends_the_session(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    project = repository(tmp_path / "api")
    host = team.host("--project", str(project), "--worktrees", str(tmp_path / "wt"), env=machine)
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        first = new_session(team, "rt/first")
        session_id, tree = first["session_id"], Path(first["directory"])
        base = f"{team.served.url}/api/v1/workspaces/ws-1/sessions/{session_id}"
        running = finish(team, session_id)
        assert running.status_code == 409 and "still runs" in running.json()["detail"]
        assert finish(team, session_id, token="vic").status_code == 403
        stopped = http_calls.post(f"{base}/stop-agent", json={"grace_seconds": 2},
                                  headers=team.bearer("ops"), timeout=60)  # fmt: skip
        assert stopped.status_code == 200, stopped.text
        (tree / "draft.md").write_text("not committed\n")
        unclean = finish(team, session_id)
        assert unclean.status_code == 409 and unclean.json()["code"] == "worktree_not_clean"
        assert "draft.md" in unclean.json()["detail"] and tree.is_dir()
        # The command line, with no terminal to ask on: refused, then told to discard.
        refused = roundtable(team, "finish", session_id, "--db", team.url)
        assert refused.returncode == 1 and "--discard" in refused.stderr and tree.is_dir()
        done = roundtable(team, "finish", session_id, "--discard", "--db", team.url,
                          "--operator", "olivia")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"git -C {project.resolve()} merge rt/first" in done.stdout
        assert not tree.exists() and "rt/first" in git(project, "branch", "--list", "rt/first")
        shown = http_calls.get(base, headers=team.bearer("vic")).json()
        assert shown["status"] == "finished"
        kinds = [(kind, payload) for kind, payload in history(team.store, session_id)]
        assert ("finished", {"worktree": str(tree), "branch": "rt/first", "discarded": 1}) in kinds
        again = finish(team, session_id)
        assert again.status_code == 409 and again.json()["code"] == "not_finishable"
        # A clean worktree, through the API: removed at once; the project's HEAD unmoved.
        second = new_session(team, "rt/second")
        by_id = f"{team.served.url}/api/v1/sessions/{second['session_id']}"
        http_calls.post(f"{by_id}/stop-agent", json={"grace_seconds": 2},
                        headers=team.bearer("ops"), timeout=60)  # fmt: skip
        clean = finish(team, second["session_id"])
        assert clean.status_code == 200, clean.text
        assert clean.json()["discarded"] == [] and clean.json()["branch"] == "rt/second"
        assert git(project, "rev-parse", "--abbrev-ref", "HEAD") == "main"
        assert git(project, "worktree", "list").count("\n") == 0  # the project's own only
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
    with team.store.write() as db:
        register_session(db, "plain", working_directory="/srv", workspace_id="ws-1",
                         host="laptop")  # fmt: skip
    plain = finish(team, "plain")
    assert plain.status_code == 409 and plain.json()["code"] in ("not_finishable",
                                                                 "host_unavailable")  # fmt: skip
