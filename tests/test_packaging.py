"""What ``pip install roundtable-console`` puts into site-packages: one import name of our own,
``roundtable_console``, holding every module and asset of the repository's folders, and a
console script, ``python -m``, migrations and snapshots that work from that installed copy
(issue 19 point 1)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "roundtable_console"
# Each folder of the repository, by the package it installs as.
FOLDERS = {
    "package": PACKAGE,
    "store": f"{PACKAGE}.store",
    "screens": f"{PACKAGE}.screens",
    "tui": f"{PACKAGE}.tui",
    "assets": f"{PACKAGE}.assets",
    "api": f"{PACKAGE}.api",
    "agents": f"{PACKAGE}.agents",
}
SHIPPED_DATA = ("*.tcss", "*.mako", "*.html", "*.js", "*.css", "*.svg")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built as pip builds it for an install, from a copy of this checkout's files
    (setuptools builds in the source tree, and a ``build/`` left there from before could add
    modules that no longer exist)."""
    source = tmp_path_factory.mktemp("source")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("roundtable_console-*.whl")
    return built


def wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_installs_one_top_level_import_name(wheel: Path) -> None:
    names = wheel_names(wheel)
    top = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top == {PACKAGE}
    (top_level,) = [name for name in names if name.endswith(".dist-info/top_level.txt")]
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read(top_level).decode().split() == [PACKAGE]


def repository_files() -> Iterator[tuple[Path, str]]:
    """Every module and shipped data file of the repository's folders, with its name in the
    wheel."""
    for folder, package in FOLDERS.items():
        base = ROOT / folder
        for pattern in ("*.py", *SHIPPED_DATA):
            for path in sorted(base.rglob(pattern)):
                if "__pycache__" in path.parts:
                    continue
                relative = path.relative_to(base).as_posix()
                yield path, f"{package.replace('.', '/')}/{relative}"


def test_the_wheel_holds_every_module_and_asset_of_the_repository(wheel: Path) -> None:
    """A subpackage added to a folder but not to pyproject.toml's list would be left out."""
    shipped = set(wheel_names(wheel))
    expected = dict(repository_files())
    assert len(expected) > 100
    missing = sorted(
        str(path.relative_to(ROOT)) for path, name in expected.items() if name not in shipped
    )
    assert missing == []


def test_the_runtime_dependencies_are_ranges_and_ci_installs_exact_versions() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pinned = [d for d in project["dependencies"] if "==" in d]
    assert pinned == []
    unbounded = [d for d in project["dependencies"] if ">=" not in d or "<" not in d]
    assert unbounded == []
    constraints = (ROOT / "constraints.txt").read_text().splitlines()
    exact = {line.split("==")[0].lower() for line in constraints if "==" in line}
    for dependency in project["dependencies"]:
        name = dependency.split(">")[0].split("[")[0].strip().lower()
        assert name in exact, dependency
    assert "-c constraints.txt" in (ROOT / ".ci" / "run").read_text()
    assert "-c constraints.txt" in (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed (not editable), its dependencies
    borrowed from this one's site-packages through a .pth file (no index is needed; the
    editable install's finder there is not loaded, as a .pth line only adds a path)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "borrowed-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv


def run_installed(
    venv: Path, *argv: str, cwd: Path, home: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ROUNDTABLE_")}
    env.pop("PYTHONPATH", None)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    )
    result = subprocess.run(
        list(argv), capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )
    if check:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def test_the_installed_package_runs_its_script_its_module_and_its_migrations(
    installed: Path, tmp_path: Path
) -> None:
    python = str(installed / "bin" / "python")
    where = run_installed(
        installed,
        python,
        "-c",
        "import roundtable_console.store.db.revision as r, importlib.util as u; "
        "print(r.__file__); print([n for n in ('store', 'screens', 'tui', 'assets') "
        "if u.find_spec(n)])",
        cwd=tmp_path,
        home=tmp_path,
    ).stdout.splitlines()
    assert where[0].startswith(str(installed)), where
    assert where[1] == "[]"  # no top-level name of ours besides roundtable_console
    version = run_installed(installed, "roundtable", "--version", cwd=tmp_path, home=tmp_path)
    assert version.stdout.startswith("roundtable, version")
    as_module = run_installed(
        installed, python, "-m", PACKAGE, "--version", cwd=tmp_path, home=tmp_path
    )
    assert as_module.stdout == version.stdout
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgraded = run_installed(installed, "roundtable", "db", "upgrade", "--db", url, "--json",
                             cwd=tmp_path, home=tmp_path)  # fmt: skip
    assert json.loads(upgraded.stdout)["upgraded"] is True
    run_installed(installed, "roundtable", "demo", "--db", url, cwd=tmp_path, home=tmp_path)
    listed = run_installed(
        installed,
        "roundtable",
        "sessions",
        "list",
        "--db",
        url,
        "--json",
        cwd=tmp_path,
        home=tmp_path,
    )
    assert '"items"' in listed.stdout


def test_the_snapshot_tests_pass_against_the_installed_package(
    installed: Path, tmp_path: Path
) -> None:
    """The suite's own snapshot tests, run by the installed copy's interpreter from the
    repository (whose folders are not on its import path under our name)."""
    python = str(installed / "bin" / "python")
    probe = run_installed(
        installed,
        python,
        "-c",
        "import roundtable_console.screens.list.screen as m; print(m.__file__)",
        cwd=ROOT,
        home=tmp_path,
    )
    assert probe.stdout.startswith(str(installed)), probe.stdout
    result = run_installed(
        installed,
        python,
        "-m",
        "pytest",
        "-q",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
        "tests/test_tui_snapshots.py",
        "-k",
        "test_session_list or test_help",
        cwd=ROOT,
        home=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert " passed" in result.stdout
