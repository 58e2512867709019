"""The session list's marks, as plain data: no Textual, no database (tests/test_marks.py).

``space`` marks or unmarks one session, by id. ``*`` marks every session the list's filters let
through, held as that filter (a ``SessionFilter`` as it was when ``*`` was pressed, its stale
cutoff an instant), never as the ids it stands for: sessions read later, or written later, that
match it are marked too. A session unmarked while a filter mark covers it is excluded from that
filter mark. ``u`` clears every mark. Marks are kept by session id, so they outlive reads,
scrolling, another sort and other filters.

Whether a row is marked is decided in Python (``store.reads.matching``), without a read, for any row
the store wrote itself; the few rows only the store can decide (odd timestamps or metadata left
by other writers) are asked about (``open_questions``) and show as undecided meanwhile.

For the bulk actions: ``SessionListScreen.marks`` is this model, and ``marks.selection()`` the
``store.reads.listing.Selection`` to act on: ``ids`` marked one by one, and ``by_filter``, each a
``FilterSelection`` (``filters``, and the ``excluded`` ids unmarked since). In SQL it is
``store.reads.sessions.selection_condition(selection)``; ``store.reads.sessions.count_selected``
counts it; ``store.reads.matching.selection_admits`` decides it for a session in hand. After a bulk
action, ``unmark_ids`` unmarks the sessions it did, known by id alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from roundtable_console.store.reads.listing import FilterSelection, Selection, SessionFilter
from roundtable_console.store.reads.matching import filter_admits
from roundtable_console.store.records import SessionFields

# Rows whose verdict is remembered, past which the memory starts again (a few windows' worth).
MAX_VERDICTS_KEPT = 1000
# A filter mark's count follows the store's changes at most this often.
RECOUNT_SECONDS = 5.0

# A question for the store: whether a filter lets these sessions (id, version) through.
Asked = tuple[tuple[str, int], ...]


class Marks:
    """Which sessions are marked: ``ids`` marked one by one, and filter marks."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.by_filter: list[FilterSelection] = []
        # Moves with every change of the marks (a count read before it is out of date).
        self.revision = 0
        # Moves with every change of what a row shows (the marks, or an answer from the store).
        self.changes = 0
        # The store's answers for rows Python cannot decide: (filter, session id, version).
        self.answers: dict[tuple[SessionFilter, str, int], bool] = {}
        self.asking: set[tuple[SessionFilter, str, int]] = set()
        # How many are marked, as last counted, and the revision it was counted at.
        self.counted: tuple[int, int] | None = None
        self.counted_at: float | None = None
        self.verdicts: dict[str, tuple[SessionFields, int, bool | None]] = {}

    def __bool__(self) -> bool:
        return bool(self.ids or self.by_filter)

    # -- what is marked -----------------------------------------------------------------------

    def selection(self) -> Selection:
        """What is marked, as the store takes it (see the module's docstring)."""
        return Selection(frozenset(self.ids), tuple(self.by_filter))

    def is_marked(self, session: SessionFields) -> bool | None:
        """Whether ``session`` is marked; None while only the store can say (asked about with
        ``open_questions``)."""
        if session.id in self.ids:
            return True
        if not self.by_filter:
            return False
        kept = self.verdicts.get(session.id)
        if kept is not None and kept[0] is session and kept[1] == self.changes:
            return kept[2]
        verdict: bool | None = False
        for chosen in self.by_filter:
            if session.id not in chosen.excluded:
                admits = self.admits(chosen.filters, session)
                if admits:
                    verdict = True
                    break
                if admits is None:
                    verdict = None
        if len(self.verdicts) >= MAX_VERDICTS_KEPT:
            self.verdicts.clear()
        self.verdicts[session.id] = (session, self.changes, verdict)
        return verdict

    def admits(self, filters: SessionFilter, session: SessionFields) -> bool | None:
        """Whether a filter lets ``session`` through: from Python, else from the store's
        answer for this version of the row, else None."""
        verdict = filter_admits(filters, session)
        if verdict is None:
            return self.answers.get((filters, session.id, session.version))
        return verdict

    # -- what the operator does ---------------------------------------------------------------

    def toggle(self, session: SessionFields) -> bool:
        """Mark ``session``, or unmark it when it is marked; True when it is marked now. An
        undecided row is marked."""
        if self.is_marked(session):
            self.unmark(session)
            return False
        self.mark(session)
        return True

    def mark(self, session: SessionFields) -> None:
        self.ids.add(session.id)
        self.by_filter = [
            replace(chosen, excluded=chosen.excluded - {session.id})
            if session.id in chosen.excluded
            else chosen
            for chosen in self.by_filter
        ]
        self._changed()

    def unmark(self, session: SessionFields) -> None:
        """Unmarked by id, and excluded from every filter mark that covers it (or may)."""
        self.ids.discard(session.id)
        self.by_filter = [
            replace(chosen, excluded=chosen.excluded | {session.id})
            if self.admits(chosen.filters, session) is not False
            else chosen
            for chosen in self.by_filter
        ]
        self._changed()

    def unmark_ids(self, session_ids: Iterable[str]) -> None:
        """Unmark sessions known by id alone (those a bulk action did): out of the ids, and
        excluded from every filter mark, which may cover them now or later (an exclusion of a
        session a filter does not cover changes nothing else)."""
        gone = frozenset(session_ids)
        if not gone:
            return
        self.ids -= gone
        self.by_filter = [
            replace(chosen, excluded=chosen.excluded | gone) for chosen in self.by_filter
        ]
        self._changed()

    def mark_matching(self, filters: SessionFilter) -> None:
        """Mark every session ``filters`` lets through, now and as the store changes. The same
        filter marked again replaces the first, and what was excluded from it is marked again;
        so does one that differs only by a later stale cutoff (it covers all the first did)."""
        kept = [chosen for chosen in self.by_filter if not _covers(filters, chosen.filters)]
        self.by_filter = [*kept, FilterSelection(filters)]
        self._changed()

    def clear(self) -> bool:
        """Every mark gone; False when there was none."""
        if not self:
            return False
        self.ids.clear()
        self.by_filter = []
        self.answers.clear()
        self.asking.clear()
        self._changed()
        return True

    def _changed(self) -> None:
        self.revision += 1
        self.changes += 1
        # Answers for filters no longer marked are let go.
        filters = {chosen.filters for chosen in self.by_filter}
        self.answers = {key: found for key, found in self.answers.items() if key[0] in filters}

    # -- what only the store can say ----------------------------------------------------------

    def open_questions(self, sessions: list[SessionFields]) -> dict[SessionFilter, Asked]:
        """For each filter mark, the ``sessions`` it may or may not cover that Python cannot
        decide and nobody has asked about yet; they count as asked from now on."""
        questions: dict[SessionFilter, list[tuple[str, int]]] = {}
        for chosen in self.by_filter:
            for session in sessions:
                if session.id in self.ids or session.id in chosen.excluded:
                    continue
                key = (chosen.filters, session.id, session.version)
                if key in self.answers or key in self.asking:
                    continue
                if filter_admits(chosen.filters, session) is None:
                    self.asking.add(key)
                    questions.setdefault(chosen.filters, []).append(key[1:])
        return {filters: tuple(asked) for filters, asked in questions.items()}

    def answered(self, filters: SessionFilter, asked: Asked, admitted: set[str] | None) -> None:
        """The store's answer to ``open_questions``: which of ``asked`` ``filters`` lets
        through (None: the question failed, and may be asked again)."""
        if len(self.answers) > MAX_VERDICTS_KEPT * len(self.by_filter):
            self.answers.clear()  # rows long scrolled past
        for session_id, version in asked:
            key = (filters, session_id, version)
            self.asking.discard(key)
            if admitted is not None and any(chosen.filters == filters for chosen in self.by_filter):
                self.answers[key] = session_id in admitted
        self.changes += 1

    # -- how many -----------------------------------------------------------------------------

    @property
    def needs_count(self) -> bool:
        """Whether only the store can count the marks (a filter mark)."""
        return bool(self.by_filter)

    def count(self) -> int | None:
        """How many sessions are marked; None until the store has counted this revision of the
        marks. A count stands while the store changes, until it is counted again."""
        if not self.by_filter:
            return len(self.ids)
        if self.counted is None or self.counted[1] != self.revision:
            return None
        return self.counted[0]

    def count_started(self, now: float) -> None:
        self.counted_at = now

    def recount_in(self, now: float) -> float:
        """Seconds until the filter marks may be counted again after a change in the store
        (0: now); ``now`` is a monotonic clock."""
        if self.counted_at is None:
            return 0.0
        return max(self.counted_at + RECOUNT_SECONDS - now, 0.0)

    def counted_as(self, revision: int, total: int) -> bool:
        """The store's count of revision ``revision``; False when the marks changed since."""
        if revision != self.revision:
            return False
        self.counted = (total, revision)
        return True


def _covers(newer: SessionFilter, older: SessionFilter) -> bool:
    """Whether ``newer`` lets through every session ``older`` does: the same filter, or the same
    but for a later stale cutoff."""
    if newer == older:
        return True
    if newer.stale_before is None or older.stale_before is None:
        return False
    later = newer.stale_before >= older.stale_before
    return later and replace(newer, stale_before=None) == replace(older, stale_before=None)
