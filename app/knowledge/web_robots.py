"""robots.txt for a web import: read once per site (scheme, host and port) and asked before every request.

The rules come from ``urllib.robotparser``; what a missing or broken robots.txt means follows RFC 9309: a 4xx
answer (none there) allows everything, while a server error, a timeout or a refused address disallows the whole
site for this import, since the site may have rules it could not deliver. A robots.txt over ``MAX_ROBOTS_BYTES``
is read as far as the limit, as RFC 9309 allows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from urllib.robotparser import RobotFileParser

import httpx

# RFC 9309 asks crawlers to read at least 500 KiB of a robots.txt.
MAX_ROBOTS_BYTES = 500 * 1024


@dataclass(frozen=True)
class RobotsAnswer:
    """What asking a site for its robots.txt gave."""

    status: int | None  # None when no answer came: a timeout, a refused address, a redirect off-site
    body: bytes = b""
    problem: str = ""  # why there was no answer, for the report
    refused: bool = False  # the site's address may not be reached at all: the problem is the page's too


class RobotsRules:
    """The robots.txt of each site met during one import, fetched by ``fetch_robots`` on first use."""

    def __init__(self, fetch_robots: Callable[[httpx.URL], RobotsAnswer], *, agent: str) -> None:
        self._fetch_robots = fetch_robots
        self._agent = agent
        self._sites: dict[str, RobotFileParser | str] = {}  # site -> its rules, or why none could be read
        self._site_locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def refusal(self, url: httpx.URL) -> str | None:
        """Why memdesk may not fetch ``url``, or None when it may."""
        rules = self._rules(url)
        if isinstance(rules, str):
            return rules
        if not rules.can_fetch(self._agent, str(url)):
            return f"robots.txt of {site_of(url)} does not allow memdesk to read this page"
        return None

    def _rules(self, url: httpx.URL) -> RobotFileParser | str:
        site = site_of(url)
        with self._lock:
            site_lock = self._site_locks.setdefault(site, threading.Lock())
        # Pages of one site wait for its one robots.txt request instead of each sending their own.
        with site_lock:
            if site not in self._sites:
                self._sites[site] = self._read(url.copy_with(path="/robots.txt", query=None, fragment=None))
            return self._sites[site]

    def _read(self, robots_url: httpx.URL) -> RobotFileParser | str:
        answer = self._fetch_robots(robots_url)
        if answer.refused:
            return answer.problem
        parser = RobotFileParser(str(robots_url))
        if answer.status == 200:
            parser.parse(answer.body[:MAX_ROBOTS_BYTES].decode("utf-8", errors="replace").splitlines())
        elif answer.status is not None and 400 <= answer.status < 500:
            parser.parse([])  # no robots.txt: everything is allowed
        else:
            problem = answer.problem or f"it answered {answer.status}"
            return f"robots.txt of {site_of(robots_url)} could not be read, so the site is not read either ({problem})"
        return parser


def site_of(url: httpx.URL) -> str:
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}"
