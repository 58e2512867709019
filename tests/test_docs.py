"""The docs (issue 32): a README a newcomer reads in minutes, and a MkDocs site that builds
strictly (no broken link, no missing page) whose reference pages are generated and cover every
command of the CLI and every route of the server."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from roundtable_console.api.app import api_document, web_routes
from roundtable_console.tui.cli import cli
from roundtable_console.tui.config import ENVIRONMENT_HELP, SETTING_HELP, Settings

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    # Without Material's banner about MkDocs 2 (not a warning about these docs).
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    return out


def _text(html: Path) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.read_text(encoding="utf-8")))


def leaf_commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += leaf_commands(command, (*path, name))
        else:
            found.append((*path, name))
    return found


def test_every_command_is_in_the_cli_reference(site: Path) -> None:
    page = _text(site / "reference" / "cli" / "index.html")
    commands = leaf_commands(cli)  # type: ignore[arg-type]
    assert len(commands) > 25
    missing = [path for path in commands if f"roundtable {' '.join(path)}" not in page]
    assert missing == []
    assert "--idempotency-key" in page and "--behind-proxy" in page  # options too


def test_every_route_is_in_the_http_reference(site: Path) -> None:
    page = _text(site / "reference" / "http-api" / "index.html")
    routes = [
        (method.upper(), path) for path, item in api_document()["paths"].items() for method in item
    ]
    assert len(routes) > 15
    missing = [(m, p) for m, p in routes if f"{m} {p}" not in page]
    assert missing == []
    assert [(m, p) for m, p in web_routes() if p not in page] == []


def test_every_setting_and_variable_is_in_the_configuration_reference(site: Path) -> None:
    page = _text(site / "reference" / "configuration" / "index.html")
    keys = [name for name in Settings._fields if name != "source"]
    assert sorted(SETTING_HELP) == sorted(keys)
    assert [key for key in keys if key not in page] == []
    assert [name for name in ENVIRONMENT_HELP if name not in page] == []


def test_every_page_of_the_guide_is_built(site: Path) -> None:
    for page in ("getting-started", "operators-guide", "agents", "teams", "security",
                 "operations", "benchmarks", "development", "reporting", "troubleshooting",
                 "first-agent", "how-it-stays-fast", "reference/glossary"):  # fmt: skip
        assert (site / page / "index.html").is_file(), page
    assert (site / "pictures" / "test_terminate_dialog_with_claims.svg").is_file()
    assert (site / "search" / "search_index.json").is_file()


def test_the_readme_is_short_starts_with_the_demo_and_develops_with_the_tests() -> None:
    """The quick start's command first; the test command first under "Development" (issue 45)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    blocks = re.findall(r"```sh\n(.*?)```", readme, flags=re.DOTALL)
    assert blocks[0].strip() == (
        "python3 -m venv .venv && .venv/bin/pip install -q -c constraints.txt -e . && "
        ".venv/bin/roundtable tui --demo"
    )
    assert "Python 3.11 or newer" in readme.split("```sh")[0] + readme.split("```sh")[1]
    test_command = (
        "python3 -m venv .venv && .venv/bin/pip install -q -c constraints.txt -e '.[test]' && "
        ".venv/bin/pytest"
    )
    development = readme.split("\n## Development\n", 1)[1]
    assert re.findall(r"```sh\n(.*?)```", development, flags=re.DOTALL)[0].strip() == test_command
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "mkdocs serve" in readme and "'.[docs]'" in readme


def _tracked(*, docs: bool = False) -> dict[str, bytes]:
    """Every file git tracks (those under docs/ only with ``docs``), by path, as bytes (one
    deleted meanwhile left out)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60, check=True
    ).stdout.decode()
    found = {}
    for name in filter(None, listed.split("\0")):
        path = ROOT / name
        if (docs or not name.startswith("docs/")) and path.is_file():
            found[name] = path.read_bytes()
    return found


# Written so that this file does not match itself: a sibling directory, or the product design
# document, which lives outside the repository (its name, then ".md" or a section sign).
_OUTSIDE = re.compile(rb"\.\./shared/|shared[/]reference|DESIGN(?:[.]md\b| \xc2\xa7)")
# A page of the docs, maybe with a section: ``docs/teams.md#a-team-deployment``. A path that
# opens a string is data, not a citation (the demo's claims name files of a made-up project).
_CITED = re.compile(
    rb"(?<![\"'])docs/((?:reference/|how-to/)?[A-Za-z0-9_-]+)\.md(?:#([A-Za-z0-9_-]+))?"
)


def test_nothing_cites_a_reference_outside_the_repository() -> None:
    """What the code relies on about Roundtable, the agents and the product's own rules is stated
    in docs/, in our words: no tracked file points at a sibling directory a clone does not have,
    or cites the design document kept outside the repository."""
    found = [
        (name, content.count(b"\n", 0, match.start()) + 1)  # the file, the line
        for name, content in _tracked(docs=True).items()
        for match in _OUTSIDE.finditer(content)
    ]
    assert found == []


def test_every_cited_reference_page_and_section_exists(site: Path) -> None:
    """A page of docs/ a file cites (``docs/….md`` or ``docs/reference/….md``, maybe with
    ``#section``) is a page of the site, with that section."""
    cited = {
        (match[1].decode(), (match[2] or b"").decode(), name)
        for name, content in _tracked().items()
        for match in _CITED.finditer(content)
    }
    pages = {page for page, _, _ in cited}
    assert pages >= {"reference/agent-facts", "reference/roundtable", "agents", "development"}
    missing = []
    for page, section, name in sorted(cited):
        built = site / ("" if page == "index" else page) / "index.html"
        if not built.is_file():
            missing.append(f"{name}: docs/{page}.md")
        elif section and f'id="{section}"' not in built.read_text(encoding="utf-8"):
            missing.append(f"{name}: docs/{page}.md#{section}")
    assert missing == []


def sentence_lengths(markdown: str) -> list[int]:
    """Words per sentence of a page's prose: code blocks, tables, headings and pictures left out,
    inline code one word, a link its text, each list item a sentence of its own."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    lengths = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*] |\d+\. |\*\*))", text):
        skipped = ("|", "#", "<", "![", "[!")
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        prose = " ".join(line for line in lines if not line.startswith(skipped))
        prose = re.sub(r"^(?:[-*]|\d+\.)\s+", "", prose)
        prose = re.sub(r"`[^`]*`", "CODE", prose)
        prose = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", prose)
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(*`\"])", prose):
            if words := len(sentence.split()):
                lengths.append(words)
    return lengths


# (average, longest) words per sentence. A page not named here, new ones included, keeps to the
# default. A page named here is held where it stands until it is rewritten in short sentences: a
# bound here only ever goes down (every page keeps to the default today).
SENTENCE_BOUNDS_DEFAULT = (20.0, 40)
SENTENCE_BOUNDS: dict[str, tuple[float, int]] = {}


def test_sentence_length_measures_prose_only() -> None:
    page = (
        "# A heading of many many words\n\nOne two three. Four five.\n\n"
        "```sh\nnot prose at all\n```\n\n| a | table |\n\n- a `long code span` item\n"
    )
    assert sentence_lengths(page) == [3, 2, 3]


@pytest.mark.parametrize(
    "page",
    [
        *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").rglob("*.md")),
        "README.md",
        "SECURITY.md",
    ],
)
def test_every_page_keeps_its_sentences_short(page: str) -> None:
    lengths = sentence_lengths((ROOT / page).read_text(encoding="utf-8"))
    assert lengths, f"{page}: no prose found"
    average, longest = SENTENCE_BOUNDS.get(page, SENTENCE_BOUNDS_DEFAULT)
    measured = (round(sum(lengths) / len(lengths), 1), max(lengths))
    assert measured[0] <= average and measured[1] <= longest, f"{page}: {measured}"


# The pages for those who use the console: what to do and what happens, not where the code is.
USER_PAGES = (
    "README.md",
    "docs/index.md",
    "docs/getting-started.md",
    "docs/first-agent.md",
    "docs/operators-guide.md",
    "docs/agents.md",
    "docs/teams.md",
    "docs/how-to/team-server.md",
    "docs/how-to/several-machines.md",
    "docs/how-to/phone.md",
    "docs/security.md",
    "docs/operations.md",
    "docs/troubleshooting.md",
    "docs/reference/glossary.md",
)
INTERNALS = re.compile(
    r"\b(?:tests/test_\w+\.py|(?:store|screens|tui|api|agents)/[\w/]+\.py"
    r"|migrations? 00\d\d|gc\.freeze|PRAGMA)"
)


@pytest.mark.parametrize("page", USER_PAGES)
def test_a_user_page_names_no_source_file(page: str) -> None:
    text = re.sub(r"```.*?```", " ", (ROOT / page).read_text(encoding="utf-8"), flags=re.S)
    assert INTERNALS.findall(text) == []


def _docs_hooks() -> Any:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_pages_and_pictures_committed_are_current() -> None:
    """They are committed so that GitHub shows them; `python docs/hooks.py` writes them again."""
    hooks = _docs_hooks()
    for uri, text in hooks.generated_pages().items():
        assert (ROOT / "docs" / uri).read_text(encoding="utf-8") == text, uri
    for name in hooks.PICTURES:
        made = (hooks.SNAPSHOTS / f"{name}.svg").read_bytes()
        assert (ROOT / "docs" / "pictures" / f"{name}.svg").read_bytes() == made, name
