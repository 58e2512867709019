"""``roundtable tokens``: the identities of ``roundtable serve`` (``store.access.tokens``)."""

from __future__ import annotations

import json

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_invocation

TOKENS_HELP = """The bearer tokens roundtable serve accepts. Each has a name (the actor recorded
for what it does), a role and optionally the workspaces it reaches. The store keeps only a
token's SHA-256: a token is shown once, when it is made. While the store holds no token at all,
the server answers as the reference with none (header mode, loopback only)."""


@click.group("tokens", help=TOKENS_HELP)
def tokens_group() -> None:
    pass


@tokens_group.command("create", help="Make a token and print it once (the store keeps its hash).")
@click.option("--name", required=True, metavar="NAME", help="Its name: the actor it records.")
@click.option(
    "--role",
    required=True,
    type=click.Choice(["viewer", "operator", "agent", "host"]),
    help="viewer reads; operator acts as a human; agent writes only its agent's sessions; "
    "host connects the machine of its name (roundtable host run) and nothing else.",
)
@click.option("--workspace", "workspaces", multiple=True, metavar="W", help="Only these (repeat).")
@click.option("--agent", "agent_id", metavar="A", help="The agent an agent token acts for.")
@click.option("--expires", metavar="DURATION", help="Expire after this long: 30d, 12h, 2w …")
@with_invocation
def create_command(
    inv: Invocation,
    name: str,
    role: str,
    workspaces: tuple[str, ...],
    agent_id: str | None,
    expires: str | None,
) -> None:
    from roundtable_console.store.access.tokens import create_token
    from roundtable_console.store.writes.retention import parse_duration

    lifetime = None
    if expires is not None:
        lifetime = parse_duration(expires)
        if lifetime is None:
            raise click.BadParameter(
                f"{expires!r} is not a duration: a whole number above 0 and s, m, h, d or w.",
                param_hint="'--expires'",
            )
    with inv.store() as store:
        made = create_token(
            store=store,
            name=name,
            role=role,
            workspaces=workspaces,
            agent_id=agent_id,
            expires_in=lifetime,
            clock=inv.clock,
        )
    if inv.json_mode:
        # Not emit_json: its redaction would hide the one value this prints (under "token").
        click.echo(json.dumps(made.to_json()))
        return
    click.echo(made.token)
    reach = ", ".join(made.record.workspaces) if made.record.workspaces else "every workspace"
    until = f", until {made.record.expires_at}" if made.record.expires_at else ""
    acts = f" for agent {made.record.agent_id}" if made.record.agent_id else ""
    output.echo_text(
        f"Token {made.record.name!r} ({made.record.role}{acts}; {reach}{until}). It is shown "
        "this once: the store keeps only its hash.",
        err=True,
    )


@tokens_group.command("list", help="Every token: name, role, reach, state (never the token).")
@with_invocation
def list_command(inv: Invocation) -> None:
    from roundtable_console.store.access.tokens import list_tokens

    with inv.store() as store:
        records = list_tokens(store=store)
    now = inv.clock
    if inv.json_mode:
        output.emit_json({"items": [record.to_json(now) for record in records]})
        return
    rows = [
        (
            record.name,
            record.role,
            record.agent_id or "",
            ", ".join(record.workspaces) if record.workspaces else "all",
            record.state(now),
            record.expires_at or "",
        )
        for record in records
    ]
    table = output.Table(("name", "role", "agent", "workspaces", "state", "expires"))
    table.write(rows)
    table.finish("No token: roundtable serve answers in header mode (loopback only).")


@tokens_group.command("revoke", help="Revoke a token at once, on every server of the store.")
@click.option("--name", required=True, metavar="NAME")
@with_invocation
def revoke_command(inv: Invocation, name: str) -> None:
    from roundtable_console.store.access.tokens import revoke_token

    with inv.store() as store:
        record = revoke_token(store=store, name=name, clock=inv.clock)
    if inv.json_mode:
        output.emit_json(record.to_json(inv.clock))
        return
    click.echo(f"Revoked {output.cell(record.name)} at {record.revoked_at}.")


@tokens_group.command(
    "devices", help="The device sign-ins that hold: installed apps kept signed in while used."
)
@click.option("--token", "token", metavar="NAME", help="Only this token's.")
@with_invocation
def devices_command(inv: Invocation, token: str | None) -> None:
    from roundtable_console.store.access.devices import list_devices

    with inv.store() as store:
        found = list_devices(store=store, token=token, clock=inv.clock)
    if inv.json_mode:
        output.emit_json({"items": [device.to_json() for device in found]})
        return
    rows = [
        (device.id, device.name, device.token, device.last_used_at, device.expires_at)
        for device in found
    ]
    table = output.Table(("id", "device", "token", "last used", "signed in until"))
    table.write(rows)
    table.finish("No device is kept signed in: an installed app signs in as one.")


@tokens_group.command(
    "revoke-device", help="End a device sign-in at once, on every server; the device is told so."
)
@click.argument("device_id", metavar="DEVICE_ID")
@with_invocation
def revoke_device_command(inv: Invocation, device_id: str) -> None:
    from roundtable_console.store.access.devices import revoke_device

    with inv.store() as store:
        gone = revoke_device(store=store, device_id=device_id, clock=inv.clock)
    if inv.json_mode:
        output.emit_json(gone.to_json())
        return
    name, token = output.cell(gone.name), output.cell(gone.token)
    click.echo(f"Revoked the sign-in of {name} ({gone.id}, token {token}).")
