"""Where a hook's writes go: the store itself (``LocalReporter``, the quick writes of
``store.writes.quick_writes``, the full path for a store they do not take) or ``roundtable serve``
(``ServerReporter``, with an agent token). Each applies one ``Operation`` or raises ``Retry``
(kept in the spool, written later) or ``Refused`` (said, dropped: writing it again cannot help).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from roundtable_console.agents.operations import IDLE, Operation

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# A burst of tool events writes one heartbeat row per session in this many seconds, unless the
# status or the waiting reason changes (``docs/agents.md#connect-your-agents``).
QUIET_SECONDS = 5.0
# A locked store or an unreachable server is waited for this long, then the write is spooled.
WAIT_SECONDS = 2.0
# The most of a server's answer read (a permission request, its input and suggestions included).
MAX_ANSWER_BYTES = 1024 * 1024


class Retry(Exception):
    """Not written now; the spool keeps it for the next hook."""


class Refused(Exception):
    """Not written, and writing it again would not help."""


def _digest(where: str) -> str:
    """Which store or server a spooled write is for, without its URL (and its password)."""
    import hashlib

    return hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _clock_at(at: str) -> Callable[[], datetime]:
    moment = datetime.fromisoformat(at)
    return lambda: moment


class LocalReporter:
    """Writes to the store at ``url`` (SQLite or PostgreSQL) as ``roundtable sessions`` would."""

    def __init__(self, url: str, say: Callable[[str], None] = lambda _said: None) -> None:
        from roundtable_console.store.db import drivers

        self.url = url
        self.say = say  # a line on the hook's stderr (what it cannot do, never in the way)
        self._path = drivers.sqlite_path(url)
        # The write (its key) after which the session's waits are withdrawn: done in its own
        # transaction where the quick path takes it (one transaction, not two, for a turn's
        # end), and the sessions so done.
        self.withdraw_with: str | None = None
        self.withdrawn: set[str] = set()

    @property
    def target(self) -> str:
        return _digest(self.url)

    def apply(self, operation: Operation) -> str | None:
        """The session written to (None: nothing was)."""
        from roundtable_console.store.errors import SessionNotFound, StoreError

        if self._path is not None and not self._path.exists():
            raise Retry(f"the store {self._path} does not exist")
        try:
            return self._apply(operation)
        except SessionNotFound:
            if operation.op == "end":
                return None  # nothing to end
            raise
        except StoreError as error:
            if error.code == "database_unavailable":
                raise Retry(error.message.splitlines()[0]) from None
            raise Refused(f"{error.code}: {error.message.splitlines()[0]}") from None
        except (Retry, Refused):
            raise
        except Exception as error:  # noqa: BLE001 - a broken store is the spool's to wait out
            raise Retry(
                f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            ) from None

    def withdraw_requests(self, session_id: str) -> None:
        """Its agent moved on: the session's pending permission requests are withdrawn (said,
        not retried, when the store cannot be written: they expire anyway)."""
        from roundtable_console.store.writes import quick_writes

        if session_id in self.withdrawn:
            return
        try:
            quick_writes.withdraw_requests(self.url, session_id=session_id,
                                           wait_seconds=WAIT_SECONDS)  # fmt: skip
        except Exception as error:  # noqa: BLE001 - never in the agent's way
            raise Refused(f"pending requests not withdrawn ({type(error).__name__})") from None

    def _apply(self, op: Operation) -> str:
        from roundtable_console.store.errors import SessionNotFound

        if op.given_session and not self._given_is_ours(op):
            op = op.for_itself()
        clock = _clock_at(op.at)
        fields = op.fields
        if op.op == "end":
            self._write(
                "end",
                clock,
                op.key,
                session_id=op.session_id,
                status=fields["status"],
                quick_only={"once_ended": True, **self._withdrawing(op)},
                **self._usage(fields),
            )
            return op.session_id
        if op.op == "start":
            if op.given_session:
                try:  # a session the console launched keeps its agent, run and history
                    self._write(
                        "heartbeat",
                        clock,
                        op.key,
                        session_id=op.session_id,
                        status=IDLE,
                        waiting=None,
                        external_session_id=fields["external_session_id"],
                    )
                    return op.session_id
                except SessionNotFound:
                    pass
            self._write("register", clock, op.key, session_id=op.session_id, **fields)
            return op.session_id
        beat = {
            "session_id": op.session_id,
            "status": fields["status"],
            "waiting": fields["waiting"],
            "turn_done": fields.get("turn"),
            "tool_calls": fields.get("tool_calls") or None,
            **self._usage(fields),
        }
        try:
            self._write("heartbeat", clock, op.key, quiet_seconds=QUIET_SECONDS,
                        quick_only=self._withdrawing(op), **beat)  # fmt: skip
        except SessionNotFound:
            self._write(
                "register", clock, op.key + ":start", session_id=op.session_id, **fields["start"]
            )
            self._write("heartbeat", clock, op.key, **beat)
        return op.session_id

    def _withdrawing(self, op: Operation) -> dict[str, Any]:
        """The quick write's option that withdraws the session's waits with ``op``, when the
        hook withdraws them after it."""
        return {"withdraw": True} if op.key == self.withdraw_with else {}

    def _usage(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The usage a write carries, with the prices of the user's configuration to estimate
        its cost by (read only when there is usage to write)."""
        if not fields.get("usage"):
            return {}
        from roundtable_console.agents.prices import user_prices

        return {"usage": fields["usage"], "prices": user_prices(self.say)}

    def _given_is_ours(self, op: Operation) -> bool:
        """Whether the session ROUNDTABLE_SESSION_ID names is this agent's: it has no agent id
        of its own yet, or this one (not another agent's, whose environment this one
        inherited)."""
        from roundtable_console.store.writes import quick_writes

        taken, current = quick_writes.current_session(
            self.url, op.session_id, wait_seconds=WAIT_SECONDS
        )
        if not taken or current is None:
            return True
        stored = (current.external_session_id or "").strip()
        return not stored or stored == op.external_id

    def _write(
        self,
        name: str,
        clock: Callable[[], datetime],
        key: str,
        *,
        quick_only: dict[str, Any] | None = None,
        **values: Any,
    ) -> None:
        """``quick_writes.NAME`` (``quick_only``: its options the full path has not, such as a
        quiet beat), else the full path for a store the quick writes do not take."""
        from roundtable_console.store.writes import quick_writes

        done = getattr(quick_writes, name)(
            self.url, clock=clock, idempotency_key=key, wait_seconds=WAIT_SECONDS,
            **values, **(quick_only or {}),
        )  # fmt: skip
        if done is None:
            self._write_full(name, clock, key, **values)
        elif (quick_only or {}).get("withdraw"):
            self.withdrawn.add(values["session_id"])

    def _write_full(
        self, name: str, clock: Callable[[], datetime], key: str, **values: Any
    ) -> None:
        """A store the quick writes do not take (a schema behind, say): the normal path, which
        migrates it first; under the same key, so a replay is written once."""
        from roundtable_console.store.db.database import open_store
        from roundtable_console.store.writes import agent_writes

        store = open_store(self.url)
        try:
            with store.write() as db:
                if agent_writes.take_hook_key(
                    db=db, key=key, action=name, session_id=values["session_id"], clock=clock
                ):
                    getattr(agent_writes, name)(db=db, clock=clock, **values)
        finally:
            store.dispose()


class ServerReporter:
    """Writes through ``roundtable serve``'s session routes with an agent token, each under an
    idempotency key (a replay is written once)."""

    def __init__(
        self, server: str, token: str | None, workspace_id: str, beats: Path | None = None
    ) -> None:
        self.base = server.rstrip("/")
        self.token = token
        self.workspace_id = workspace_id
        # The store's writes withdraw a session's waits with a turn's end; the server is asked
        # for it on its own (``withdraw_requests``).
        self.withdraw_with: str | None = None
        # The last beat sent per session (a file of its owner's, beside the spool): a burst of
        # tool events sends one beat in QUIET_SECONDS, as the store's quiet beat writes one.
        self.beats = beats

    def apply(self, op: Operation) -> str | None:
        """The session written to (None: nothing was)."""
        from urllib.parse import quote

        if op.given_session and not self._given_is_ours(op):
            op = op.for_itself()
        fields = op.fields
        if op.op == "end":
            ended = {"status": fields["status"]}
            if fields.get("usage"):
                ended["usage"] = fields["usage"]
            status, _ = self.call("POST", op.session_id, "/end", ended, op.key)
            if status not in (200, 404):
                self._refuse(status)
            return op.session_id
        if op.op == "start":
            if op.given_session:
                body = {"external_session_id": fields["external_session_id"]}
                status, _ = self.call(
                    "POST", op.session_id, f"/heartbeat?status={IDLE}", body, op.key
                )
                if status == 200:
                    return op.session_id
                if status != 404:
                    self._refuse(status)
            self._register(op.session_id, fields, op.key)
            return op.session_id
        body: dict[str, Any] = {"waiting": fields["waiting"], "turn_done": fields.get("turn")}
        said = [op.session_id, fields["status"], fields["waiting"], fields.get("turn")]
        carried = {name: fields[name] for name in ("tool_calls", "usage") if fields.get(name)}
        if self._quiet(said, op.at):
            if not carried:
                return op.session_id
            # What it carries is written, with a beat the server keeps quiet as well.
            body["quiet_seconds"] = QUIET_SECONDS
        body.update(carried)
        beat = f"/heartbeat?status={quote(fields['status'])}"
        status, _ = self.call("POST", op.session_id, beat, body, op.key)
        if status == 404:
            self._register(op.session_id, fields["start"], op.key + ":start")
            status, _ = self.call("POST", op.session_id, beat, body, op.key + ":beat")
        if status != 200:
            self._refuse(status)
        self._sent(said, op.at)
        return op.session_id

    @property
    def target(self) -> str:
        return _digest(f"{self.base} {self.workspace_id}")

    def withdraw_requests(self, session_id: str) -> None:
        """Its agent moved on: the session's pending permission requests, and a hook still
        listening for a reply to its last turn, are withdrawn (said, not retried, when the
        server does not answer: they expire anyway)."""
        try:
            status, _ = self.call("POST", session_id, "/withdraw-waits", {}, None)
        except Retry as retry:
            raise Refused(f"pending requests not withdrawn ({retry})") from None
        if status != 200:
            raise Refused(f"pending requests not withdrawn ({self.base} answered {status})")

    def _beat_file(self, session_id: str) -> Path | None:
        import hashlib

        if self.beats is None:
            return None
        return self.beats / (hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".json")

    def _quiet(self, said: list[Any], at: str) -> bool:
        place = self._beat_file(said[0])
        if place is None:
            return False
        try:
            last = json.loads(place.read_text(encoding="utf-8"))
            elapsed = datetime.fromisoformat(at) - datetime.fromisoformat(last["at"])
            return bool(last["said"] == said and 0 <= elapsed.total_seconds() < QUIET_SECONDS)
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def _sent(self, said: list[Any], at: str) -> None:
        place = self._beat_file(said[0])
        if place is None:
            return
        try:
            place.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(place, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"said": said, "at": at}, handle)
        except OSError:
            pass  # the next beat is sent, that is all

    def _register(self, session_id: str, fields: dict[str, Any], key: str) -> None:
        body = {name: value for name, value in fields.items() if value is not None}
        body["metadata"] = {k: v for k, v in fields["metadata"].items() if k != "workspace_id"}
        status, _ = self.call("PUT", session_id, "", body, key)
        if status not in (200, 201):
            self._refuse(status)

    def _given_is_ours(self, op: Operation) -> bool:
        status, body = self.call("GET", op.session_id, "", None, None)
        if status != 200:
            return True  # not there (registered as given), or said by the write itself
        try:
            stored = str(json.loads(body).get("external_session_id") or "").strip()
        except (ValueError, AttributeError):
            return True
        return not stored or stored == op.external_id

    def _refuse(self, status: int) -> None:
        # Worth another try: the server down or busy, a token not (yet, or no longer) good. A
        # 403 is a good token refused this write: trying again would only hold the spool up.
        if status >= 500 or status in (401, 408, 429):
            raise Retry(f"{self.base} answered {status}")
        raise Refused(f"{self.base} answered {status}")

    def call(
        self,
        method: str,
        session_id: str,
        suffix: str,
        body: dict[str, Any] | None,
        key: str | None,
        *,
        timeout: float = WAIT_SECONDS,
    ) -> tuple[int, bytes]:
        import urllib.error
        import urllib.request
        from urllib.parse import quote

        path = (
            f"/api/v1/workspaces/{quote(self.workspace_id, safe='')}"
            f"/sessions/{quote(session_id, safe='')}{suffix}"
        )
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if key is not None:
            headers["Idempotency-Key"] = key[:200]
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers=headers)  # fmt: skip

        # No redirect is followed: the token goes to the server named at install, nowhere else.
        class NoRedirects(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                return None

        opener = urllib.request.build_opener(NoRedirects)
        try:
            with opener.open(request, timeout=timeout) as response:
                return response.status, response.read(MAX_ANSWER_BYTES)
        except urllib.error.HTTPError as error:
            return error.code, b""
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise Retry(f"{self.base} did not answer ({reason})") from None


def server_token(variable: str | None) -> str | None:
    return os.environ.get(variable, "").strip() or None if variable else None
