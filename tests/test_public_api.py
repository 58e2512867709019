"""The console is built on Textual's and Rich's public API only (issue 8, point 1), so a release of
either within the range pyproject.toml allows cannot break it from underneath.

An AST scan of store/, screens/, tui/ and tests/ finds:

- imports of private modules or names (``textual._two_way_dict``, ``textual.widgets._footer``,
  ``from rich.x import _y``);
- attributes of Textual's or Rich's that are private (a name starting with one underscore that
  Textual or Rich define: ``app._display``, ``key._disabled``), read, written or passed to
  ``getattr``/``setattr`` by name, on any object;
- in our subclasses of Textual's and Rich's classes, a method or attribute whose private name is
  one of theirs: an override of a private hook (``_render_cell``), or our own state clobbering
  theirs.

The private names are read from the installed Textual and Rich themselves, so the check follows
the release installed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import rich
import textual

ROOT = Path(__file__).resolve().parents[1]
OURS = ("store", "screens", "tui", "agents", "tests")
LIBRARIES = ("textual", "rich")


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def python_files(*folders: Path) -> Iterator[Path]:
    for folder in folders:
        # Not the agent CLIs npm installs under tests/ (their packages bring Python of their own).
        yield from sorted(p for p in folder.rglob("*.py") if "node_modules" not in p.parts)


@cache
def library_private_names() -> frozenset[str]:
    """Every private name Textual and Rich define on their classes: methods, class attributes and
    the attributes their methods set on ``self``."""
    found: set[str] = set()
    for package in (textual, rich):
        for path in python_files(Path(package.__file__).parent):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                            found.add(item.name)
                        elif isinstance(item, ast.Assign):
                            found.update(t.id for t in item.targets if isinstance(t, ast.Name))
                        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                            found.add(item.target.id)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    if isinstance(node.value, ast.Name) and node.value.id == "self":
                        found.add(node.attr)
    return frozenset(name for name in found if is_private(name))


@dataclass(frozen=True)
class Use:
    path: Path
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.what}"


def library_module(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in LIBRARIES


def private_imports(path: Path, tree: ast.Module) -> Iterator[Use]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and library_module(node.module):
            assert node.module is not None
            if any(is_private(part) for part in node.module.split(".")):
                yield Use(path, node.lineno, f"imports the private module {node.module}")
            for alias in node.names:
                if is_private(alias.name):
                    yield Use(path, node.lineno, f"imports {alias.name} from {node.module}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if library_module(alias.name) and any(map(is_private, alias.name.split("."))):
                    yield Use(path, node.lineno, f"imports the private module {alias.name}")


def library_bases(trees: dict[Path, ast.Module]) -> set[str]:
    """Our classes that derive, directly or through ours, from a Textual or Rich class (a base
    imported from Textual or Rich in the class's own file, or one of ours that does)."""
    classes: list[tuple[set[str], str, set[str]]] = []
    for tree in trees.values():
        imported = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and library_module(node.module)
            for alias in node.names
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = set()
                for base in node.bases:
                    target = base.value if isinstance(base, ast.Subscript) else base
                    if isinstance(target, ast.Name):
                        bases.add(target.id)
                    elif isinstance(target, ast.Attribute):
                        bases.add(target.attr)
                classes.append((imported, node.name, bases))
    derived: set[str] = set()
    while True:
        more = {name for imported, name, bases in classes if bases & (imported | derived)}
        if more <= derived:
            return derived
        derived |= more


def private_attributes(path: Path, tree: ast.Module, derived: set[str]) -> Iterator[Use]:
    theirs = library_private_names()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in theirs:
            on_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if not on_self:
                yield Use(path, node.lineno, f"uses the private attribute {node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) > 1:
                name = node.args[1]
                if isinstance(name, ast.Constant) and name.value in theirs:
                    yield Use(path, node.lineno, f"{node.func.id} of the private {name.value}")
        elif isinstance(node, ast.ClassDef) and node.name in derived:
            yield from private_members(path, node, theirs)


def private_members(path: Path, cls: ast.ClassDef, theirs: frozenset[str]) -> Iterator[Use]:
    """In a subclass of Textual's or Rich's: their private names, defined or used on self."""
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in theirs:
            yield Use(path, node.lineno, f"{cls.name} overrides the private {node.name}")
        elif isinstance(node, ast.Attribute) and node.attr in theirs:
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                yield Use(path, node.lineno, f"{cls.name} uses the private {node.attr}")


def scan(folders: tuple[str, ...] = OURS) -> list[Use]:
    trees = {
        path: ast.parse(path.read_text(encoding="utf-8"))
        for path in python_files(*(ROOT / folder for folder in folders))
    }
    derived = library_bases(trees)
    uses: list[Use] = []
    for path, tree in trees.items():
        uses.extend(private_imports(path, tree))
        uses.extend(private_attributes(path, tree, derived))
    return uses


def test_no_private_textual_or_rich_api_is_used() -> None:
    uses = scan()
    assert not uses, "\n".join(map(str, uses))


def test_the_scan_finds_each_kind_of_private_use(tmp_path: Path) -> None:
    """The check can fail: a sample with one of each kind of private use is caught whole."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from textual._two_way_dict import TwoWayDict\n"
        "from textual.widgets._footer import FooterKey\n"
        "import textual._compositor\n"
        "from textual.widgets import DataTable\n"
        "class Table(DataTable):\n"
        "    def _render_cell(self, *args):\n"
        "        return self._row_locations\n"
        "class Deeper(Table):\n"
        "    def _on_click(self, event):\n"
        "        pass\n"
        "def peek(app):\n"
        "    getattr(app, '_display')\n"
        "    return app.screen._compositor\n",
        encoding="utf-8",
    )
    tree = ast.parse(sample.read_text(encoding="utf-8"))
    derived = library_bases({sample: tree})
    found = [*private_imports(sample, tree), *private_attributes(sample, tree, derived)]
    lines = sorted({use.line for use in found})
    assert lines == [1, 2, 3, 6, 7, 9, 12, 13], [str(use) for use in found]
    # Names of our own that Textual does not define are ours to use.
    assert "_read_first" not in library_private_names()
    assert "_render_cell" in library_private_names() and "_display" in library_private_names()
