"""The session list's columns: which fit the terminal, their widths, and each row's cells as
text (store data always as ``rich.text.Text`` from printable strings, never markup)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from rich.text import Text

from roundtable_console.screens.list.grid import CELL_PADDING, GridColumn, GridRow
from roundtable_console.screens.text import plain, relative_ts, short_time, status_text
from roundtable_console.store.reads.listing import (
    ATTENTION_CAP,
    UNKNOWN_TIER,
    WAITING_TIER,
    SessionOrder,
    attention_reason,
    attention_tier,
)
from roundtable_console.store.records import ClaimCount, SessionFields
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.resume.plan import resume_blocker
from roundtable_console.store.rules import ACTIVE_STATES
from roundtable_console.store.safety.display import one_line
from roundtable_console.store.window.layout import GROUPING_NAMES, GroupHeader

TERMINAL_STATUSES: tuple[str, ...] = ("stopped", "ended", "terminated")
# Statuses are free strings: the header names this many and sums the rest.
MAX_STATUSES_SHOWN = 10
ATTENTION_STYLES = {WAITING_TIER: "bold yellow", UNKNOWN_TIER: "red"}
# Rows drawn are forgotten past about this many (a few windows' worth).
MAX_ROWS_KEPT = 1000
MARK = "●"
MARK_STYLE = "bold cyan"
# A group header: unfolded, folded.
UNFOLDED, FOLDED = "▾", "▸"
# A group's name is cut to this many characters in its header.
GROUP_NAME_WIDTH = 60


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
    # Whether the session is marked (space, *): never dropped, so a mark is always seen.
    Column("mark", "", 1),
    Column("id", "Session", 10, weight=1),
    Column("agent", "Agent", 6, weight=1, sort="agent"),
    # The machine it runs on, as its hooks said (issue 41).
    Column("host", "Host", 8, weight=1, drop_rank=1),
    Column("run", "Run", 8, weight=3, drop_rank=3),
    Column("workspace", "Workspace", 9, weight=1, drop_rank=5),
    Column("adapter", "Adapter", 8, drop_rank=2),
    Column("model", "Model", 10, weight=3, drop_rank=4),
    Column("status", "Status", 18, sort="status"),
    Column("attention", "Attention", 24, weight=6, drop_rank=7, sort="attention"),
    Column("claims", "Claims", 6),
    Column("resume", "Resume", 6),
    Column("seen", "Seen", 9, sort="last_seen"),
    Column("started", "Started", 11, drop_rank=6, sort="started"),
)
COLUMN_BY_KEY: dict[str, Column] = {column.key: column for column in COLUMNS}
# The grid's vertical scrollbar.
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


def grid_columns(widths: Mapping[str, int], order: SessionOrder) -> list[GridColumn]:
    """The grid's columns; the sort column's label says the direction."""
    return [
        GridColumn(key, header_label(COLUMN_BY_KEY[key], order), width)
        for key, width in widths.items()
    ]


def sort_arrow(order: SessionOrder) -> str:
    return "▼" if order.descending else "▲"


def header_label(column: Column, order: SessionOrder) -> Text:
    if column.sort != order.column:
        return Text(column.label)
    return Text(column.label + sort_arrow(order), style="bold")


def claims_cell(count: ClaimCount | None) -> Text:
    if count is None or count.total == 0:
        return Text("0", style="dim")
    text = Text()
    text.append(str(count.live), style="bold")
    if count.expired:
        text.append(f" +{count.expired}", style="yellow")
    return text


def attention_cell(
    session: SessionFields,
    counts: ClaimCount | None,
    now: datetime,
    stale_after: timedelta,
    width: int | None,
) -> Text:
    """Why the session needs a human, if it does (``store.reads.listing.attention_reason``)."""
    cell = plain(attention_reason(session, counts, now, stale_after), width)
    tier = attention_tier(session.status, session.waiting is not None)
    style = ATTENTION_STYLES.get(tier, "dark_orange" if session.is_stale(now, stale_after) else "")
    if style:
        cell.stylize_before(style)
    return cell


def mark_cell(marked: bool | None) -> Text:
    """A mark; "…" while only the store can say whether the row is marked."""
    if marked is None:
        return Text("…", style="dim")
    return Text(MARK, style=MARK_STYLE) if marked else Text("")


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
    marked: bool | None = False,
) -> list[Text]:
    """The cells of the columns in ``widths``, in that order."""
    width = widths.get
    cells = {
        "mark": lambda: mark_cell(marked),
        "id": lambda: plain(session.id, width("id")),
        "agent": lambda: plain(session.agent_id, width("agent")),
        "host": lambda: plain(session.host, width("host")),
        "run": lambda: plain(session.run_id, width("run")),
        "workspace": lambda: plain(session.effective_workspace_id, width("workspace")),
        "adapter": lambda: plain(session.adapter, width("adapter")),
        "model": lambda: plain(provider_model(session), width("model")),
        "status": lambda: status_text(session, now, stale_after),
        "attention": lambda: attention_cell(session, claims, now, stale_after, width("attention")),
        "claims": lambda: claims_cell(claims),
        "resume": lambda: resume_cell(session, adapters or {}),
        "seen": lambda: relative_ts(session.last_seen_at or session.started_at, now),
        "started": lambda: short_time(session.started_at),
    }
    return [cells[key]() for key in widths]


def ordered_statuses(counts: Mapping[str, int]) -> list[str]:
    """The statuses of ``counts`` as the header names them: the active states, the terminal
    ones, then the others, most sessions first."""
    ordered = [s for s in (*ACTIVE_STATES, *TERMINAL_STATUSES) if s in counts]
    return ordered + sorted((s for s in counts if s not in ordered), key=lambda s: -counts[s])


def group_name(grouping: str, key: str | None) -> Text:
    """A group as its header names it: "agent ada", "workspace (none)"."""
    text = Text(f"{GROUPING_NAMES[grouping]} ")
    if key is None:
        text.append(f"(no {GROUPING_NAMES[grouping]})", style="italic")
    else:
        text.append(one_line(key, GROUP_NAME_WIDTH))
    return text


def group_header_text(grouping: str, header: GroupHeader, counts: Mapping[str, int] | None) -> Text:
    """A group's header row: "▾ agent ada · 12 sessions · active 3 · paused 2 · ended 7"
    (folded: "▸", and "folded"); its counts are "…" while the store counts them."""
    text = Text()
    text.append(f"{FOLDED if header.folded else UNFOLDED} ", style="bold")
    text.append_text(group_name(grouping, header.key))
    if counts is None:
        text.append(" · …", style="dim")
    else:
        text.append(f" · {plural(sum(counts.values()), 'session')}")
        shown = ordered_statuses(counts)
        for status in shown[:MAX_STATUSES_SHOWN]:
            text.append(f" · {one_line(status, 20)}\u00a0{counts[status]}", style="not bold")
        others = shown[MAX_STATUSES_SHOWN:]
        if others:
            rest = sum(counts[s] for s in others)
            text.append(f" · {len(others)} other statuses {rest}", style="not bold")
    if header.folded:
        text.append(" · folded (enter unfolds)", style="dim")
    return text


def counts_line(
    counts: dict[str, int], marked: Text | None = None, *, attention: int | None = None
) -> Text:
    """Counts by status, after how many sessions need a human and how many are marked
    (``marks_text``) when any are; the store's name is in the header."""
    total = sum(counts.values())
    text = Text()
    text.append(plural(total, "session"), style="bold")
    if attention:
        shown = f"{ATTENTION_CAP:,}+" if attention >= ATTENTION_CAP else f"{attention:,}"
        text.append(" · ")
        text.append(f"{shown} need{'s' if attention == 1 else ''} attention", style="bold yellow")
    if marked is not None:
        text.append(" · ")
        text.append_text(marked)
    ordered = ordered_statuses(counts)
    for status in ordered[:MAX_STATUSES_SHOWN]:
        text.append(" · ")
        # A no-break space: a wrapped line never parts a status from its count.
        text.append(f"{one_line(status, 20)}\u00a0{counts[status]}")
    others = ordered[MAX_STATUSES_SHOWN:]
    if others:
        text.append(f" · {len(others)} other statuses {sum(counts[s] for s in others)}")
    return text


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def marks_text(marked: int | None) -> Text:
    """How many sessions are marked ("…" while the store counts them)."""
    text = Text()
    text.append(f"{MARK} ", style=MARK_STYLE)
    text.append(f"{'…' if marked is None else marked}\u00a0marked", style="bold")
    return text


def same_cells(old: Sequence[Text], new: Sequence[Text]) -> bool:
    """Whether two rows of cells draw the same (``Text`` equality leaves out the base style)."""
    return len(old) == len(new) and all(
        (a.plain, a.style, a.spans) == (b.plain, b.style, b.spans)
        for a, b in zip(old, new, strict=True)
    )


# A row as drawn, with what it was drawn from: session, claims, clock tick and mark.
Drawn = tuple[SessionFields, ClaimCount | None, int, bool | None, GridRow]


class RowPainter:
    """The grid's rows for sessions, kept until the session, its agent's claims, its mark or
    the clock (``tick``) move: a row unchanged since it was last drawn is not built again."""

    def __init__(self, *, stale_after: timedelta, adapters: Mapping[str, AdapterConfig]) -> None:
        self.stale_after = stale_after
        self.adapters = adapters
        self.widths = column_widths(120)
        self.tick = 0
        self.drawn: dict[str, Drawn] = {}
        # Group headers as drawn, by what they were drawn from.
        self.headers: dict[tuple[object, ...], GridRow] = {}

    def resize(self, width: int) -> bool:
        """Fit the columns to ``width``; True when they changed."""
        widths = column_widths(width)
        if widths == self.widths:
            return False
        self.widths = widths
        self.drawn.clear()
        return True

    def clock_moved(self) -> None:
        self.tick += 1

    def row(
        self,
        session: SessionFields,
        claims: ClaimCount | None,
        now: datetime,
        marked: bool | None = False,
    ) -> GridRow:
        drawn = self.drawn.get(session.id)
        if drawn is not None and drawn[0] is session and drawn[1:4] == (claims, self.tick, marked):
            return drawn[4]
        if len(self.drawn) >= MAX_ROWS_KEPT:
            self.drawn.clear()  # rows long scrolled past
        cells = row_cells(
            session, claims, now, self.stale_after, self.widths, self.adapters, marked
        )
        row = GridRow(cells)
        if drawn is not None and same_cells(drawn[4].cells, cells):
            row = drawn[4]  # the clock moved, the cells did not: the line drawn stays
        self.drawn[session.id] = (session, claims, self.tick, marked, row)
        return row

    def header(
        self, grouping: str, header: GroupHeader, counts: Mapping[str, int] | None
    ) -> GridRow:
        """A group's header row, across the columns; kept while it draws the same."""
        drawn_from = (
            grouping,
            header.key,
            header.folded,
            None if counts is None else tuple(sorted(counts.items())),
        )
        row = self.headers.get(drawn_from)
        if row is None:
            if len(self.headers) >= MAX_ROWS_KEPT:
                self.headers.clear()
            row = self.headers[drawn_from] = GridRow(
                span=group_header_text(grouping, header, counts)
            )
        return row
