"""Regenerate the README's pictures of the web console: the sessions list, the preview of an
action on a selection, and a session, at
1280x800 and at a phone's 390x844, in Debian's Chromium (headless, through Playwright).

    python docs/web_screenshots.py [--chromium /usr/bin/chromium]

The demo store is seeded in a temporary directory, an operator token made, and a real
``roundtable serve`` started on a free loopback port; the pictures are taken signed in.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from roundtable_console.store.access.tokens import create_token  # noqa: E402
from roundtable_console.store.db.database import open_store  # noqa: E402
from roundtable_console.store.writes.demo import seed_demo  # noqa: E402
from tests.serve_support import serving  # noqa: E402

DOCS = Path(__file__).parent
SIZES = {"": {"width": 1280, "height": 800}, "-phone": {"width": 390, "height": 844}}
SESSION = "sess-00002"  # the demo's Claude Code session asking a permission


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        url = f"sqlite:///{directory / 'demo.db'}"
        store = open_store(url)
        with store.write() as db:
            seed_demo(db=db, agent_home=directory / "demo-agents")
        token = create_token(store=store, name="olivia", role="operator").token
        store.dispose()
        with serving(url, directory / "home") as served, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=options.chromium)
            for suffix, size in SIZES.items():
                page = browser.new_context(viewport=size, color_scheme="light").new_page()
                page.goto(served.url + "/sign-in")
                page.fill("#token", token)
                page.click("button[type=submit]")
                page.wait_for_url("**/sessions")
                page.locator("#live-state[data-state=live]").wait_for()
                page.screenshot(path=str(DOCS / f"web-sessions{suffix}.png"))
                for box in page.locator("input.mark").all()[:4]:
                    box.check()
                page.locator("#bulk-bar [data-bulk=pause]").click()
                page.locator("#dialog .plan-head").wait_for()
                page.screenshot(path=str(DOCS / f"web-bulk{suffix}.png"))
                page.locator("#dialog-cancel").click()
                page.goto(f"{served.url}/sessions/{SESSION}")
                page.locator("#live-state[data-state=live]").wait_for()
                page.screenshot(path=str(DOCS / f"web-session{suffix}.png"))
                page.context.close()
            browser.close()
    for name in sorted(DOCS.glob("web-*.png")):
        print(name.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
