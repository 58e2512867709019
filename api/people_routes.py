"""Ours, for people's own clients (the command line and the terminal console through a server):
their routes' entries, added to the app by ``add_people_routes``. The reference's routes, by
workspace, are ``api.app``'s."""

from __future__ import annotations

from fastapi import FastAPI

from roundtable_console.api.agent_routes import add_agent_routes
from roundtable_console.api.routes import bodies, schemas
from roundtable_console.api.routes import budgets as budget_ops
from roundtable_console.api.routes import bulk_runs as bulk_ops
from roundtable_console.api.routes import console_reads as console_ops
from roundtable_console.api.routes import devices as device_ops
from roundtable_console.api.routes import requests as request_ops
from roundtable_console.api.routes import session_records as record_ops
from roundtable_console.api.routes.budgets import SINCE as BUDGET_SINCE
from roundtable_console.api.routes.documented import PATH_ID, operation, responses
from roundtable_console.api.routes.parameters import (
    ALL_STATES,
    API,
    DECISION_BODY,
    IF_MATCH,
    LIST_PARAMETERS,
    WORKSPACE_PARAMETER,
)

RECORDS = API + "/sessions"


def add_people_routes(app: FastAPI) -> None:
    _records(app)
    _devices(app)
    _console(app)


def _records(app: FastAPI) -> None:
    """Ours, for people's clients: sessions across workspaces, as the command line prints them
    (``api.routes.session_records``)."""
    operation(app, "GET", RECORDS, record_ops.list_records, name="list_session_records",
               summary="A page of the sessions the caller reaches, with the store's column names "
               "(roundtable sessions list --json's). A token bound to workspaces reads one at a "
               "time: workspace_id, else its first.", model=schemas.SessionRecordPage,
               parameters=[schemas.LIMIT, schemas.OPTIONAL_CURSOR, *LIST_PARAMETERS[2:],
                           WORKSPACE_PARAMETER])  # fmt: skip
    operation(app, "GET", RECORDS + "/{session_id}", record_ops.read_record,
               name="get_session_record", summary="One session, with the store's column names "
               "(roundtable sessions show --json's).", model=schemas.SessionRecord)  # fmt: skip
    operation(app, "GET", API + "/me", record_ops.me, name="who_am_i",
               summary="Who the caller is: its name (the audit's actor), its role, its "
               "workspaces (null: every one).", model=schemas.Me)  # fmt: skip
    operation(app, "GET", API + "/overview", record_ops.overview, name="fleet_overview",
               summary="The fleet's overview: sessions by status, why they need a human, usage "
               "by agent and run, sessions started by hour. For callers bound to no "
               "workspace.")  # fmt: skip
    operation(app, "GET", API + "/budgets", budget_ops.budgets, name="budgets",
               summary="The configured budgets the caller may see (a workspace's: its tokens; "
               "any other: tokens of every workspace), where each stands now, and the crossings "
               "of 80 % and 100 % claimed since a time (roundtable budgets --json's).",
               parameters=[schemas.text_query("since", "The crossings claimed at this UTC time "
                                              "or later.", BUDGET_SINCE)])  # fmt: skip
    operation(app, "GET", API + "/requests", request_ops.pending, name="pending_requests",
               summary="The pending permission requests of every session the caller reaches, "
               "oldest first (session: of one; all: every state, newest first).",
               parameters=[ALL_STATES, schemas.text_query("session", "Of this session only.",
                                                          schemas.PRINTABLE_NAME)])  # fmt: skip
    operation(app, "POST", API + "/requests/{request_id}/decision", request_ops.decide_by_id,
               name="decide_request_by_id",
               summary="Allow or deny a permission request by its id alone (an operator's; an "
               "Idempotency-Key is required; one decided, expired or withdrawn answers 409).",
               errors=(409,), parameters=[schemas.idempotency(True)],
               body=DECISION_BODY, body_required=True)  # fmt: skip
    one = RECORDS + "/{session_id}"
    operation(
        app,
        "GET",
        one + "/termination-impact",
        record_ops.termination_impact,
        name="termination_impact",
        summary="What terminating the session affects: its "
        "agent's active claims (live and expired), where Roundtable started its agent.",
    )
    operation(app, "GET", one + "/projections/{name}", record_ops.projection,
               name="session_projection", summary="A page of the session's logs, tool-calls, "
               "claims or proposals, or its metrics or environment, in the store's shapes "
               "(roundtable sessions NAME --json's).",
               parameters=[schemas.LIMIT, schemas.OPTIONAL_CURSOR])  # fmt: skip
    operation(app, "GET", one + "/briefing", record_ops.briefing, name="session_briefing",
               summary="The session's resume briefing, its parts, the plan that resumes "
               "it (roundtable resume --json's), and the host that would start it.")  # fmt: skip
    operation(
        app,
        "GET",
        one + "/history",
        record_ops.history_after,
        name="session_history",
        summary="The session's history rows after the row `after` (from its start when "
        "not given), oldest first.",
        parameters=[
            schemas.text_query(
                "after", "A history row's id.", {"type": "string", "pattern": "^[0-9]{0,18}$"}
            )
        ],
    )
    operation(
        app,
        "GET",
        one + "/heartbeats",
        record_ops.heartbeats,
        name="session_heartbeats",
        summary="The session's heartbeats in each hour of the last day, oldest first.",
    )
    for action in ("heartbeat", "pause", "stop", "resume", "terminate"):
        key_needed = action in ("resume", "terminate")
        summary = (  # the operator's heartbeat is the console's h (sessions heartbeat: an agent's)
            "Heartbeat as a human (the console's h), answered with the whole outcome."
            if action == "heartbeat"
            else f"{action.capitalize()} (a human's), answered with the whole outcome "
            f"(roundtable sessions {action} --json's)."
        )
        operation(app, "POST", f"{RECORDS}/{{session_id}}/{action}",
                   record_ops.act_on_record(action), name=f"{action}_session_record",
                   summary=summary,
                   model=schemas.ActionOutcome, errors=(409,),
                   parameters=[schemas.idempotency(key_needed), IF_MATCH],
                   body=schemas.body_schema(bodies.TERMINATE_FIELDS)
                   if action == "terminate" else None)  # fmt: skip
    add_agent_routes(app, one, by_id=True)  # a session of no workspace is reached too


def _devices(app: FastAPI) -> None:
    """The caller's device sign-ins (``api.routes.devices``)."""
    operation(app, "GET", API + "/devices", device_ops.list_own, name="list_devices",
               summary="The device sign-ins of the caller's token (installed apps kept signed "
               "in while used), last used first: name, last use, end.")  # fmt: skip
    operation(app, "POST", API + "/devices/{device_id}/revoke", device_ops.revoke_own,
               name="revoke_device", summary="End one device sign-in of the caller's token at "
               "once; the device is told so, once. Another token's is not found.")  # fmt: skip


def _console(app: FastAPI) -> None:
    """Ours, for the terminal console through the server: its list's reads, each a question in
    JSON (``store.window.wire``), answered by the console's own read functions."""
    question = {"type": "object", "description": "The question, in store.window.wire's JSON."}
    for path, operation_of, name, summary in (
        ("rows", console_ops.read_rows, "console_rows",
         "The rows a console's list asks for (a place, or a page after or before a row), with "
         "their agents' claims and the counts, from one snapshot."),
        ("count", console_ops.count, "console_count",
         "How many sessions a filter lets through, or its groups (grouping)."),
        ("selected", console_ops.count_selected, "console_selected",
         "How many sessions a selection (ids, and filters less those excluded) holds."),
        ("admitted", console_ops.admitted, "console_admitted",
         "Which of the ids a filter lets through."),
        ("bulk-plan", console_ops.bulk_plan, "console_bulk_plan",
         "What a lifecycle action would do to each session of a selection, under the run's "
         "key (an operator's; nothing is written)."),
    ):  # fmt: skip
        operation(app, "POST", f"{API}/console/{path}", operation_of, name=name,
                   summary=summary + " A read; a caller bound to workspaces reads one of them.",
                   body=question, body_required=True)  # fmt: skip
    operation(app, "POST", f"{API}/bulk/{{action}}", bulk_ops.run, name="bulk_run",
               summary="A lifecycle action on every session of a selection (the console's "
               "marks), each alone under the lifecycle rules, as the caller (an operator's; the "
               "Idempotency-Key is the run's: a retry replays what was done).", errors=(409,),
               parameters=[schemas.idempotency(True)], body=question,
               body_required=True)  # fmt: skip
    app.add_api_route(
        f"{API}/bulk/{{action}}/progress",
        bulk_ops.run_with_progress,
        methods=["POST"],
        name="bulk_run_with_progress",
        summary="The same run as server-sent events: its progress after each transaction, the "
        "sessions each settled, then its outcome. A client that goes away stops the run (what "
        "it did stays; the same key again does the rest).",
        responses={
            **responses((), None, 409),
            200: {
                "description": "A text/event-stream: progress, items, then outcome (or problem).",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            },
        },
        openapi_extra={
            "parameters": [PATH_ID | {"name": "action"}, schemas.idempotency(True)],
            "requestBody": {"required": True,
                            "content": {"application/json": {"schema": question}}},
        },
    )  # fmt: skip
