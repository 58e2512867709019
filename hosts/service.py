"""The service that keeps a host running: a systemd user unit (Linux) or a launchd agent
(macOS), printed by ``roundtable host service`` for the operator to install. The token is never
written into it: the unit reads it from the variable it names, set in a file of the user's
(systemd's ``EnvironmentFile``) or in launchd's environment."""

from __future__ import annotations

import shlex
from xml.sax.saxutils import escape

LABEL = "dev.roundtable.host"


def systemd_unit(argv: list[str], *, token_env: str | None) -> str:
    environment = (
        f"# The token: {token_env}=… in this file (chmod 600), never in the unit.\n"
        "EnvironmentFile=%h/.config/roundtable/host.env\n"
        if token_env
        else ""
    )
    return (
        "# ~/.config/systemd/user/roundtable-host.service\n"
        "# systemctl --user daemon-reload && systemctl --user enable --now roundtable-host\n"
        "# (loginctl enable-linger $USER keeps it running while you are logged out)\n"
        "[Unit]\n"
        "Description=Roundtable host: this machine's agents in the console\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n"
        "\n"
        "[Service]\n"
        f"{environment}"
        f"ExecStart={shlex.join(argv)}\n"
        "Restart=on-failure\n"
        "RestartSec=10\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def launchd_plist(argv: list[str], *, token_env: str | None) -> str:
    arguments = "".join(f"    <string>{escape(part)}</string>\n" for part in argv)
    environment = (
        "  <key>EnvironmentVariables</key>\n  <dict>\n"
        f"    <key>{escape(token_env)}</key>\n    <string>PASTE THE HOST TOKEN HERE</string>\n"
        "  </dict>\n"
        if token_env
        else ""
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<!-- ~/Library/LaunchAgents/{LABEL}.plist (chmod 600: it holds the token)\n"
        f"     launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/{LABEL}.plist -->\n"
        '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
        '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
        '<plist version="1.0">\n<dict>\n'
        f"  <key>Label</key>\n  <string>{LABEL}</string>\n"
        f"  <key>ProgramArguments</key>\n  <array>\n{arguments}  </array>\n"
        f"{environment}"
        "  <key>RunAtLoad</key>\n  <true/>\n"
        "  <key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n"
        "  </dict>\n"
        "</dict>\n</plist>\n"
    )
