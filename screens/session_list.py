"""The default screen: every session, a window of keyset pages at a time, filtered and sorted in
SQL, live-refreshed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from math import ceil
from typing import TYPE_CHECKING, NamedTuple

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DataTable, Header, Input, Static

from screens.context import ConsoleContext
from screens.footer import ConsoleFooter
from screens.live import StoreChanged
from screens.session_actions import SessionActionScreen
from screens.session_table import SessionTable
from screens.text import plain, relative_ts, short_time, status_text
from screens.window import ListWindow, WindowSpec
from store.adapters import AdapterConfig
from store.display import one_line
from store.errors import StoreError
from store.listing import SORT_COLUMNS, SessionFilter, SessionOrder, session_cursor
from store.records import ClaimCount, SessionFields
from store.resume import resume_blocker
from store.rules import ACTIVE_STATES

if TYPE_CHECKING:
    from screens.data import StatusCounts
    from store.database import Store
    from store.first_window import FirstWindow

TERMINAL_STATUSES: tuple[str, ...] = ("stopped", "ended", "terminated")
# Statuses are free strings: the header names this many and sums the rest.
MAX_STATUSES_SHOWN = 10
# Rows from the window's edge at which the next (or previous) page is read.
EDGE_ROWS = 3
SORT_NAMES: dict[str, str] = {
    "started": "started",
    "last_seen": "last seen",
    "status": "status",
    "agent": "agent",
}


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int
    # Columns with a weight share whatever width is left; the others keep ``width``.
    weight: int = 0
    # When the terminal is too narrow for every column, the lowest rank goes first (0: never).
    drop_rank: int = 0
    # The sort column a click on the header chooses.
    sort: str | None = None


COLUMNS: tuple[Column, ...] = (
    Column("id", "Session", 10, weight=1),
    Column("agent", "Agent", 6, weight=1, sort="agent"),
    Column("run", "Run", 8, weight=3, drop_rank=2),
    Column("workspace", "Workspace", 9, weight=1, drop_rank=4),
    Column("adapter", "Adapter", 8, drop_rank=1),
    Column("model", "Model", 10, weight=3, drop_rank=3),
    Column("status", "Status", 16, sort="status"),
    Column("claims", "Claims", 6),
    Column("resume", "Resume", 6),
    Column("seen", "Seen", 9, sort="last_seen"),
    Column("started", "Started", 11, drop_rank=5, sort="started"),
)
COLUMN_BY_KEY: dict[str, Column] = {column.key: column for column in COLUMNS}
CELL_PADDING = 1
# The table's vertical scrollbar.
TABLE_CHROME = 2


def column_widths(total: int) -> dict[str, int]:
    """The columns that fit in ``total`` cells, in order, with their widths: a narrow terminal
    hides the lowest-ranked columns first; the weighted columns share what is left."""
    shown = list(COLUMNS)

    def needed(columns: list[Column]) -> int:
        return sum(c.width + 2 * CELL_PADDING for c in columns) + TABLE_CHROME

    for column in sorted((c for c in COLUMNS if c.drop_rank), key=lambda c: c.drop_rank):
        if needed(shown) <= total:
            break
        shown.remove(column)
    spare = max(total - needed(shown), 0)
    weights = sum(c.weight for c in shown) or 1
    extra = {c.key: (spare * c.weight) // weights for c in shown}
    # What the division leaves goes to the columns it shortchanged most.
    leftover = spare - sum(extra.values()) if any(c.weight for c in shown) else 0
    by_remainder = sorted(shown, key=lambda c: -((spare * c.weight) % weights))
    for column in by_remainder[:leftover]:
        extra[column.key] += 1
    return {c.key: c.width + extra[c.key] for c in shown}


def header_label(column: Column, order: SessionOrder) -> Text:
    if column.sort != order.column:
        return Text(column.label)
    return Text(column.label + ("▼" if order.descending else "▲"), style="bold")


@dataclass(frozen=True)
class ListState:
    """What the operator asked to see, and in which order."""

    text: str = ""
    status: str | None = None
    show_ended: bool = True
    stale_only: bool = False
    order: SessionOrder = field(default_factory=SessionOrder)

    def status_cycle(self) -> tuple[str | None, ...]:
        states: tuple[str | None, ...] = (None, *ACTIVE_STATES)
        return states + TERMINAL_STATUSES if self.show_ended else states

    def next_status(self) -> str | None:
        cycle = self.status_cycle()
        index = cycle.index(self.status) if self.status in cycle else 0
        return cycle[(index + 1) % len(cycle)]

    def next_sort(self) -> SessionOrder:
        index = SORT_COLUMNS.index(self.order.column)
        return SessionOrder(SORT_COLUMNS[(index + 1) % len(SORT_COLUMNS)], self.order.descending)

    def to_filter(self, now: datetime, stale_after: timedelta) -> SessionFilter:
        return SessionFilter(
            statuses=(self.status,) if self.status else (),
            active_only=not self.show_ended,
            stale_before=now - stale_after if self.stale_only else None,
            text=self.text.strip() or None,
        )

    def total(self, counts: Mapping[str, int]) -> int | None:
        """How many sessions the filters let through, when the counts by status say it."""
        if self.text.strip() or self.stale_only:
            return None
        if self.status:
            return counts.get(self.status, 0)
        if not self.show_ended:
            return sum(counts.get(status, 0) for status in ACTIVE_STATES)
        return sum(counts.values())

    def describe(self) -> Text:
        """The filters and the sort in force, each with the key that changes it."""
        text = Text()
        text.append(f"status {self.status}" if self.status else "every status", style="bold")
        text.append(" (f) · ")
        text.append("ended shown" if self.show_ended else "ended hidden", style="bold")
        text.append(" (a) · ")
        if self.stale_only:
            text.append("stale only", style="bold dark_orange")
        else:
            text.append("stale and fresh", style="bold")
        text.append(" (S) · ")
        if self.text.strip():
            text.append("text ")
            text.append(repr(one_line(self.text.strip(), 40)), style="bold")
            text.append(" (/)")
        else:
            text.append("any text (/)")
        text.append(" · sorted by ")
        direction = "▼" if self.order.descending else "▲"
        text.append(f"{SORT_NAMES[self.order.column]} {direction}", style="bold")
        text.append(" (o O)")
        return text


@dataclass(frozen=True)
class PageAhead:
    """The page just beyond one end of the window, read in the background from the row at that
    end (``edge``): below it when ``below``, else above it. Moving there adds it at once instead
    of reading while the operator waits."""

    edge: str
    below: bool
    state: ListState
    token: object | None
    window: ListWindow


class LoadKey(NamedTuple):
    """What one read of the list depended on."""

    token: object | None
    state: ListState
    spec: WindowSpec


def claims_cell(count: ClaimCount | None) -> Text:
    if count is None or count.total == 0:
        return Text("0", style="dim")
    text = Text()
    text.append(str(count.live), style="bold")
    if count.expired:
        text.append(f" +{count.expired}", style="yellow")
    return text


def resume_cell(session: SessionFields, adapters: Mapping[str, AdapterConfig]) -> Text:
    if resume_blocker(session=session, adapters=adapters) is None:
        return Text("yes", style="green")
    return Text("no", style="dim")


def provider_model(session: SessionFields) -> str | None:
    parts = [part for part in (session.provider, session.model) if part]
    return "/".join(parts) or None


def row_cells(
    session: SessionFields,
    claims: ClaimCount | None,
    now: datetime,
    stale_after: timedelta,
    widths: dict[str, int],
    adapters: Mapping[str, AdapterConfig] | None = None,
) -> list[Text]:
    """The cells of the columns in ``widths``, in that order."""
    width = widths.get
    cells = {
        "id": lambda: plain(session.id, width("id")),
        "agent": lambda: plain(session.agent_id, width("agent")),
        "run": lambda: plain(session.run_id, width("run")),
        "workspace": lambda: plain(session.effective_workspace_id, width("workspace")),
        "adapter": lambda: plain(session.adapter, width("adapter")),
        "model": lambda: plain(provider_model(session), width("model")),
        "status": lambda: status_text(session, now, stale_after),
        "claims": lambda: claims_cell(claims),
        "resume": lambda: resume_cell(session, adapters or {}),
        "seen": lambda: relative_ts(session.last_seen_at or session.started_at, now),
        "started": lambda: short_time(session.started_at),
    }
    return [cells[key]() for key in widths]


def counts_line(counts: dict[str, int]) -> Text:
    """Counts by status; the store's name is in the header."""
    total = sum(counts.values())
    text = Text()
    text.append(f"{total} session{'s' if total != 1 else ''}", style="bold")
    ordered = [s for s in (*ACTIVE_STATES, *TERMINAL_STATUSES) if s in counts]
    ordered += sorted((s for s in counts if s not in ordered), key=lambda s: -counts[s])
    for status in ordered[:MAX_STATUSES_SHOWN]:
        text.append(" · ")
        # A no-break space: a wrapped line never parts a status from its count.
        text.append(f"{one_line(status, 20)}\u00a0{counts[status]}")
    others = ordered[MAX_STATUSES_SHOWN:]
    if others:
        text.append(f" · {len(others)} other statuses {sum(counts[s] for s in others)}")
    return text


class SessionListScreen(SessionActionScreen):
    AUTO_FOCUS = "#sessions"
    BINDINGS = [
        Binding("slash", "filter_text", "Filter"),
        # Shown in the filter line with their state, so the footer stays short.
        Binding("f", "cycle_status", "Status", show=False),
        Binding("a", "toggle_ended", "Ended", show=False),
        Binding("S", "toggle_stale", "Stale", show=False),
        Binding("o", "cycle_sort", "Sort", show=False),
        Binding("O", "flip_sort", "Sort direction", show=False),
        Binding("escape", "close_filter", "Close filter", show=False),
    ]

    class Loaded(Message):
        def __init__(self, serial: int, window: ListWindow, key: LoadKey) -> None:
            super().__init__()
            self.serial = serial
            self.window = window
            self.key = key

    class LoadFailed(Message):
        def __init__(self, serial: int, error: StoreError) -> None:
            super().__init__()
            self.serial = serial
            self.error = error

    class Unchanged(Message):
        """The store has not changed since the rows on hand were read: only the clock moved."""

        def __init__(self, serial: int, claims: dict[str, ClaimCount] | None) -> None:
            super().__init__()
            self.serial = serial
            self.claims = claims

    class AheadLoaded(Message):
        def __init__(self, ahead: PageAhead) -> None:
            super().__init__()
            self.ahead = ahead

    class FirstLoaded(Message):
        """The quick first read (before the store is open) is back; None when it had nothing."""

        def __init__(self, serial: int, window: FirstWindow | None) -> None:
            super().__init__()
            self.serial = serial
            self.window = window

    class FirstRowsShown(Message):
        """The quick first read's rows are on screen (or it had none): the app opens the store."""

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__(ctx, id="session-list")
        self.state = ListState()
        self.sessions: list[SessionFields] = []
        self.by_id: dict[str, SessionFields] = {}
        self.cells: dict[str, list[Text]] = {}
        self.claims: dict[str, ClaimCount] = {}
        self.selected_id: str | None = None
        # What the footer was last built for: rebuilding it costs tens of milliseconds, so a
        # cursor move rebuilds it only when the selected session allows other actions.
        self.footer_state: tuple[bool, tuple[str, ...]] | None = None
        self.last_row = 0
        # Direction of the operator's last move: a page read while keys were held down is
        # followed by the next one if the cursor is still at the window's edge.
        self.last_move = 0
        # The run of the list on hand: where it was read from, and what lies beyond each end.
        self.spec = WindowSpec()
        self.has_before = False
        self.has_after = False
        # The list position of the window's first row (1-based), when it is known.
        self.first_row: int | None = 1
        self.total: int | None = None
        # Where home or end put the cursor once the rows they asked for arrive.
        self.pending_jump: bool | None = None
        self.serial = 0
        self.reading = False
        self.loaded_once = False
        self.widths = column_widths(120)
        self.refresh_timer: Timer | None = None
        # Made by the first read from the store (screens.data loads with the store).
        self.status_counts: StatusCounts | None = None
        # What the rows on hand were read with: the store's change token, the filters, the
        # window. A timed refresh that finds all three the same reads nothing from the store.
        self.loaded_key: LoadKey | None = None
        # The pages just below and just above the window, when read.
        self.ahead: PageAhead | None = None
        self.behind: PageAhead | None = None
        # The edge row each side's page was last asked for (one read in flight per side).
        self.asked: dict[bool, str | None] = {True: None, False: None}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"Opening store {one_line(self.ctx.description, 100)}…"), id="counts")
        yield Static("", id="banner")
        filter_input = Input(
            placeholder="Filter by id, agent, run, adapter, model, status, workspace…", id="filter"
        )
        filter_input.cursor_blink = self.ctx.cursor_blink
        yield filter_input
        yield Static(self.state.describe(), id="filter-line")
        yield SessionTable(
            id="sessions", cursor_type="row", zebra_stripes=True, cell_padding=CELL_PADDING
        )
        yield Static(Text("Loading sessions…", style="italic"), id="empty")
        yield ConsoleFooter()

    @property
    def table(self) -> SessionTable:
        return self.query_one("#sessions", SessionTable)

    def on_mount(self) -> None:
        self._build_columns()
        # Called as the cursor moves, before the frame that shows it is drawn.
        self.watch(self.table, "cursor_coordinate", self._cursor_moved, init=False)
        self.refresh_timer = self.set_interval(self.ctx.refresh_seconds, self.refresh_if_changed)
        if self.ctx.store is None and self.ctx.first_read is not None:
            self._load_first(self.serial)
        else:
            self.reload()

    def on_screen_suspend(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.pause()

    def on_screen_resume(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.resume()
        if self.loaded_once:
            self.reload()

    def on_resize(self) -> None:
        widths = column_widths(self.size.width)
        if widths != self.widths:
            self.widths = widths
            self._build_columns()
            self._fill_table(self.sessions)
        self.call_after_refresh(self._fill_view)

    def _build_columns(self) -> None:
        table = self.table
        table.clear(columns=True)
        for key, width in self.widths.items():
            label = header_label(COLUMN_BY_KEY[key], self.state.order)
            table.add_column(label, key=key, width=width)
        self.cells.clear()

    # -- selection -----------------------------------------------------------------------

    def selected_session(self) -> SessionFields | None:
        """The session under the table's cursor now. Not ``selected_id``: that follows the
        cursor by a message, and a key typed ahead (down, down, p) would act on a row the
        cursor has already left."""
        table = self.table
        if not table.row_count or table.has_class("hidden"):
            return None
        row = table.cursor_row
        if not 0 <= row < table.row_count:
            return None
        return self.by_id.get(table.ordered_rows[row].key.value or "")

    def _action_state(self) -> tuple[bool, tuple[str, ...]]:
        return self.selected_session() is not None, tuple(self.allowed_actions())

    def refresh_bindings(self) -> None:
        self.footer_state = self._action_state()
        super().refresh_bindings()
        # Textual tells the footer when it next idles, a frame after the cursor's; re-dimming
        # now puts both in one frame (a footer that needs other keys is rebuilt then).
        self.query_one(ConsoleFooter).redim()

    def _cursor_moved(self) -> None:
        if self._action_state() != self.footer_state:
            self.refresh_bindings()

    def session_updated(self, session: SessionFields) -> None:
        if session.id in self.by_id:
            self.by_id[session.id] = session
            self.sessions = [self.by_id[s.id] for s in self.sessions]
            self._update_row(session)
            self.refresh_bindings()

    @on(DataTable.RowHighlighted, "#sessions")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != self.table.cursor_row:
            return  # posted before the table was refilled; the cursor has moved on since
        self.selected_id = event.row_key.value if event.row_key is not None else None
        if self._action_state() != self.footer_state:
            self.refresh_bindings()
        moved, self.last_row = event.cursor_row - self.last_row, event.cursor_row
        if moved:
            self.last_move = 1 if moved > 0 else -1
        self._maybe_slide(event.cursor_row, moved)

    @on(DataTable.RowSelected, "#sessions")
    def _selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.open_detail(event.row_key.value)

    def known_sessions(self) -> list[SessionFields]:
        return list(self.sessions)

    @on(SessionTable.Jump)
    def _jump(self, event: SessionTable.Jump) -> None:
        """Home and end reach the ends of the whole list: the far end is read directly (a keyset
        page from that end), never by reading every page in between."""
        if not self.sessions:
            return
        beyond = self.has_after if event.to_end else self.has_before
        self.last_move = 0
        if not beyond:
            self._place_cursor(len(self.sessions) - 1 if event.to_end else 0)
            return
        self.pending_jump = event.to_end
        self.spec = WindowSpec(cursor=None, pages=1, backwards=event.to_end)
        self.first_row = 1 if not event.to_end else None
        self.reload()

    def _place_cursor(self, row: int) -> None:
        self.last_row = row  # placed, not moved: the window must not slide for it
        self.table.move_cursor(row=row, animate=False)
        self.selected_id = self.sessions[row].id
        self.refresh_bindings()

    # -- filters and sort ----------------------------------------------------------------

    def action_filter_text(self) -> None:
        filter_input = self.query_one("#filter", Input)
        filter_input.add_class("shown")
        filter_input.focus()

    def action_close_filter(self) -> None:
        filter_input = self.query_one("#filter", Input)
        if filter_input.has_focus or filter_input.value:
            filter_input.value = ""
            filter_input.remove_class("shown")
            self.table.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._set_state(replace(self.state, text=event.value))

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            event.input.remove_class("shown")
        self.table.focus()

    def action_cycle_status(self) -> None:
        self._set_state(replace(self.state, status=self.state.next_status()))

    def action_toggle_ended(self) -> None:
        show = not self.state.show_ended
        status = self.state.status if show or self.state.status in ACTIVE_STATES else None
        self._set_state(replace(self.state, show_ended=show, status=status))
        self.notify("Ended sessions shown." if show else "Ended sessions hidden.", markup=False)

    def action_toggle_stale(self) -> None:
        self._set_state(replace(self.state, stale_only=not self.state.stale_only))

    def action_cycle_sort(self) -> None:
        self._set_state(replace(self.state, order=self.state.next_sort()))

    def action_flip_sort(self) -> None:
        self._set_state(replace(self.state, order=self.state.order.flipped()))

    @on(DataTable.HeaderSelected, "#sessions")
    def _header_clicked(self, event: DataTable.HeaderSelected) -> None:
        column = COLUMN_BY_KEY.get(str(event.column_key.value))
        if column is None or column.sort is None:
            self.notify(
                "Sessions sort by started, seen, status or agent: click one of those headers, "
                "or press o (O flips the direction).",
                markup=False,
            )
            return
        current = self.state.order
        order = current.flipped() if current.column == column.sort else SessionOrder(column.sort)
        self._set_state(replace(self.state, order=order))

    def _set_state(self, state: ListState) -> None:
        if state == self.state:
            return
        resorted = state.order != self.state.order
        self.state = state
        self.spec = WindowSpec()
        self.first_row = 1
        if resorted:
            self._build_columns()
        self.query_one("#filter-line", Static).update(self._filter_line())
        self.reload()

    def _update_filter_line(self) -> None:
        """Without a layout (a repaint of the whole screen) when the line keeps its height."""
        line, text = self.query_one("#filter-line", Static), self._filter_line()
        width, old = line.content_region.width, line.content
        same_height = (
            isinstance(old, Text)
            and width > 0
            and len(old.wrap(self.app.console, width)) == len(text.wrap(self.app.console, width))
        )
        line.update(text, layout=not same_height)
        # Tell the screen now, not on the line's own idle: after the table's, which would make
        # the line a frame of its own, a screen refresh (~16 ms) after the table's.
        line._check_refresh()

    def _filter_line(self) -> Text:
        text = self.state.describe()
        if not self.sessions:
            return text
        count = len(self.sessions)
        if self.first_row is not None:
            text.append(f" · rows {self.first_row}–{self.first_row + count - 1}")
        else:
            text.append(f" · {count} rows")
        if self.total is not None:
            text.append(f" of {self.total}")
        if self.has_before:
            text.append(" (more above)", style="dim")
        if self.has_after:
            text.append(" (more below)", style="dim")
        return text

    # -- loading -------------------------------------------------------------------------

    def reload(self, *, force: bool = True) -> None:
        """Read the window again; unless ``force``, only when the store or the request changed
        since the last read (the clock-driven cells are repainted either way)."""
        if self.ctx.store is None:
            return
        # A read still on its way was asked for on purpose: the one replacing it reads too.
        since = None if force or self.reading else self.loaded_key
        self.serial += 1
        self.reading = True
        # Live claims can expire by the clock alone; expired ones stay so until the store changes.
        recheck = [
            s.agent_id for s in self.sessions if (c := self.claims.get(s.agent_id)) and c.live
        ]
        self._load(self.serial, self.state, self.spec, since, recheck)

    @on(StoreChanged)
    def refresh_if_changed(self) -> None:
        self.reload(force=False)

    @work(thread=True, exclusive=True, group="session-list", exit_on_error=False)
    def _load(
        self,
        serial: int,
        state: ListState,
        spec: WindowSpec,
        since: LoadKey | None,
        recheck_claims: list[str],
    ) -> None:
        from screens.data import StatusCounts, read_claim_counts, require_store

        now = self.ctx.now()
        if self.status_counts is None:
            self.status_counts = StatusCounts()
        try:
            store = require_store(self.ctx)
            # Taken before the snapshot: a commit in between only causes one more read later.
            token = store.change_token()
            key = LoadKey(token, state, spec)
            # The stale filter's membership moves with the clock: it is always read again.
            if token is not None and key == since and not state.stale_only:
                claims = (
                    read_claim_counts(self.ctx, recheck_claims, now) if recheck_claims else None
                )
                self.post_message(self.Unchanged(serial, claims))
                return
            window = self._read_window(store, state, spec, token, now)
        except StoreError as error:
            self.post_message(self.LoadFailed(serial, error))
            return
        self.post_message(self.Loaded(serial, window, key))

    def _read_window(
        self, store: Store, state: ListState, spec: WindowSpec, token: object, now: datetime
    ) -> ListWindow:
        """One snapshot read of a run of the list (in a worker thread)."""
        from screens.data import StatusCounts, read_list_window

        with store.read() as db:
            return read_list_window(
                db=db,
                filters=state.to_filter(now, self.ctx.stale_after),
                order=state.order,
                spec=spec,
                page_size=self.ctx.page_size,
                now=now,
                status_counts=self.status_counts or StatusCounts(),
                token=token,
            )

    @work(thread=True, exclusive=True, group="session-list", exit_on_error=False)
    def _load_first(self, serial: int) -> None:
        """The first page from the quick read, while the store opens (ctx.first_read)."""
        read = self.ctx.first_read
        window: FirstWindow | None = None
        try:
            window = read(self.ctx.page_size, self.ctx.now()) if read is not None else None
        except StoreError:
            window = None  # the store, once open, reads and reports
        self.post_message(self.FirstLoaded(serial, window))

    def on_session_list_screen_first_loaded(self, message: FirstLoaded) -> None:
        first = message.window
        # Rows of the default list only: the operator may have changed the filters already.
        unchanged = message.serial == self.serial and self.state == ListState()
        if unchanged and first is not None and self.ctx.store is None:
            self._show_window(
                ListWindow(
                    sessions=list(first.sessions),
                    has_before=False,
                    has_after=first.has_more,
                    claims=first.claims,
                    now=self.ctx.now(),
                )
            )
        # Once painted: opening the store then loads SQLAlchemy, and no frame waits for it.
        self.call_after_refresh(self.post_message, self.FirstRowsShown())

    def on_session_list_screen_unchanged(self, message: Unchanged) -> None:
        if message.serial != self.serial:
            return
        self.reading = False
        if message.claims is not None:
            # The store is unchanged, so each agent re-read still holds the same claims.
            self.claims = {**self.claims, **message.claims}
        for session in self.sessions:
            self._update_row(session)

    def on_session_list_screen_load_failed(self, message: LoadFailed) -> None:
        if message.serial != self.serial:
            return
        self.reading = False
        self.pending_jump = None
        self.loaded_key = None
        self.show_error(message.error)

    def show_error(self, error: StoreError) -> None:
        """A banner over the last rows read; the next successful read takes it away."""
        banner = Text(f"⚠ {one_line(error.message, 300)} [{error.code}]")
        banner.append(
            "\nShowing what was last read; retrying by itself."
            if self.loaded_once
            else "\nNothing has been read yet; retrying by itself.",
            style="dim",
        )
        self.query_one("#banner", Static).update(banner)
        self.query_one("#banner", Static).add_class("shown")

    def on_session_list_screen_loaded(self, message: Loaded) -> None:
        if message.serial != self.serial:
            return
        self.reading = False
        self.loaded_key = message.key
        self._show_window(message.window)

    def _show_window(self, window: ListWindow) -> None:
        self.loaded_once = True
        self.query_one("#banner", Static).remove_class("shown")
        self._locate(window)
        self.has_before, self.has_after = window.has_before, window.has_after
        self.claims = window.claims
        if window.counts is not None:
            self.query_one("#counts", Static).update(counts_line(window.counts))
        self._show(window.sessions)
        if self.pending_jump is not None and self.sessions:
            self._place_cursor(len(self.sessions) - 1 if self.pending_jump else 0)
        self.pending_jump = None
        self.query_one("#filter-line", Static).update(self._filter_line())
        if self.sessions:
            self._maybe_slide(self.table.cursor_row, self.last_move)
        self._read_ahead()
        self._fill_view()

    def _locate(self, window: ListWindow) -> None:
        """Where the new window starts in the whole list: at the top when nothing is above it,
        from the total when nothing is below it, else from the rows it shares with the last."""
        self.total = self.state.total(window.counts) if window.counts is not None else None
        rows = window.sessions
        if not window.has_before:
            self.first_row = 1
        elif not window.has_after and self.total is not None:
            self.first_row = self.total - len(rows) + 1
        elif self.first_row is not None and self.sessions and rows:
            old_ids = [s.id for s in self.sessions]
            new_ids = [s.id for s in rows]
            if old_ids[0] in new_ids:
                self.first_row -= new_ids.index(old_ids[0])
            elif new_ids[0] in old_ids:
                self.first_row += old_ids.index(new_ids[0])
            else:
                self.first_row = None
        else:
            self.first_row = None
        if self.first_row is not None and self.first_row < 1:
            self.first_row = None

    def _show(self, sessions: list[SessionFields]) -> None:
        same_rows = [s.id for s in sessions] == [s.id for s in self.sessions]
        self.sessions = sessions
        self.by_id = {s.id: s for s in sessions}
        empty = self.query_one("#empty", Static)
        if not sessions:
            empty.update(self._empty_text())
        empty.set_class(not sessions, "shown")
        self.table.set_class(not sessions, "hidden")
        if sessions and self.focused is None:
            self.table.focus()  # hiding the empty table took the focus away
        old_ids = list(self.cells)
        if same_rows and self.cells:
            for session in sessions:
                self._update_row(session)
        elif self.cells and [s.id for s in sessions[: len(old_ids)]] == old_ids:
            # The same rows and more below (the window filled): append, not refill.
            for session in sessions[: len(old_ids)]:
                self._update_row(session)
            self._append_rows(sessions[len(old_ids) :])
        else:
            self._fill_table(sessions)
        self.refresh_bindings()

    def _empty_text(self) -> Text:
        if not self.ctx.store:
            return Text("Opening the store…", style="italic")
        nothing_at_all = replace(self.state, order=SessionOrder()) == ListState()
        if nothing_at_all:
            return Text(
                "No sessions yet. Agents register with `roundtable sessions register`; "
                "`roundtable tui --demo` opens a populated demo store."
            )
        text = Text("No sessions match: ")
        text.append_text(self.state.describe())
        text.append("\n/ text · f status · a ended · S stale", style="dim")
        return text

    def _fill_table(self, sessions: list[SessionFields]) -> None:
        table = self.table
        keep = self.selected_id
        old_row = table.cursor_row
        now = self.ctx.now()
        with self.app.batch_update():
            table.clear()
            self.cells.clear()
            self._append_rows(sessions, now)
            ids = [s.id for s in sessions]
            if not ids:
                self.selected_id = None
                return
            row = ids.index(keep) if keep in ids else min(max(old_row, 0), len(ids) - 1)
            # The operator did not move: the cursor's new index must not slide the window.
            self.last_row = row
            table.move_cursor(row=row, animate=False)
            self.selected_id = ids[row]

    def _cells(self, session: SessionFields, now: datetime) -> list[Text]:
        return row_cells(
            session,
            self.claims.get(session.agent_id),
            now,
            self.ctx.stale_after,
            self.widths,
            self.ctx.adapters,
        )

    def _update_row(self, session: SessionFields) -> None:
        cells = self._cells(session, self.ctx.now())
        old = self.cells.get(session.id)
        if old is None:
            return
        for key, new_cell, old_cell in zip(self.widths, cells, old, strict=True):
            if new_cell != old_cell:
                self.table.update_cell(session.id, key, new_cell)
        self.cells[session.id] = cells

    # -- the window of pages ---------------------------------------------------------------

    def _maybe_slide(self, row: int, moved: int) -> None:
        """Keep a bounded window: read the next page when moving down near the bottom, the
        previous one when moving up near the top, dropping rows at the other end once the
        window holds ``window_pages`` pages. Moving within a screen of either end adds the page
        read beyond it in the background, in the same frame as the move; only when that page is
        not on hand yet is the window read again, once the cursor reaches the end."""
        if self.reading or not self.sessions or moved == 0:
            return
        if moved > 0 and self.has_after:
            if row >= len(self.sessions) - self._reach() and self._add_page(below=True):
                return
            if row >= len(self.sessions) - EDGE_ROWS:
                self.spec = self._extended(down=True)[0]
                self.reload()
                return
        elif moved < 0 and self.has_before:
            if row < self._reach() and self._add_page(below=False):
                return
            if row < EDGE_ROWS:
                self.spec = self._extended(down=False)[0]
                self.reload()
                return
        if self._page_wanted(below=moved > 0):
            # The operator turned round: the page that way is read once this move is painted.
            self.call_after_refresh(self._read_ahead)

    def _reach(self) -> int:
        """How near an end the cursor comes before the page beyond it is added: a screen."""
        return max(EDGE_ROWS, self.table.size.height)

    def _page_wanted(self, *, below: bool) -> bool:
        """There is a page beyond that end of the window, and it is neither held nor asked for."""
        if not self.sessions or not (self.has_after if below else self.has_before):
            return False
        edge = (self.sessions[-1] if below else self.sessions[0]).id
        held = self.ahead if below else self.behind
        if held is not None and (held.edge, held.state) == (edge, self.state):
            return False
        return self.asked[below] != edge

    def _fill_view(self) -> None:
        """A window shorter than the view (a tall terminal; the last page, after End) takes the
        page beyond it as soon as it is read, rather than show blank lines until a key is
        pressed: below it if there is one, else above it."""
        if self.reading or not self.sessions or len(self.sessions) >= self.table.size.height:
            return
        for below in (True, False):
            if self.has_after if below else self.has_before:
                if not self._add_page(below=below):
                    self._read_ahead(below=below)
                return

    def _read_ahead(self, *, below: bool | None = None) -> None:
        """Read the page beyond one end of the window in the background: by default the end
        the operator last moved towards (below at first)."""
        if self.reading or self.ctx.store is None:
            return  # while loading, the rows on hand may be of other filters or another order
        below = self.last_move >= 0 if below is None else below
        if not self._page_wanted(below=below):
            return
        edge = self.sessions[-1] if below else self.sessions[0]
        self.asked[below] = edge.id
        spec = WindowSpec(cursor=session_cursor(edge, self.state.order), backwards=not below)
        self.run_worker(
            partial(self._read_page, edge.id, below, self.state, spec),
            thread=True,
            exclusive=True,
            group="session-list-ahead" if below else "session-list-behind",
            exit_on_error=False,
        )

    def _read_page(self, edge: str, below: bool, state: ListState, spec: WindowSpec) -> None:
        from screens.data import require_store

        try:
            store = require_store(self.ctx)
            token = store.change_token()
            window = self._read_window(store, state, spec, token, self.ctx.now())
        except StoreError:
            return  # the window's own reads report; moving there then reads as before
        self.post_message(self.AheadLoaded(PageAhead(edge, below, state, token, window)))

    def on_session_list_screen_ahead_loaded(self, message: AheadLoaded) -> None:
        page = message.ahead
        if self.asked[page.below] == page.edge:
            self.asked[page.below] = None
        if page.state != self.state or not self.sessions:
            return
        if page.below and self.sessions[-1].id == page.edge:
            self.ahead = page
        elif not page.below and self.sessions[0].id == page.edge:
            self.behind = page
        self._fill_view()

    def _add_page(self, *, below: bool) -> bool:
        """Add the page read beyond the window's end (below or above it), dropping rows at the
        other end beyond the bound; False when there is none for the rows on hand, or when rows
        on screen would have to go. A page sharing rows with the window means the list moved
        under it: the window is read again instead (True: the move is taken care of)."""
        page, rows, table = (self.ahead if below else self.behind), self.sessions, self.table
        edge = rows[-1] if below else rows[0]
        if page is None or page.edge != edge.id or page.state != self.state:
            return False
        spec, drop = self._extended(down=below)
        new = page.window.sessions
        kept = rows[drop:] if below else rows[: len(rows) - drop]
        too_long = len(kept) + len(new) > self.ctx.page_size * self.ctx.window_pages
        # Only rows out of view leave: above it going down; below it going up (the view's
        # height counts the header's line, so a row more than needed stays).
        if below:
            on_screen = drop > table.scroll_y
        else:
            on_screen = drop > 0 and len(kept) < table.scroll_y + table.size.height
        if not new or too_long or on_screen:
            return False
        if below:
            self.ahead = None
        else:
            self.behind = None
        if {s.id for s in new} & {s.id for s in kept}:
            # The list moved under the window since it was read: it is read whole instead.
            self.reload()
            return True
        self.spec = spec
        same_store = self.loaded_key is not None and self.loaded_key.token == page.token
        self.loaded_key = LoadKey(page.token, self.state, spec) if same_store else None
        self.claims = {**self.claims, **page.window.claims}
        if below:
            self.has_before = self.has_before or drop > 0
            self.has_after = page.window.has_after
            if self.first_row is not None:
                self.first_row += drop
            self._slide_table(drop, new)
        else:
            self.has_after = self.has_after or drop > 0
            self.has_before = page.window.has_before
            if not self.has_before:
                self.first_row = 1
            elif self.first_row is not None:
                self.first_row = self.first_row - len(new) if self.first_row > len(new) else None
            self._slide_table_up(drop, new)
        self._update_filter_line()
        # Once painted: the read would slow this frame down (the GIL).
        self.call_after_refresh(self._read_ahead)
        self.call_after_refresh(self._fill_view)
        return True

    def _slide_table(self, drop: int, new: list[SessionFields]) -> None:
        """Remove ``drop`` rows at the top and append ``new`` at the bottom, keeping the cursor
        on its session and the view where it was: no refill, no re-measuring of kept rows."""
        table, gone = self.table, self.sessions[:drop]
        now = self.ctx.now()
        self.sessions = [*self.sessions[drop:], *new]
        self.by_id = {s.id: s for s in self.sessions}
        with self.app.batch_update():
            if drop:
                # View and cursor first, while the table has nothing pending: the cursor's move
                # then scrolls nothing, now or after the next refresh (a frame of its own). The
                # row it passes through for that moment is not a selection.
                table.scroll_to(y=max(table.scroll_y - drop, 0), animate=False, immediate=True)
                with table.prevent(DataTable.RowHighlighted):
                    table.move_cursor(row=table.cursor_row - drop, animate=False, scroll=False)
                table.remove_first_rows(drop)
            for session in gone:
                self.cells.pop(session.id, None)
            self._append_rows(new, now)
        table.measure_now()
        self.last_row = table.cursor_row

    def _slide_table_up(self, drop: int, new: list[SessionFields]) -> None:
        """Remove ``drop`` rows at the bottom and put ``new`` above the first, keeping the cursor
        on its session and the view on the same rows."""
        table, count = self.table, len(self.sessions)
        gone = self.sessions[count - drop :]
        now = self.ctx.now()
        self.sessions = [*new, *self.sessions[: count - drop]]
        self.by_id = {s.id: s for s in self.sessions}
        rows = [(session.id, self._cells(session, now)) for session in new]
        with self.app.batch_update():
            table.remove_last_rows(drop)
            for session in gone:
                self.cells.pop(session.id, None)
            self.cells.update(rows)
            table.prepend_rows(rows)
            # The new height first, so the view can move down by the rows put above it; then the
            # cursor, which the table would otherwise scroll into a view not yet moved.
            table.measure_now()
            table.scroll_to(y=table.scroll_y + len(new), animate=False, immediate=True)
            with table.prevent(DataTable.RowHighlighted):
                table.move_cursor(row=table.cursor_row + len(new), animate=False, scroll=False)
        table.measure_now()
        self.last_row = table.cursor_row

    def _append_rows(self, sessions: list[SessionFields], now: datetime | None = None) -> None:
        now = now or self.ctx.now()
        rows = [(session.id, self._cells(session, now)) for session in sessions]
        self.cells.update(rows)
        self.table.append_rows(rows)

    def _extended(self, *, down: bool) -> tuple[WindowSpec, int]:
        """The window with one more page below (or above), read from a cursor at the end that
        stays, and how many rows beyond the cap at the other end it leaves out."""
        size, rows = self.ctx.page_size, self.sessions
        drop = max(0, len(rows) + size - size * self.ctx.window_pages)
        if drop == 0:
            known, anchor = self._staying_edge(down=down)
            if known:
                pages = ceil(len(rows) / size) + 1
                return WindowSpec(cursor=anchor, pages=pages, backwards=not down), 0
            drop = 1  # that edge cannot be named (rows changed meanwhile): give up one row
        drop = min(drop, len(rows))
        kept = len(rows) - drop
        edge = rows[drop - 1] if down else rows[kept]
        cursor = session_cursor(edge, self.state.order)
        spec = WindowSpec(cursor=cursor, pages=ceil(kept / size) + 1, backwards=not down)
        return spec, drop

    def _staying_edge(self, *, down: bool) -> tuple[bool, str | None]:
        """The cursor just beyond the end of the window that stays put, if it is known: the
        list's own end (None) when nothing lies beyond it, else the cursor it was read from."""
        if down:
            if not self.has_before:
                return True, None
            return (not self.spec.backwards), self.spec.cursor
        if not self.has_after:
            return True, None
        return self.spec.backwards, self.spec.cursor
