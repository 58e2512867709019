"""One process: start an app headless at 120×40, measure it once its first data rows are shown.

`bare` is the floor: a Header, a DataTable of 60 rows (600 in `keys`, so that every press still
moves the cursor) and a Footer. `console URL` is the real console on that store. Modes (the first
argument):

- `paint APP`: exit as soon as the first data row is on screen (after the refresh that paints
  it); the parent (bench.py, through console.py) times the whole process, imports and exit
  included. (`bare` and `console URL` alone mean the same, as before.) The console starts
  through `run_console`, the function `roundtable tui` calls, so a current SQLite store paints
  from the quick first read.
- `rss APP`: once the first rows are on screen and the console's store is open, print the
  process's resident set size in KiB (VmRSS from /proc/self/status; ru_maxrss, the peak, where
  /proc is missing) on stdout.
- `jumps console URL`: once the store is open, drag the scrollbar's thumb to places far apart
  and click the track below it, and print, per kind, the milliseconds from the mouse event to
  the frame that shows the rows there (read from the store by then).
- `server URL` in place of `console URL`: the console through `roundtable serve` at URL, as
  `roundtable tui --server URL` starts it, with the token in $ROUNDTABLE_TOKEN.
- `pages N server URL`: once the console through the server is ready, press "pagedown" N times,
  each until settled, and print the requests each press sent to the server (a JSON list).
- `keys [DOWNS PAGEDOWNS] APP`: once the store is open, press "down" DOWNS times (default 30),
  then ``SCROLLING_DOWNS`` times more, past the view's last row, so that most of those move the
  view a row (timed apart, as "down-scrolls": every row in view is drawn again, where a cursor
  move within the view draws two), then "pagedown" PAGEDOWNS times (default 4), then "pageup"
  as many times (back up through rows the window has let go of), then "end" and "home" in
  turns (the list's far end read where it is, and its top again) through Textual's Pilot, and
  print one JSON object on stdout: per key, the milliseconds each press took to settle and to
  its last frame.

`--group=NAME` before the other arguments opens the console grouped by NAME (workspace, run or
agent: config ``group``), its first rows included.

What `keys` measures, honestly: the app is headless, so nothing is written to a terminal. A
press is timed from the start of ``await pilot.press(key)`` until the app has settled: Pilot's
press itself waits for the app to go idle (twice, each at least one 20 ms sleep), then the
app's workers (a page read on the console) are awaited and ``pilot.pause()`` lets their results
be painted, until no worker is left running. That "settled" figure carries Pilot's own idle
waits, so it is a ceiling, compressed towards the floor's. The frame figures are the time from
the press's start to the first and to the last frame the screen composed before the app settled
(``App._display`` calls with an update, which in a real terminal write it; a call with None,
the compositor having nothing to update, writes nothing and is not counted): the first is the
earliest visible reaction (usually the cursor moving), the last is everything the press caused
painted (a page read, the footer's bindings). They are the closer estimates of key press →
repaint; both still include Textual's own paint scheduling (it paints on a timer, and Pilot's
pause forces a paint of whatever is dirty when it wakes).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

GROUP_FLAG = "--group="


def grouping(argv: list[str]) -> tuple[str | None, list[str]]:
    """The ``--group=NAME`` option, and the arguments without it."""
    found = [arg.removeprefix(GROUP_FLAG) for arg in argv if arg.startswith(GROUP_FLAG)]
    return (found[-1] if found else None), [a for a in argv if not a.startswith(GROUP_FLAG)]


def start_early() -> Any:
    """What `roundtable tui` does before it imports Textual: on PostgreSQL, a child process
    starts reading the first rows (store.reads.first_window.prefetch); through a server, one
    asks it who the token is and for the first rows (client.first_window)."""
    if "console" not in sys.argv and "server" not in sys.argv:
        return None
    from roundtable_console.tui.cli.tui_command import prefetch_first_rows, prefetch_through_server
    from roundtable_console.tui.config import Settings

    group, _argv = grouping(sys.argv)
    if "server" in sys.argv:
        token = os.environ["ROUNDTABLE_TOKEN"]
        return prefetch_through_server(sys.argv[-1], token, Settings(group=group))
    return prefetch_first_rows(sys.argv[-1], Settings(group=group))


EARLY = start_early() if __name__ == "__main__" else None

from textual.app import App, ComposeResult  # noqa: E402 - after the early start, as the CLI
from textual.css.query import NoMatches  # noqa: E402
from textual.pilot import Pilot  # noqa: E402
from textual.scrollbar import ScrollDown, ScrollTo  # noqa: E402
from textual.widgets import DataTable, Footer, Header  # noqa: E402
from textual.worker import WorkerCancelled  # noqa: E402

SIZE = (120, 40)
DOWNS = 30
# Downs after the first DOWNS: past the view's last row (35 rows on the console, 36 on the
# bare app at 120x40), so most of them move the view.
SCROLLING_DOWNS = 20
# A down that moved the view is timed under this name.
SCROLLING = "down-scrolls"
PAGEDOWNS = 4
STATUS = Path("/proc/self/status")

Script = Callable[[Pilot[Any]], Awaitable[None]]


def parse_vm_rss(status: str) -> int | None:
    """The VmRSS line of a /proc/PID/status text, in KiB (None when there is none)."""
    match = re.search(r"^VmRSS:\s+(\d+)\s+kB\s*$", status, re.MULTILINE)
    return int(match.group(1)) if match else None


def rss_kib() -> int:
    """The resident set size now; where /proc is missing, the peak (Linux reports KiB)."""
    try:
        current = parse_vm_rss(STATUS.read_text())
    except OSError:
        current = None
    return current if current is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class BareApp(App[None]):
    def __init__(self, *, exit_when_painted: bool = True, rows: int = 60) -> None:
        super().__init__()
        self.exit_when_painted = exit_when_painted
        self.rows = rows

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="table")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("id", "agent", "status")
        table.add_rows((f"sess-{n}", "agent", "active") for n in range(self.rows))
        if self.exit_when_painted:
            self.call_after_refresh(self.exit)


def has_rows(app: App[Any]) -> bool:
    """The app holds data rows to show: the bare app's DataTable, the console's list model."""
    model = getattr(app.screen, "model", None)
    if model is not None:
        return bool(model.rows)
    try:
        return app.screen.query_one(DataTable).row_count > 0
    except NoMatches:  # the list screen is not mounted yet
        return False


async def wait_for_rows(pilot: Pilot[Any]) -> None:
    """Until the first frame that shows data rows has been written (``App._display``, which in
    a terminal writes the update): the frame after which the bare app exits. Not until the app
    is idle: the console keeps opening its store after its first rows are painted."""
    app = pilot.app
    painted = asyncio.Event()
    display = app._display

    def recording(*args: Any, **kwargs: Any) -> None:
        display(*args, **kwargs)
        if has_rows(app):
            painted.set()

    app._display = recording  # type: ignore[method-assign]
    try:
        if has_rows(app):
            app.call_after_refresh(painted.set)  # the rows came before the pilot did
        await painted.wait()
    finally:
        app._display = display  # type: ignore[method-assign]


async def wait_until_ready(pilot: Pilot[Any]) -> None:
    """Until the console's store is open (its first rows come before it) and the app has
    settled: what memory and key presses are measured on."""
    context = getattr(pilot.app, "ctx", None)
    while context is not None and not context.source.ready:
        await asyncio.sleep(0.005)
    await settle(pilot)


async def settle(pilot: Pilot[Any]) -> None:
    """Until no worker is running and what they delivered has been handled and painted."""
    while True:
        for worker in list(pilot.app.workers):
            # A read a newer one replaced is cancelled: it is not waited for.
            with suppress(WorkerCancelled):
                await worker.wait()
        await pilot.pause()
        if not any(worker.is_running for worker in pilot.app.workers):
            return


class FrameClock:
    """When the screen composed frames since the last ``reset``: the first and the last, and
    the first that showed what ``reset``'s ``shows`` tests for (the press's result)."""

    def __init__(self, app: App[Any]) -> None:
        self.first: float | None = None
        self.last: float | None = None
        self.result: float | None = None
        self._shows: Callable[[], bool] | None = None
        display = app._display

        def recording(screen: Any, renderable: Any) -> None:
            # None: the compositor had nothing to update, and nothing is written.
            if renderable is not None:
                now = time.perf_counter()
                self.first = now if self.first is None else self.first
                self.last = now
            display(screen, renderable)
            # The frame was composed from the state as it is now (both on the UI thread).
            if renderable is not None and self.result is None and self._shows and self._shows():
                self.result = now

        app._display = recording  # type: ignore[method-assign]

    def reset(self, shows: Callable[[], bool] | None = None) -> None:
        self.first = self.last = self.result = None
        self._shows = shows


Timings = dict[str, dict[str, list[float]]]
PARTS = ("first_frame_ms", "frame_ms", "result_frame_ms", "settled_ms")


def first_in_view(app: App[Any]) -> int:
    """The first row in view: the console's grid's, or the bare app's DataTable's."""
    if getattr(app.screen, "model", None) is not None:
        return int(app.screen.query_one("#sessions").first_in_view)
    return int(app.screen.query_one(DataTable).scroll_offset.y)


def cursor_of(app: App[Any]) -> int:
    """The row under the cursor: the console's grid's, or the bare app's DataTable's."""
    if getattr(app.screen, "model", None) is not None:
        return int(app.screen.query_one("#sessions").cursor)
    return app.screen.query_one(DataTable).cursor_row


def moved_and_held(app: App[Any], before: int) -> Callable[[], bool]:
    """Whether the cursor has left ``before`` and (the console) every row in view is held: a
    press's result on screen."""
    console = getattr(app.screen, "model", None) is not None
    return lambda: cursor_of(app) != before and (not console or view_is_held(app))


async def press_timings(pilot: Pilot[Any], keys: list[str]) -> Timings:
    """Per key press: its first frame, its last frame before the app settled, the first frame
    that showed its result (the cursor moved, the rows in view read) and the time to settle. A
    down that moved the view is timed apart, as ``SCROLLING``.
    While the store changes the last frame also counts what the changes repaint; the result
    frame does not."""
    frames = FrameClock(pilot.app)
    timings: Timings = {}
    for key in keys:
        frames.reset(moved_and_held(pilot.app, cursor_of(pilot.app)))
        top = first_in_view(pilot.app)
        started = time.perf_counter()
        await pilot.press(key)
        await settle(pilot)
        settled = time.perf_counter()
        name = SCROLLING if key == "down" and first_in_view(pilot.app) != top else key
        entry = timings.setdefault(name, {part: [] for part in PARTS})
        # No frame at all (nothing moved) counts as no time.
        entry["first_frame_ms"].append(((frames.first or started) - started) * 1000)
        entry["frame_ms"].append(((frames.last or started) - started) * 1000)
        entry["result_frame_ms"].append(((frames.result or started) - started) * 1000)
        entry["settled_ms"].append((settled - started) * 1000)
    return timings


# Where the thumb is dragged to, as a fraction of the track: far jumps both ways.
DRAG_PLACES = (0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.8, 0.45, 0.6, 0.95, 0.05)


def view_is_held(app: App[Any]) -> bool:
    """Every row in the console's view is held (none is drawn as a placeholder)."""
    screen = app.screen
    grid = screen.query_one("#sessions")
    first, height = grid.first_in_view, grid.view_height
    last = min(first + height, screen.model.row_count)
    return all(screen.model.row(index) is not None for index in range(first, last))


async def until_held(pilot: Pilot[Any], started: float, frames: FrameClock) -> float:
    """Milliseconds from ``started`` to the frame that shows the view's rows (read by then)."""
    while not view_is_held(pilot.app):
        await asyncio.sleep(0.0005)
    held = time.perf_counter()
    frames.reset()
    # The screen's next update paints them (within a frame's time, 1/60 s).
    while frames.last is None and time.perf_counter() - held < 0.1:
        await asyncio.sleep(0.0005)
    if frames.last is None:
        await pilot.pause()  # nothing was dirty: paint now, as the next update would
    return ((frames.last or held) - started) * 1000


async def jump_timings(pilot: Pilot[Any], places: tuple[float, ...] = DRAG_PLACES) -> Timings:
    """The thumb dragged to each of ``places``, and a click on the track below the thumb: the
    milliseconds from the mouse event to the frame showing the rows there."""
    app = pilot.app
    grid = app.screen.query_one("#sessions")
    frames = FrameClock(app)
    timings: Timings = {"drag": {"frame_ms": []}, "track": {"frame_ms": []}}
    track = grid.vertical_scrollbar.size.height
    for place in places:
        # What a drag of the thumb sends the list (Pilot's own mouse moves wait tens of
        # milliseconds before they arrive, which is not the console's time).
        started = time.perf_counter()
        grid.post_message(ScrollTo(y=place * grid.max_scroll_y))
        timings["drag"]["frame_ms"].append(await until_held(pilot, started, frames))
        await settle(pilot)
        thumb = round(grid.scroll_y / max(grid.max_scroll_y, 1) * (track - 1))
        if thumb < track - 2:
            started = time.perf_counter()
            # What a click on the track below the thumb sends the list.
            grid.post_message(ScrollDown())
            timings["track"]["frame_ms"].append(await until_held(pilot, started, frames))
            await settle(pilot)
    return timings


ENDS = 3


def key_sequence(downs: int, pagedowns: int) -> list[str]:
    ends = ["end", "home"] * ENDS
    downs_through = ["down"] * (downs + SCROLLING_DOWNS)
    return downs_through + ["pagedown"] * pagedowns + ["pageup"] * pagedowns + ends


def run_app(
    which: list[str], script: Script | None, bare_rows: int = 60, group: str | None = None
) -> None:
    """Run the bare app (``["bare"]``) or the console (``["console", URL]``, grouped by
    ``group``). Without a ``script``, exit when the first rows are on screen; with one, run it
    as the pilot once they are, then exit."""
    if which[0] == "bare":
        app = BareApp(exit_when_painted=script is None, rows=bare_rows)
        app.run(
            headless=True, size=SIZE, auto_pilot=None if script is None else first_rows_then(script)
        )
        return
    from roundtable_console.tui.config import Settings

    if which[0] == "server":  # as `roundtable tui --server URL` starts it
        from roundtable_console.tui.app import run_console_through_server

        run_console_through_server(
            server=which[1],
            token=os.environ["ROUNDTABLE_TOKEN"],
            prefetched=EARLY,
            settings=Settings(group=group),
            headless=True,
            size=SIZE,
            auto_pilot=first_rows_then(script or no_script),
        )
        return
    # The console exactly as `roundtable tui` starts it (the quick first read included).
    from roundtable_console.tui.app import run_console

    run_console(
        url=which[1],
        settings=Settings(group=group),
        operator="bench",
        adapters={},
        demo=False,
        headless=True,
        size=SIZE,
        auto_pilot=first_rows_then(script or no_script),
        prefetched=EARLY,
    )


def first_rows_then(script: Script) -> Script:
    """An auto-pilot: once the first data rows are on screen, run ``script``, then exit."""

    async def pilot_script(pilot: Pilot[Any]) -> None:
        await wait_for_rows(pilot)
        await script(pilot)
        pilot.app.exit()

    return pilot_script


async def no_script(_pilot: Pilot[Any]) -> None:
    return None


def main(argv: list[str]) -> None:
    group, argv = grouping(argv)
    modes = ("paint", "rss", "keys", "jumps", "pages")
    mode, which = (argv[0], argv[1:]) if argv[0] in modes else ("paint", argv)
    downs, pagedowns = DOWNS, PAGEDOWNS
    pages = 0
    if mode == "pages":
        pages, which = int(which[0]), which[1:]
    if mode == "keys" and which[0].isdigit():
        downs, pagedowns, which = int(which[0]), int(which[1]), which[2:]
    if mode == "paint":
        run_app(which, None, group=group)
        return
    measured: list[Any] = []

    async def measure_rss(pilot: Pilot[Any]) -> None:
        await wait_until_ready(pilot)
        measured.append(rss_kib())

    async def measure_keys(pilot: Pilot[Any]) -> None:
        await wait_until_ready(pilot)
        measured.append(await press_timings(pilot, key_sequence(downs, pagedowns)))

    async def measure_jumps(pilot: Pilot[Any]) -> None:
        await wait_until_ready(pilot)
        measured.append(await jump_timings(pilot))

    async def measure_pages(pilot: Pilot[Any]) -> None:
        await wait_until_ready(pilot)
        calls = pilot.app.link.calls  # type: ignore[attr-defined]
        sent = []
        for _ in range(pages):
            before = calls.sent
            await pilot.press("pagedown")
            await settle(pilot)
            sent.append(calls.sent - before)
        measured.append(sent)

    if mode == "rss":
        run_app(which, measure_rss, group=group)
    elif mode == "pages":
        run_app(which, measure_pages, group=group)
    elif mode == "jumps":
        run_app(which, measure_jumps, group=group)
    else:
        run_app(which, measure_keys, bare_rows=600, group=group)
    print(measured[0] if mode == "rss" else json.dumps(measured[0]))


if __name__ == "__main__":
    main(sys.argv[1:])
