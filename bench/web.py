"""The web console measured (issue 21 point 7), ratios against floors taken in the same run.

- the sessions page's first load, signed in as an operator, at 1,000,000 sessions against 10:
  on the server (``GET /sessions`` over HTTP, the whole page) and in Debian's Chromium (the
  navigation's load event, from its own timing), and what a first visit weighs (the page, its
  stylesheet, script and icon);
- a heartbeat (written to the store as an agent's CLI writes it) -> its row read again in an
  open page (the 1,000,000-session store);
- 20 browser pages open on one server, each following its live stream, under bench/serve.py's
  fleet load (100 agents with their own tokens, keep-alive): the beat p99 at 200 beats/s and the
  throughput at saturation (``wrk``) with the pages open, against the same with none open and
  against the route's store functions called in-process; no beat lost; and the server's CPU
  time with the pages open against none. The three are taken in turns, in three rounds of a
  third of the load's length each (medians of the rounds' rates, the p99 of all their beats):
  this shared machine's speed drifts by a third over minutes.

The browsers stand for the operators' own machines: Chromium and Playwright's driver run on half
of this machine's cores, the server, the fleet's load and ``wrk`` on the other half, in every
run alike (on a machine of two cores, twenty pages' rendering would otherwise take the server's
CPU, which no deployment does).

Usage: ``python bench/web.py`` (the issue's sizes: 1,000,000 sessions, 30 s loads, SQLite);
``--quick`` (a smoke run for CI); ``--big N``, ``--seconds S``. Needs Chromium and ``wrk``
(the test suite brings both as it starts).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

import httpx  # noqa: E402
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright  # noqa: E402

from bench.figures import Figure, percentile, print_table  # noqa: E402
from bench.serve import (  # noqa: E402
    P99_LIMIT,
    SATURATION_LIMIT,
    beat_rows,
    fleet,
    in_process_rates,
    paced_load,
    page_store,
    wrk_saturation,
)
from roundtable_console.api.web.reads import FIRST_PAGE_SIZE  # noqa: E402
from roundtable_console.store.access.tokens import create_token  # noqa: E402
from roundtable_console.store.db.database import Store, open_store  # noqa: E402
from roundtable_console.store.writes import agent_writes  # noqa: E402
from tests.serve_support import serving  # noqa: E402

FIRST_LOAD_LIMIT = 1.2
ROW_LIMIT = 1.0
WEIGHT_LIMIT_KB = 200.0
PAGES_OPEN = 20
COOKIE = "roundtable_web"


def operator_token(url: str, name: str = "bench-web") -> str:
    store = open_store(url)
    try:
        return create_token(store=store, name=name, role="operator").token
    finally:
        store.dispose()


def signed_in_cookie(base: str, token: str) -> str:
    with httpx.Client(timeout=30) as client:
        answer = client.post(f"{base}/sign-in", data={"token": token, "next": "/sessions"})
        assert answer.status_code in (200, 303), answer.text
        value = client.cookies.get(COOKIE)
    assert value, "the sign-in set no cookie"
    return value


Site = tuple[str, str]  # a server's base URL and a signed-in cookie for it


def server_load_times(sites: list[Site], repeats: int) -> list[float]:
    """Median seconds of ``GET /sessions`` (the whole page, signed in) on each site, the sites
    asked in turns (a burst of load from elsewhere on this shared machine falls on all)."""
    clients = [httpx.Client(timeout=60, cookies={COOKIE: cookie}) for _, cookie in sites]
    times: list[list[float]] = [[] for _ in sites]
    try:
        for round_number in range(3 + repeats):
            for index, ((base, _), client) in enumerate(zip(sites, clients, strict=True)):
                began = time.perf_counter()
                assert client.get(f"{base}/sessions").status_code == 200
                if round_number >= 3:  # the first three warm the server up
                    times[index].append(time.perf_counter() - began)
    finally:
        for client in clients:
            client.close()
    return [statistics.median(each) for each in times]


def browser_context(browser: Browser, base: str, cookie: str) -> BrowserContext:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_cookies([{"name": COOKIE, "value": cookie, "url": base}])
    return context


def browser_load_times(
    browser: Browser, sites: list[Site], repeats: int
) -> tuple[list[float], list[float]]:
    """Median seconds to the load event of the sessions page on each site, in turns (its
    assets cached after the first, as an operator's browser holds them), and each first
    visit's weight in kB."""
    contexts = [browser_context(browser, base, cookie) for base, cookie in sites]
    pages = [context.new_page() for context in contexts]
    weights = []
    for (base, _), page in zip(sites, pages, strict=True):
        page.goto(f"{base}/sessions", wait_until="load")
        weights.append(
            page.evaluate(
                """() => [...performance.getEntriesByType("navigation"),
                          ...performance.getEntriesByType("resource")]
                         .reduce((sum, entry) => sum + (entry.encodedBodySize || 0), 0)"""
            )
            / 1000
        )
    times: list[list[float]] = [[] for _ in sites]
    for _ in range(repeats):
        for index, ((base, _), page) in enumerate(zip(sites, pages, strict=True)):
            page.goto(f"{base}/sessions", wait_until="load")
            times[index].append(
                page.evaluate('() => performance.getEntriesByType("navigation")[0].loadEventEnd')
                / 1000
            )
    for context in contexts:
        context.close()
    return [statistics.median(each) for each in times], weights


def bench_first_load(directory: Path, big: int, repeats: int, browser: Browser) -> list[Figure]:
    """The first load at ``big`` sessions against 10 (the issue's floor: a page of 10 rows, not
    the first page's FIRST_PAGE_SIZE) and against a store that fills the first page (the same
    page: only the store's size differs), the three servers asked in turns; and a heartbeat ->
    its row, on ``big``."""
    label = f"{big:,} sessions"
    small_sizes = (10, FIRST_PAGE_SIZE)
    urls = [page_store(directory, big, one_workspace=False)]
    urls += [page_store(directory, size, one_workspace=True) for size in small_sizes]
    with ExitStack() as servers:
        served = [
            servers.enter_context(serving(url, directory / f"home-{index}"))
            for index, url in enumerate(urls)
        ]
        sites = [
            (server.url, signed_in_cookie(server.url, operator_token(url)))
            for server, url in zip(served, urls, strict=True)
        ]
        on_server = server_load_times(sites, repeats)
        in_browser, weights = browser_load_times(browser, sites, repeats)
        rows = row_update_times(browser, *sites[0], urls[0], 10)
    figures: list[Figure] = []
    for index, small_size in enumerate(small_sizes, start=1):
        floor = f"the same, {small_size} sessions"
        figures += [
            Figure(f"sessions page, server, first load ({label})", on_server[0], floor,
                   on_server[index], FIRST_LOAD_LIMIT),
            Figure(f"sessions page, Chromium load event ({label})", in_browser[0], floor,
                   in_browser[index], FIRST_LOAD_LIMIT),
        ]  # fmt: skip
    figures += [
        Figure(f"sessions page, first visit's weight ({label})", weights[0],
               limit=WEIGHT_LIMIT_KB, unit=" kB", absolute=True),
        Figure(f"heartbeat -> its row in the browser, median of 10 ({label})",
               statistics.median(rows)),
        Figure(f"heartbeat -> its row in the browser, max of 10 ({label})", max(rows),
               limit=ROW_LIMIT),
    ]  # fmt: skip
    return figures


def row_update_times(
    browser: Browser, base: str, cookie: str, url: str, rounds: int
) -> list[float]:
    """Seconds from a heartbeat's commit to its row read again in an open sessions page."""
    context = browser_context(browser, base, cookie)
    page = context.new_page()
    page.goto(f"{base}/sessions")
    page.wait_for_selector("#live-state[data-state=live]")
    session_id = page.locator("tr.row").first.get_attribute("data-session")
    assert session_id
    store = open_store(url)
    took = []
    try:
        for _round in range(rounds):
            page.evaluate(
                "id => { document.querySelector(`tr.row[data-session='${id}']`).dataset.old = 1 }",
                session_id,
            )
            began = time.monotonic()
            with store.write() as db:
                agent_writes.heartbeat(db=db, session_id=session_id)
            page.wait_for_function(
                "id => !document.querySelector(`tr.row[data-session='${id}']`).dataset.old",
                arg=session_id,
                timeout=10_000,
            )
            took.append(time.monotonic() - began)
            time.sleep(0.2)
    finally:
        store.dispose()
        context.close()
    return took


@contextmanager
def open_pages(browser: Browser, base: str, cookie: str, count: int) -> Iterator[list[Page]]:
    """``count`` sessions pages following their live streams, each in a context of its own (a
    browser holds at most six connections a host per context)."""
    contexts = [browser_context(browser, base, cookie) for _ in range(count)]
    pages = []
    try:
        for context in contexts:
            page = context.new_page()
            page.goto(f"{base}/sessions")
            pages.append(page)
        for page in pages:
            page.wait_for_selector("#live-state[data-state=live]", timeout=30_000)
        time.sleep(1.0)  # what the pages' first load set going has settled
        yield pages
    finally:
        for context in contexts:
            context.close()


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Loads:
    """What the fleet's loads of some rounds gave: the saturation rates, the paced beats'
    latencies, the beats acknowledged, those not written (each round's own: a beat wrk left in
    flight, written unacknowledged, hides no loss of another round), those refused, and the
    server's CPU seconds a second during the paced beats."""

    rates: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    acknowledged: int = 0
    lost: int = 0
    refused: int = 0
    cpu: list[float] = field(default_factory=list)

    def run(self, base: str, pid: int, pairs: Path, seconds: float, store: Store) -> None:
        """One round: ``wrk`` at saturation, then the paced load, on the server ``pid``."""
        before = beat_rows(store)
        rate, acknowledged = wrk_saturation(base, pairs, seconds, pairs.parent)
        began = cpu_seconds(pid)
        latencies, ok, bad = paced_load(base, pairs, seconds)
        self.cpu.append((cpu_seconds(pid) - began) / seconds)
        time.sleep(1.0)  # beats in flight when wrk stopped are written by now
        written = beat_rows(store) - before
        self.rates.append(rate)
        self.latencies += latencies
        self.acknowledged += acknowledged + ok
        self.lost += max(acknowledged + ok - written, 0)
        self.refused += bad


def bench_fleet_with_pages(
    directory: Path, seconds: float, beats: int, browser: Browser, rounds: int
) -> list[Figure]:
    """The fleet's load with no page open and with ``PAGES_OPEN``, against the route's store
    functions in-process, in ``rounds`` rounds of all three in turns (a burst of load from
    elsewhere on this shared machine falls on all of them): the medians of the rounds' rates,
    the p99 of all their paced beats."""
    url = f"sqlite:///{directory / 'beats.db'}"
    pairs = directory / "pairs.txt"
    store = fleet(url, pairs)
    tokens = [line.split()[0] for line in pairs.read_text().splitlines()]
    token = create_token(store=store, name="bench-web", role="operator").token
    floors: list[float] = []
    alone, opened = Loads(), Loads()
    not_live = 0
    share = seconds / rounds
    try:
        with serving(url, directory / "home-beats") as served:
            cookie = signed_in_cookie(served.url, token)
            pid = served.process.pid
            for _round in range(rounds):
                floors.append(in_process_rates(store, tokens, beats // rounds)[0])
                alone.run(served.url, pid, pairs, share, store)
                with open_pages(browser, served.url, cookie, PAGES_OPEN) as pages:
                    opened.run(served.url, pid, pairs, share, store)
                    states = [page.locator("#live-state").get_attribute("data-state")
                              for page in pages]  # fmt: skip
                    not_live = max(not_live, sum(1 for state in states if state != "live"))
    finally:
        store.dispose()
    where = f"{PAGES_OPEN} pages open"
    p99 = percentile(opened.latencies, 0.99)
    rate, alone_rate, floor = (statistics.median(each) for each in (opened.rates, alone.rates,
                                                                    floors))  # fmt: skip
    return [
        Figure(f"heartbeat p99 at 200/s, 100 clients, {where}", p99,
               "the same, no page open", percentile(alone.latencies, 0.99), None),
        Figure(f"heartbeat p99 at 200/s, 100 clients, {where}", p99, limit=P99_LIMIT),
        Figure(f"heartbeats over HTTP at saturation, {where}", 1 / rate,
               "the same, no page open", 1 / alone_rate, None, rate=True),
        Figure(f"heartbeats over HTTP at saturation, {where}", 1 / rate,
               "the route's store functions in-process", 1 / floor, SATURATION_LIMIT,
               rate=True),
        Figure(f"beats lost of {opened.acknowledged:,} acknowledged, {where}", float(opened.lost),
               limit=0.5, unit=" beats", absolute=True),
        Figure(f"beats lost of {alone.acknowledged:,} acknowledged, no page open",
               float(alone.lost), limit=0.5, unit=" beats", absolute=True),
        Figure(f"beats refused at 200/s, {where}", float(opened.refused), limit=0.5,
               unit=" beats", absolute=True),
        Figure(f"server CPU at 200 beats/s, {where}", statistics.mean(opened.cpu),
               "the same, no page open", statistics.mean(alone.cpu), None, unit=" cpu-s/s"),
        Figure(f"pages not live after a load, of {PAGES_OPEN} (the most of {rounds} rounds)",
               float(not_live), limit=0.5, unit=" pages", absolute=True),
    ]  # fmt: skip


def split_cores() -> tuple[set[int], set[int]]:
    """The cores for the browsers and for the server: halves of this process's (one core:
    the same one for both)."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return set(cores), set(cores)
    half = len(cores) // 2
    return set(cores[half:]), set(cores[:half])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (CI)")
    parser.add_argument("--big", type=int, help="sessions in the large store (1,000,000)")
    parser.add_argument(
        "--seconds", type=float, help="each load's length, over all its rounds (30)"
    )
    parser.add_argument(
        "--skip-fleet", action="store_true", help="leave out the 20 pages under the fleet load"
    )
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    big = args.big or (5_000 if args.quick else 1_000_000)
    seconds = args.seconds or (2.0 if args.quick else 30.0)
    repeats = 5 if args.quick else 30
    beats = 300 if args.quick else 3000
    rounds = 1 if args.quick else 3
    for needed in ("wrk",):
        if shutil.which(needed) is None:
            print(f"web.py needs {needed} (apt-get install {needed})", file=sys.stderr)
            return 2
    figures: list[Figure] = []
    browser_cores, server_cores = split_cores()
    with tempfile.TemporaryDirectory(prefix="rt-web-bench-") as scratch:
        directory = Path(scratch)
        os.sched_setaffinity(0, browser_cores)  # Playwright's driver and Chromium inherit it
        playwright = sync_playwright().start()
        browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        os.sched_setaffinity(0, server_cores)  # the servers, wrk and the load's threads
        try:
            figures += bench_first_load(directory, big, repeats, browser)
            if not args.skip_fleet:
                figures += bench_fleet_with_pages(directory, seconds, beats, browser, rounds)
        finally:
            browser.close()
            playwright.stop()
    print(f"browser cores {sorted(browser_cores)}, server cores {sorted(server_cores)}")
    print_table(figures)
    print(json.dumps({"missed": [f.name for f in figures if f.verdict() == "MISS"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
