"""The workspaces of the store (the reference's ``workspaces`` table), as the server reads them."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, select

from roundtable_console.store.db.models import Workspace
from roundtable_console.store.errors import WorkspaceNotFound
from roundtable_console.store.writes.history import Prepared

_WORKSPACES = Workspace.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class WorkspaceRow:
    id: str
    root_path: str
    default_branch: str | None


# Built once: every request of the server reads it (store.writes.history.Prepared).
_GET = Prepared(
    select(_WORKSPACES.c.id, _WORKSPACES.c.root_path, _WORKSPACES.c.default_branch).where(
        _WORKSPACES.c.id == bindparam("id")
    )
)


def get_workspace(*, db: Connection, workspace_id: str) -> WorkspaceRow:
    """The workspace, or ``workspace_not_found`` (ref: every session route names one)."""
    row = _GET.execute(db, {"id": workspace_id})
    if row is None:
        raise WorkspaceNotFound(f"No workspace has the id {workspace_id!r}.")
    return WorkspaceRow(
        id=row["id"], root_path=row["root_path"], default_branch=row["default_branch"]
    )
