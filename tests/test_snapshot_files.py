"""Every SVG under tests/__snapshots__ belongs to a snapshot test that still exists.

syrupy fails a run that leaves a snapshot unused, but only when it sees the whole run in one
process; under pytest-xdist (pyproject's addopts) each worker sees a part, so this check does it.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

SNAPSHOTS = Path(__file__).resolve().parent / "__snapshots__"


def orphans(snapshots: Path) -> list[str]:
    """The snapshots (``module/test.svg``) whose test is gone or takes no ``snap_compare``."""
    found: list[str] = []
    for svg in sorted(snapshots.glob("*/*.svg")):
        try:
            module = importlib.import_module(f"tests.{svg.parent.name}")
        except ModuleNotFoundError:
            found.append(f"{svg.parent.name}/{svg.name}")
            continue
        test = getattr(module, svg.stem.split("[", 1)[0], None)
        if not callable(test) or "snap_compare" not in inspect.signature(test).parameters:
            found.append(f"{svg.parent.name}/{svg.name}")
    return found


def test_every_snapshot_has_its_test() -> None:
    assert len(list(SNAPSHOTS.glob("*/*.svg"))) >= 28
    assert orphans(SNAPSHOTS) == []


def test_a_snapshot_without_its_test_is_found(tmp_path: Path) -> None:
    kept = tmp_path / "test_tui_snapshots" / "test_help.svg"
    kept.parent.mkdir()
    kept.write_text("<svg/>")
    (kept.parent / "test_help_renamed.svg").write_text("<svg/>")
    (kept.parent / "seed.svg").write_text("<svg/>")  # a function there, but no snapshot test
    gone = tmp_path / "test_no_such_module" / "test_x.svg"
    gone.parent.mkdir()
    gone.write_text("<svg/>")
    assert orphans(tmp_path) == [
        "test_no_such_module/test_x.svg",
        "test_tui_snapshots/seed.svg",
        "test_tui_snapshots/test_help_renamed.svg",
    ]
