"""The layers of ``docs/development.md#layers``, kept by a check rather than by hope: arrows go tui
→ screens → store. store/ is the data layer (no UI, no CLI); screens/ never reach back into tui/.
Each folder installs as a subpackage of the one import name, ``roundtable_console``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "roundtable_console"
# Each product folder, by the name it installs under.
PRODUCT_PACKAGES = {
    folder: f"{PACKAGE}.{folder}"
    for folder in ("store", "screens", "tui", "api", "agents", "hosts", "client")
}
WEB = ("fastapi", "starlette", "uvicorn", "jinja2", "markupsafe", "websockets")
STORE_MUST_NOT_IMPORT = (
    "textual", "rich", "click", "httpx", *WEB, f"{PACKAGE}.screens", f"{PACKAGE}.tui",
    f"{PACKAGE}.api", f"{PACKAGE}.hosts", f"{PACKAGE}.client",
)  # fmt: skip
SCREENS_MUST_NOT_IMPORT = (f"{PACKAGE}.tui", f"{PACKAGE}.api", f"{PACKAGE}.client", *WEB)
# The server calls the store's functions; the console and the command line are not its.
API_MUST_NOT_IMPORT = ("textual", "rich", "click", f"{PACKAGE}.screens", f"{PACKAGE}.tui")
# The host (roundtable host run) is a front end of its own over the service layer: it speaks to
# the server over the wire only (its messages are store.hosts.protocol's), never through its code.
HOSTS_MUST_NOT_IMPORT = (
    "textual", "rich", "click", "fastapi", "starlette", "uvicorn", "jinja2", "markupsafe",
    f"{PACKAGE}.screens", f"{PACKAGE}.tui", f"{PACKAGE}.api",
)  # fmt: skip
# The agents' formats sit over the service layer: no console, command line or server in them.
AGENTS_MUST_NOT_IMPORT = (
    "textual", "rich", "click", *WEB, f"{PACKAGE}.screens", f"{PACKAGE}.tui", f"{PACKAGE}.api",
)  # fmt: skip


def modules(package: str) -> list[Path]:
    found = sorted((ROOT / package).rglob("*.py"))
    assert found, f"no modules under {package}/"
    return found


def imported(path: Path) -> set[str]:
    """Every module a file imports, anywhere in it (inside functions too), by its full name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def offending(path: Path, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        name
        for name in imported(path)
        if any(name == top or name.startswith(top + ".") for top in forbidden)
    )


@pytest.mark.parametrize("path", modules("store"), ids=lambda p: str(p.relative_to(ROOT)))
def test_store_imports_no_ui_and_no_cli(path: Path) -> None:
    assert offending(path, STORE_MUST_NOT_IMPORT) == []


@pytest.mark.parametrize("path", modules("screens"), ids=lambda p: str(p.relative_to(ROOT)))
def test_screens_import_nothing_from_tui(path: Path) -> None:
    assert offending(path, SCREENS_MUST_NOT_IMPORT) == []


@pytest.mark.parametrize("path", modules("api"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_server_imports_only_the_store(path: Path) -> None:
    assert offending(path, API_MUST_NOT_IMPORT) == []


@pytest.mark.parametrize("path", modules("agents"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_agents_import_only_the_store(path: Path) -> None:
    assert offending(path, AGENTS_MUST_NOT_IMPORT) == []


@pytest.mark.parametrize("path", modules("hosts"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_host_imports_only_the_store(path: Path) -> None:
    assert offending(path, HOSTS_MUST_NOT_IMPORT) == []


# A person's client of the server (client/): the wire and the store's shapes (and the agents'
# records it answers in: a transcript's page, a stop), nothing of the console, the command line
# or the server's own code; the command line and the console pick it at start-up.
CLIENT_MUST_NOT_IMPORT = (
    "textual", "rich", "click", *WEB, f"{PACKAGE}.screens", f"{PACKAGE}.tui", f"{PACKAGE}.api",
    f"{PACKAGE}.hosts",
)  # fmt: skip


@pytest.mark.parametrize("path", modules("client"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_client_imports_only_the_store(path: Path) -> None:
    assert offending(path, CLIENT_MUST_NOT_IMPORT) == []


def test_the_store_imports_no_agent() -> None:
    for path in modules("store"):
        assert offending(path, (f"{PACKAGE}.agents",)) == [], path


def test_the_command_line_imports_the_server_only_inside_serve() -> None:
    """``roundtable serve`` alone loads the web framework: every other command module, the
    agents' quick path among them, imports none of it at its top."""
    for path in modules("tui"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {
            alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names
        } | {node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom)}
        web = sorted(name for name in top if name.split(".")[0] in WEB or ".api" in name)
        assert web == [], path


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import json\n"
        "def f():\n"
        "    from textual.widgets import Static\n"
        "    import rich.text\n"
        "    from roundtable_console.tui import output\n"
        "from .local import thing\n"
        "from tui import unrelated\n"
    )
    assert offending(sample, STORE_MUST_NOT_IMPORT) == [
        "rich.text",
        "roundtable_console.tui",
        "textual.widgets",
    ]
    assert offending(sample, ("json",)) == ["json"]
    assert offending(sample, ("js",)) == []


# ------------------------------------------------------------------------- no import cycles


def module_name(path: Path, folder: Path, package: str) -> str:
    parts = (*package.split("."), *path.relative_to(folder).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, packages: dict[str, str]) -> dict[str, set[str]]:
    """Which of the packages' modules (each folder under ``root`` by its package name) each of
    them imports, anywhere in it (inside functions and under ``TYPE_CHECKING`` too): ``from pkg
    import mod`` counts as importing ``pkg.mod``."""
    paths = {
        module_name(path, root / folder, package): path
        for folder, package in packages.items()
        for path in sorted((root / folder).rglob("*.py"))
    }
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        graph[name] = {target for target in targets if target in paths and target != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_product_modules_import_one_another_without_cycles() -> None:
    """A module that imports another which imports it back (even inside a function, where it
    works by the order things happen to run in) is one design split across two files."""
    graph = import_graph(ROOT, PRODUCT_PACKAGES)
    assert (
        "roundtable_console.store.db.database" in graph
        and "roundtable_console.screens.session.detail" in graph
    )
    assert import_cycles(graph) == []


def test_the_cycle_check_sees_loops_through_functions_and_from_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    import pkg.b\n")
    (package / "b.py").write_text("from pkg import c\n")
    (package / "c.py").write_text("from pkg.a import f\n")
    (package / "d.py").write_text("import pkg.a\n")
    (package / "sub" / "e.py").write_text("from .. import d\nfrom . import f\n")
    (package / "sub" / "f.py").write_text("from ..sub.e import x\n")
    graph = import_graph(tmp_path, {"pkg": "pkg"})
    assert graph["pkg.sub.e"] == {"pkg", "pkg.d", "pkg.sub", "pkg.sub.f"}
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.sub.e", "pkg.sub.f"]]


# ------------------------------------------------------------------ migrations stand alone

# What a migration may take from the live store code, each with the reason that cannot change
# what the migration creates. Everything a migration creates (SQL text, functions, triggers,
# index expressions, names) is written out in the migration itself, as it was at its revision:
# a later change to the store's code must not change what an old revision builds. None today:
# each migration also reads the progress callback (store.db.schema hands it over) by itself.
MIGRATION_MAY_IMPORT: dict[tuple[str, str], str] = {}


def store_imports(path: Path) -> set[tuple[str, str]]:
    """(module, name) for everything a file takes from the product (``*`` for a whole module);
    relative imports keep their dots, so they are never taken for an allowed helper."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(
                (alias.name, "*")
                for alias in node.names
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + ".")
            )
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if node.level or module == PACKAGE or module.startswith(PACKAGE + "."):
                found.update((module, alias.name) for alias in node.names)
    return found


@pytest.mark.parametrize(
    "path",
    sorted((ROOT / "store" / "db" / "migrations").rglob("*.py")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_a_migration_takes_nothing_from_the_store_that_could_change_what_it_creates(
    path: Path,
) -> None:
    assert sorted(store_imports(path) - MIGRATION_MAY_IMPORT.keys()) == []


def test_the_migration_check_sees_every_form_of_import(tmp_path: Path) -> None:
    sample = tmp_path / "0099_sample.py"
    sample.write_text(
        "from alembic import op\n"
        "from roundtable_console.store.db.schema import migration_progress, current_revision\n"
        "from roundtable_console.store.reads.sqlfuncs import PG_TS_KEY_FUNCTION\n"
        "def upgrade():\n"
        "    import roundtable_console.store.db.models\n"
        "    from ..schema import LARGE_TABLE_ROWS\n"
        "    from roundtable_console.store import records\n"
    )
    assert sorted(store_imports(sample) - MIGRATION_MAY_IMPORT.keys()) == [
        ("..schema", "LARGE_TABLE_ROWS"),
        ("roundtable_console.store", "records"),
        ("roundtable_console.store.db.models", "*"),
        ("roundtable_console.store.db.schema", "current_revision"),
        ("roundtable_console.store.db.schema", "migration_progress"),
        ("roundtable_console.store.reads.sqlfuncs", "PG_TS_KEY_FUNCTION"),
    ]
    allowed = {
        ("roundtable_console.store.db.schema", "migration_progress"): "a helper the test names"
    }
    assert ("roundtable_console.store.db.schema", "migration_progress") not in store_imports(
        sample
    ) - allowed.keys()
