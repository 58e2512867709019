"""Command palette entries from the console's current state: "Pause sess-42", "Mark sess-42",
"Open sess-7"."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from roundtable_console.screens.session.actions import ScreenCommand, SessionActionScreen
from roundtable_console.store.safety.display import one_line

# Help texts are parsed as markup by the palette, so they never carry store data.
ACTION_HELP: dict[str, str] = {
    "heartbeat": "Record an operator heartbeat for the selected session",
    "pause": "Pause the selected session",
    "stop": "Stop the selected session (asks first)",
    "resume": "Resume the selected session (asks first)",
    "terminate": "Terminate the selected session (shows the impact first)",
}
LAUNCH_HELP = "Resume the selected session, then start its agent (shows the argv first)"
MAX_OPEN_ENTRIES = 200

Command = ScreenCommand


def session_commands(screen: object) -> list[Command]:
    if not isinstance(screen, SessionActionScreen):
        return []
    found: list[Command] = []
    session = screen.selected_session()
    if session is not None:
        for action in screen.allowed_actions():
            name = f"{action.capitalize()} {one_line(session.id, 60)}"
            found.append((name, partial(screen.do_lifecycle_action, action), ACTION_HELP[action]))
        if screen.check_action("launch", ()):
            name = f"Resume and launch {one_line(session.id, 60)}"
            found.append((name, screen.action_launch, LAUNCH_HELP))
    found.extend(screen.screen_commands())
    for other in screen.known_sessions()[:MAX_OPEN_ENTRIES]:
        found.append(
            (
                f"Open {one_line(other.id, 60)}",
                partial(screen.open_detail, other.id),
                "Show the session's fields, metadata and history",
            )
        )
    return found


class SessionCommands(Provider):
    """Lifecycle actions for the selected session, and a way to open any session on screen."""

    async def discover(self) -> Hits:
        for name, callback, help_text in session_commands(self.screen):
            # Content(...) is plain text: session ids are never read as markup.
            yield DiscoveryHit(Content(name), callback, text=name, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in session_commands(self.screen):
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, Content(name), callback, text=name, help=help_text)
