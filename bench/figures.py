"""What every figure of the bench is made of: a measurement against its floor (``Figure``, which
judges itself against its limit), the timers and medians it is taken with, the whole processes
some figures time, and the table they are printed in (bench.py's and load.py's)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from math import ceil
from pathlib import Path


@dataclass(frozen=True)
class Figure:
    """One measurement against its floor. A time ratio (ours / floor) must stay at most
    ``limit``; with ``rate`` the ratio is of rates (floor / ours) and must be at least ``limit``;
    without a floor, or with ``absolute``, ``limit`` bounds the value itself; with ``delta``, it
    bounds the difference ``value - base``. ``unit`` is "s" (times, shown in ms) or "MiB"."""

    name: str
    value: float
    base_name: str = "-"
    base: float | None = None
    limit: float | None = None
    rate: bool = False
    unit: str = "s"
    delta: bool = False
    absolute: bool = False

    @property
    def ratio(self) -> float | None:
        if self.base is None:
            return None
        return self.base / self.value if self.rate else self.value / self.base

    @property
    def difference(self) -> float | None:
        return None if self.base is None else self.value - self.base

    def verdict(self) -> str:
        if self.limit is None:
            return ""
        if self.delta and self.difference is not None:
            return "ok" if self.difference <= self.limit else "MISS"
        if self.ratio is None or self.absolute:
            return "ok" if self.value <= self.limit else "MISS"
        met = self.ratio >= self.limit if self.rate else self.ratio <= self.limit
        return "ok" if met else "MISS"

    def target(self) -> str:
        if self.limit is None:
            return ""
        if self.delta:
            return f"+<={self.limit:g}{self.unit}"
        if self.base is None or self.absolute:
            return f"<{self.limit:g}{self.unit}"
        return f"{'rate >=' if self.rate else '<='}{self.limit:g}x"


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    return statistics.median(timed(action) for _ in range(repeats))


def paired_medians(
    ours: Callable[[], object], floor: Callable[[], object], rounds: int
) -> tuple[float, float]:
    """``rounds`` runs of each, taken in turns: the floor's median, and ours as that median
    times the median of the pairs' ratios. A pair runs side by side in time, so its ratio holds
    while the machine's speed drifts; two medians taken apart would each catch a different
    moment of it (a figure's ratio is then the pairs' own)."""
    ratios, theirs = [], []
    for _ in range(rounds):
        mine = timed(ours)
        base = timed(floor)
        theirs.append(base)
        ratios.append(mine / base if base > 0 else float("inf"))
    base_median = statistics.median(theirs)
    return base_median * statistics.median(ratios), base_median


def run_process(argv: list[str], env: dict[str, str] | None = None) -> None:
    subprocess.run(argv, check=True, capture_output=True, env=env)


def compiled_env(directory: Path) -> dict[str, str]:
    """An environment in which Python reads and writes bytecode (in ``directory``, never in the
    source tree), as an installed roundtable does: a sandbox that sets PYTHONDONTWRITEBYTECODE
    would otherwise make our modules compile from source on every start while the baseline's
    site-packages come precompiled."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(directory)
    return env


def roundtable_command() -> list[str]:
    script = Path(sys.executable).with_name("roundtable")
    return (
        [str(script)] if script.exists() else [sys.executable, "-m", "roundtable_console.tui.cli"]
    )


def percentile(values: list[float], fraction: float) -> float:
    """The value below which ``fraction`` of ``values`` lie (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, ceil(fraction * len(ordered)) - 1))]


# ------------------------------------------------------------------------------------ report


def shown(value: float, unit: str) -> str:
    return f"{value * 1000:8.2f}ms" if unit == "s" else f"{value:7.1f}{unit}"


def print_table(figures: list[Figure]) -> None:
    """One line a figure; the ratio column shows the difference instead for ``delta`` figures."""
    print(
        f"{'measurement':<54} {'median':>10}   {'baseline (same run)':<30} {'median':>10}"
        f"   {'ratio':>6}  {'target':<11} verdict"
    )
    for figure in figures:
        base = shown(figure.base, figure.unit) if figure.base is not None else f"{'':>10}"
        if figure.delta and figure.difference is not None:
            ratio = f"{figure.difference:+.1f}{figure.unit}"
        else:
            ratio = f"{figure.ratio:5.2f}x" if figure.ratio is not None else ""
        print(
            f"{figure.name:<54} {shown(figure.value, figure.unit)}   {figure.base_name:<30}"
            f" {base}   {ratio:>6}  {figure.target():<11} {figure.verdict()}"
        )
