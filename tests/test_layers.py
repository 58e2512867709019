"""The layers of DESIGN.md §2, kept by a check rather than by hope: arrows go tui → screens →
store. store/ is the data layer (no UI, no CLI); screens/ never reach back into tui/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STORE_MUST_NOT_IMPORT = ("textual", "rich", "screens", "tui", "click")
SCREENS_MUST_NOT_IMPORT = ("tui",)


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


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import json\n"
        "def f():\n"
        "    from textual.widgets import Static\n"
        "    import rich.text\n"
        "from .local import thing\n"
    )
    assert offending(sample, STORE_MUST_NOT_IMPORT) == ["rich.text", "textual.widgets"]
    assert offending(sample, ("json",)) == ["json"]
    assert offending(sample, ("js",)) == []
