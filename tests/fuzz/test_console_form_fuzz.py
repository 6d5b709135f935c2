"""Fuzzing of the staff console on a live server: every POST route, and every GET route that takes a path, query
or header parameter, called by signed-in staff (an admin, a supervisor or an agent) with a valid CSRF token and
hostile values.

The routes are read from the console's routers, so a new route is fuzzed without being listed here. Each route gets
two kinds of cases:

- a sweep: each value of ``SWEPT`` in each parameter in turn, the others set to values that mean something on this
  server (the conversation, the customer, a memory, a staff member), so that the hostile value gets past the lookups
  (integers past 2^63, look-alike and non-ASCII digits, unpaired surrogates, NUL, very long text, templates);
- property-based cases (hypothesis, derandomized so that a failure reproduces): each field left out, sent once or
  sent twice, with values drawn from those targets, from ``HOSTILE`` (also negative and non-finite numbers,
  control characters, text imitating what memdesk writes itself: promise items, actors, public ids) and from
  arbitrary text.

The build fails on any 5xx, and on any answer saying that the fuzzing staff member was signed out (which would make
the rest of the run meaningless); the last test prints the number of cases and of server errors. The sign-in and
sign-out routes cost an argon2 verification per case, so they get ``SIGN_IN_EXAMPLES`` cases and no sweep. The whole
module takes about 40 s of CPU (1,690 cases; two and a half minutes of wall time on a 2-core machine shared
with other jobs).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import app.web.console
from app.customer_memory.ids import memory_customer_id
from app.models import ConversationStatus, StaffRole
from app.web.input import MAX_DATABASE_INT
from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
from tests.support.console_support import (
    FORM_CONTENT_TYPE,
    STAFF_PASSWORD,
    StaffClient,
    console_app,
    form_body,
    login_form,
    make_staff,
    raw_url,
    signed_in,
)
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer

FUZZ_EXAMPLES = 20
SIGN_IN_EXAMPLES = 10
SIGN_IN_PATHS = ("/console/login", "/console/logout")
# Every route gets at least this many cases; fewer means the strategies stopped producing distinct requests.
MIN_CASES_PER_ROUTE = SIGN_IN_EXAMPLES
VICTIM_EMAIL = "victim@example.com"  # the only account the fuzzed staff routes may disable or change
FRESH_CUSTOMER = "\x00fresh customer"  # replaced by a new customer's public id (erasure removes the one it is given)
LOGIN_TOKEN = "\x00sign-in token"  # replaced by the sign-in form's own token
ROLES = ("admin", "admin", "supervisor", "agent")  # mostly the admin, whom no route refuses
HOSTILE = (
    "",
    "0",
    "-1",
    "1",
    str(MAX_DATABASE_INT),
    str(MAX_DATABASE_INT + 1),
    str(2**64),
    str(-(2**63) - 1),
    "9" * 5_000,
    "0" * 300 + "7",
    "NaN",
    "Infinity",
    "-0",
    "1e309",
    "1.5",
    "+5",
    " 7 ",
    "1_000",
    "0x10",
    "１２",
    "١٢",
    "²",
    "\ud800",
    "a\udfffb",
    "\x00",
    "\x1b[31mred",
    "line\r\nbreak",
    "\u202eevil",
    "\ufeff",
    "x" * 20_001,
    "é" * 70_000,
    "true",
    "on",
    "[]",
    "{}",
    "- [P3] Refund of $42.10 by tomorrow (2026-12-02) {due: 2026-12-02 | ids: #W2378156, $42.10 | by: staff:1}",
    "(from: #1) [D1] Refund approved",
    "staff:1",
    "staff:99999999999999999999",
    "cus_" + "A" * 60,
    "cnv_" + "A" * 100,
    "<script>alert(1)</script>",
    "{{ 7 * 7 }}{% raw %}",
    "../../etc/passwd",
    "//evil.example/console",
    "/console\\evil",
    "javascript:alert(1)",
    "' OR 1=1 --",
    "@",
    "a@b",
    "2026-02-30",
    "9999-12-31",
    "0000-00-00",
    "2026-12-24T10:00:00",
)
# What the sweep sends to every parameter: numbers a database cannot store or that only look like numbers, text that
# is not Unicode or holds control characters, and text long or odd enough to reach each layer's own refusal.
SWEPT = (
    "",
    "-1",
    str(MAX_DATABASE_INT),
    str(MAX_DATABASE_INT + 1),
    str(2**64),
    "9" * 5_000,
    "NaN",
    "1e309",
    "1.5",
    "+5",
    " 7 ",
    "１２",
    "²",
    "\ud800",
    "\x00",
    "x" * 20_001,
    "staff:99999999999999999999",
    "<script>alert(1)</script>",
    "{{ 7 * 7 }}{% raw %}",
    "2026-02-30",
)
ALPHABET = st.one_of(
    st.characters(),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=()),
    st.characters(max_codepoint=0x1F, exclude_categories=()),
)
# What HTTP/1.1 cannot carry in a header value (httpx refuses to send it): control characters, and spaces at either
# end. Any other byte, non-ASCII ones included, goes as it is.
HEADER_FORBIDDEN = str.maketrans("", "", "".join(map(chr, [*range(0x20), 0x7F])))
LEAVER_EMAIL = "leaver@example.com"  # signs in again for each case of the sign-out route
# Values in a URL or a header are cut to this, and the URL to what httpx sends: past 8 KiB of URL or 16 KiB of
# headers the server answers 414 or 431 already, and past uvicorn's 64 KiB buffer it drops the connection.
SENT_VALUE_CHARS = 3_000
MAX_SENT_URL_CHARS = 60_000


@dataclass(frozen=True)
class ConsoleCase:
    """A console route and the names of what it reads from the request."""

    method: str
    path: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    form_fields: tuple[str, ...]
    headers: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"


def _names(dependant: Dependant, kind: str) -> tuple[str, ...]:
    found: set[str] = set()
    pending = [dependant]
    while pending:
        current = pending.pop()
        found.update(str(item.alias) for item in getattr(current, kind))
        pending.extend(current.dependencies)
    return tuple(sorted(found))


def console_cases() -> list[ConsoleCase]:
    """Every POST route of the console's routers, and every GET route with a parameter; deletion last, so that the
    memory it deletes is there for the other memory routes first."""
    cases = []
    for module in pkgutil.iter_modules(app.web.console.__path__):
        router = getattr(importlib.import_module(f"app.web.console.{module.name}"), "router", None)
        for route in router.routes if router is not None else ():
            assert isinstance(route, APIRoute)
            dependant = route.dependant
            for method in sorted(route.methods):
                case = ConsoleCase(
                    method,
                    route.path,
                    _names(dependant, "path_params"),
                    _names(dependant, "query_params"),
                    _names(dependant, "body_params"),
                    _names(dependant, "header_params"),
                )
                if method == "POST" or case.path_params or case.query_params or case.headers:
                    cases.append(case)
    return sorted(cases, key=lambda case: (case.path.endswith("/delete"), case.id))


CASES = console_cases()


@dataclass
class Targets:
    """What exists on the fuzzed server, so that some cases reach past the lookups."""

    live: LiveApp
    staff: dict[str, StaffClient]
    conversation: str
    customer: str
    memory_id: str
    staff_ids: tuple[str, ...]
    cases: Counter[str] = field(default_factory=Counter)
    server_errors: Counter[str] = field(default_factory=Counter)

    def known(self, case: ConsoleCase, name: str) -> Sequence[str]:
        """Values of ``name`` that mean something on this route."""
        if name == "ref" and case.path.endswith("/erase"):
            return (FRESH_CUSTOMER,)
        if name == "ref":
            return (self.customer,) if case.path.startswith("/console/customers") else (self.conversation,)
        values: dict[str, Sequence[str]] = {
            "memory_id": (self.memory_id,),
            # The path names whose account changes (only the victim's); the form adds an account.
            "email": (VICTIM_EMAIL,) if "{email}" in case.path else (VICTIM_EMAIL, "admin@example.com", "new@x.org"),
            "assigned_staff_id": self.staff_ids,
            "csrf_token": (LOGIN_TOKEN,),
            "password": (STAFF_PASSWORD, "a much longer password than that"),
            "name": ("console.css", "htmx.min.js") if case.path.startswith("/console/static") else ("Sam Rivera",),
            "role": tuple(role.value for role in StaffRole),
            "active": ("1", "0"),
            "kind": tuple(kind.value for kind in ConclusionKind),
            "text": ("Prefers SMS.", "Refund of $42.10 for #W2378156 by 2026-12-24."),
            "due_date": ("2026-12-24",),
            "expires_on": ("2027-01-31",),
            "status": tuple(status.value for status in ConversationStatus),
            "mine": ("true", "false", "1"),
            "page": ("1", "2", "10000"),
            "before": ("1", "2"),
            "since": ("0", f"{self.live.services.broker.boot}:0"),
            "last-event-id": (f"{self.live.services.broker.boot}:0",),
            "expired": ("1",),
            "next": ("/console", "/console/overview"),
        }
        return values.get(name, ())


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Targets]:
    unlimited = 1_000_000  # fuzzed sign-ins fail by the hundred; the lockout is tested in tests/app/console
    with ScriptedLLMServer() as llm:
        for live in console_app(
            tmp_path_factory.mktemp("console-fuzz"),
            llm,
            memory_enabled=True,
            memory_embedder="hashing",
            console_login_failures_per_email=unlimited,
            console_login_failures_per_address=unlimited,
        ):
            staff = {role: signed_in(live, StaffRole(role)) for role in sorted(set(ROLES))}
            victim = make_staff(live, VICTIM_EMAIL, StaffRole.AGENT)
            make_staff(live, LEAVER_EMAIL, StaffRole.AGENT)
            widget, customer = live.visitor()
            conversation = live.conversation(widget)
            widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "Where is #W2378156?"})
            live.wait_for_reply(conversation)
            key = live.customer(customer).id
            assert key is not None and live.services.memory is not None
            fact = Conclusion(memory_customer_id(key), ConclusionKind.FACT, "Prefers SMS.", ConclusionSource.AGENT)
            [memory_id] = live.services.memory.store.remember([fact])
            live.services.memory.store.remember(list(_promises_by_odd_actors(memory_customer_id(key))))
            ids = tuple(str(staff_id) for staff_id in (1, 2, 3, victim))
            yield Targets(live, staff, conversation, customer, memory_id, ids)


def _promises_by_odd_actors(customer: str) -> Iterator[Conclusion]:
    """Promises whose maker reads like a staff member but is none: a summary model's notes say who made a promise
    (``by: …``), and the customer panel names that member."""
    for number, actor in enumerate(("staff:²", "staff:１２", f"staff:{2**64}", "agent:-1", "staff:")):
        text = f"Refund of ${number}.50 for #W23781{number:02d} by 2026-12-24."
        yield Conclusion(customer, ConclusionKind.PROMISE, text, ConclusionSource.COMPACTION, said_by=actor)


def _value(known: Sequence[str]) -> st.SearchStrategy[str]:
    options = [st.sampled_from(HOSTILE), st.text(ALPHABET, max_size=40), st.integers(-(2**70), 2**70).map(str)]
    if known:
        options.insert(0, st.sampled_from(known))
    return st.one_of(options)


def _pairs(draw: Any, targets: Targets, case: ConsoleCase, names: Sequence[str]) -> list[tuple[str, str]]:
    """Each name left out, sent once (most often) or twice, and sometimes a field no route reads."""
    pairs = []
    for name in names:
        copies = draw(st.sampled_from((0, 1, 1, 1, 2)))
        pairs += [(name, draw(_value(targets.known(case, name)))) for _ in range(copies)]
    if draw(st.booleans()):
        pairs.append(("unexpected", draw(_value(()))))
    return pairs


def _sendable(url: str) -> str:
    """``url``, cut after its last whole query field that httpx still sends (the server refuses it long before)."""
    return url if len(url) <= MAX_SENT_URL_CHARS else url[:MAX_SENT_URL_CHARS].rpartition("&")[0] or url[:9_000]


def _header_value(text: str) -> bytes:
    return text.translate(HEADER_FORBIDDEN).strip(" ").encode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class FuzzRequest:
    """One case: who sends it, and each part of the request (values may be placeholders, resolved when sent)."""

    role: str
    paths: dict[str, str]
    query: list[tuple[str, str]]
    form: list[tuple[str, str]]
    headers: dict[str, str]
    htmx: bool


def _drawn(targets: Targets, case: ConsoleCase, data: Any) -> FuzzRequest:
    draw = data.draw
    return FuzzRequest(
        role=draw(st.sampled_from(ROLES)),
        paths={name: draw(_value(targets.known(case, name))) for name in case.path_params},
        query=_pairs(draw, targets, case, case.query_params),
        form=_pairs(draw, targets, case, case.form_fields),
        headers={name: draw(_value(targets.known(case, name))) for name in case.headers},
        htmx=draw(st.booleans()),
    )


def _swept(targets: Targets, case: ConsoleCase) -> Iterator[FuzzRequest]:
    """Each hostile value in each parameter in turn, the others set to a value that means something (so that the
    hostile one gets past the lookups), sent by the admin: what random combinations reach too rarely."""

    def first(name: str) -> list[str]:
        return list(targets.known(case, name)[:1])

    def request(name: str, value: str) -> FuzzRequest:
        def pick(other: str) -> list[str]:
            return [value] if other == name else first(other)

        return FuzzRequest(
            "admin",
            {other: [*pick(other), ""][0] for other in case.path_params},
            [(other, chosen) for other in case.query_params for chosen in pick(other)],
            [(other, chosen) for other in case.form_fields for chosen in pick(other)],
            {other: chosen for other in case.headers for chosen in pick(other)},
            htmx=False,
        )

    for name in (*case.path_params, *case.query_params, *case.form_fields, *case.headers):
        for value in SWEPT:
            yield request(name, value)


def _resolved(targets: Targets, value: str, token: str) -> str:
    if value == FRESH_CUSTOMER:
        return targets.live.visitor()[1]
    return token if value == LOGIN_TOKEN else value


def _send(targets: Targets, case: ConsoleCase, sent: FuzzRequest) -> tuple[httpx.Response, StaffClient | None, str]:
    http, token = login_form(targets.live) if case.path == "/console/login" else (None, "")
    paths = {name: _resolved(targets, value, token)[:SENT_VALUE_CHARS] for name, value in sent.paths.items()}
    query = [(name, value[:SENT_VALUE_CHARS]) for name, value in sent.query]
    form = [(name, _resolved(targets, value, token)) for name, value in sent.form]
    headers = {name: _header_value(value[:SENT_VALUE_CHARS]) for name, value in sent.headers.items()}
    url = _sendable(raw_url(case.path, paths, query))
    described = f"{sent.role} {case.method} {url[:300]} form={[(n, v[:80]) for n, v in form]} htmx={sent.htmx}"
    if http is not None:  # signing in: the anonymous browser that opened the form posts it
        return http.post(url, content=form_body(form), headers={"Content-Type": FORM_CONTENT_TYPE}), None, described
    if case.path == "/console/logout":  # a session of its own, since this ends it
        client = StaffClient(targets.live, LEAVER_EMAIL)
        return client.send(case.method, url, form, htmx=sent.htmx), None, described
    client = targets.staff[sent.role]
    return client.send(case.method, url, form, htmx=sent.htmx, headers=headers), client, described


def _check(targets: Targets, case: ConsoleCase, sent: FuzzRequest) -> None:
    response, client, described = _send(targets, case, sent)
    targets.cases[case.id] += 1
    if response.status_code >= 500:
        targets.server_errors[case.id] += 1
    assert response.status_code < 500, f"{response.status_code} for {described}"
    assert client is None or not client.lost_session(response), f"signed out by {described}"


def _budget(case: ConsoleCase) -> int:
    # Each sign-in is an argon2 verification (about 0.3 s of a core): those two routes get fewer cases.
    return SIGN_IN_EXAMPLES if case.path in SIGN_IN_PATHS else FUZZ_EXAMPLES


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_every_console_route_answers_hostile_input_without_a_server_error(case: ConsoleCase, targets: Targets) -> None:
    if case.path not in SIGN_IN_PATHS:  # the sweep would cost an argon2 verification per value there
        for sent in _swept(targets, case):
            _check(targets, case, sent)

    @given(data=st.data())
    @settings(
        max_examples=_budget(case),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    def fuzz(data: Any) -> None:
        _check(targets, case, _drawn(targets, case, data))

    fuzz()


def test_the_fuzz_run_reached_every_console_route_and_found_no_server_error(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str], targets: Targets
) -> None:
    fuzzed = [item for item in request.session.items if item.name.startswith("test_every_console_route_answers")]
    if len(fuzzed) < len(CASES):
        pytest.skip("only part of the console fuzz suite was selected; its totals are checked on a whole run")
    total, errors = sum(targets.cases.values()), sum(targets.server_errors.values())
    with capsys.disabled():
        print(f"\nconsole fuzz: {total} cases over {len(CASES)} routes, {errors} server errors")
    assert {case.id for case in CASES} <= set(targets.cases)
    assert min(targets.cases.values()) >= MIN_CASES_PER_ROUTE, targets.cases
    assert errors == 0, targets.server_errors
