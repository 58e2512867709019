"""The workspaces of the store (the reference's ``workspaces`` table), as the server reads them."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, select

from roundtable_console.store.db.models import Workspace
from roundtable_console.store.errors import WorkspaceNotFound

_WORKSPACES = Workspace.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class WorkspaceRow:
    id: str
    root_path: str
    default_branch: str | None


def get_workspace(*, db: Connection, workspace_id: str) -> WorkspaceRow:
    """The workspace, or ``workspace_not_found`` (ref: every session route names one)."""
    row = db.execute(
        select(_WORKSPACES.c.id, _WORKSPACES.c.root_path, _WORKSPACES.c.default_branch).where(
            _WORKSPACES.c.id == workspace_id
        )
    ).one_or_none()
    if row is None:
        raise WorkspaceNotFound(f"No workspace has the id {workspace_id!r}.")
    return WorkspaceRow(id=row.id, root_path=row.root_path, default_branch=row.default_branch)
