"""A web import reaches only the public internet unless the team allows its own network: every request's address is
checked, however the URL spells it, and the connection goes to the address that was checked."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

import pytest

from app.knowledge.types import DocumentFailure, SourceDocument
from app.knowledge.web import WebLimits, read_urls
from app.knowledge.web_address import refusal
from app.settings import Settings
from tests.support.web_site import LocalSite, running_site

ARTICLE = "<h1>Gift cards</h1><p>Gift cards never expire and can be spent online and in every store.</p>"


@pytest.fixture
def site() -> Iterator[LocalSite]:
    with running_site() as site:
        site.page("/help/gift-cards", "Gift cards", ARTICLE)
        yield site


def only_failure(results: list[SourceDocument | DocumentFailure]) -> DocumentFailure:
    (result,) = results
    assert isinstance(result, DocumentFailure)
    return result


def test_the_setting_is_off_by_default() -> None:
    assert Settings().knowledge_allow_private_urls is False
    assert WebLimits.from_settings(Settings()).allow_private is False
    assert WebLimits.from_settings(Settings(knowledge_allow_private_urls=True)).allow_private is True


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "[::1]",
        "[::ffff:127.0.0.1]",  # IPv4-mapped IPv6
        "2130706433",  # 127.0.0.1 written as one number
        "0.0.0.0",
    ],
)
def test_a_loopback_address_is_refused_however_it_is_written(site: LocalSite, host: str) -> None:
    port = site.base_url.rsplit(":", 1)[1]

    failure = only_failure(list(read_urls([f"http://{host}:{port}/help/gift-cards"])))

    assert failure.reason.startswith("refused: ")
    assert "MEMDESK_KNOWLEDGE_ALLOW_PRIVATE_URLS" in failure.reason
    assert site.requests == []  # not even robots.txt was asked for


@pytest.mark.parametrize(
    ("url", "phrase"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),  # a cloud's metadata service
        ("http://10.0.0.5/wiki", "private network"),
        ("http://[fd00::1]/wiki", "private network"),
        ("http://[fe80::1]/", "link-local"),
        ("http://224.0.0.1/", "multicast"),
        ("http://100.64.0.1/", "not a public internet address"),  # carrier-grade NAT
    ],
)
def test_an_internal_address_is_refused_before_anything_is_sent(url: str, phrase: str) -> None:
    failure = only_failure(list(read_urls([url], limits=WebLimits(timeout_s=0.5))))

    assert failure.reason.startswith("refused: ") and phrase in failure.reason


def test_a_name_resolving_to_an_internal_address_is_refused_naming_the_address() -> None:
    def resolve(host: str, port: int) -> list[str]:
        return {"wiki.acme.test": ["10.0.0.5"], "mixed.acme.test": ["93.184.215.14", "192.168.1.10"]}[host]

    results = list(read_urls(["http://wiki.acme.test/a", "https://mixed.acme.test/b"], resolve=resolve))

    reasons = {result.locator: result.reason for result in results if isinstance(result, DocumentFailure)}
    assert "wiki.acme.test (10.0.0.5) is a private network address" in reasons["http://wiki.acme.test/a"]
    # One internal answer among public ones is enough to refuse: the resolver may hand out either.
    assert "mixed.acme.test (192.168.1.10)" in reasons["https://mixed.acme.test/b"]


def test_the_connection_goes_to_the_address_that_was_checked(site: LocalSite) -> None:
    """help.acme.test exists in no DNS: the page arrives only because the connection went to the checked answer."""
    port = site.base_url.rsplit(":", 1)[1]
    asked: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    url = f"http://help.acme.test:{port}/help/gift-cards"
    (document,) = read_urls([url], limits=WebLimits(allow_private=True), resolve=resolve)

    assert isinstance(document, SourceDocument) and document.title == "Gift cards"
    assert site.hosts == {f"help.acme.test:{port}"}  # the name travels in the Host header
    assert asked == ["help.acme.test", "help.acme.test"]  # robots.txt, then the page: each checked on its own


def test_with_private_addresses_allowed_the_intranet_is_imported(site: LocalSite) -> None:
    (document,) = read_urls([site.url("/help/gift-cards")], limits=WebLimits(allow_private=True))

    assert isinstance(document, SourceDocument)
    assert "never expire" in document.markdown


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("93.184.215.14", True),
        ("2606:4700:4700::1111", True),
        ("64:ff9b::5db8:d70e", True),  # NAT64 of a public address
        ("127.0.0.53", False),
        ("::1", False),
        ("::ffff:10.1.2.3", False),
        ("64:ff9b::a00:5", False),  # NAT64 of 10.0.0.5
        ("2002:c0a8:101::1", False),  # 6to4 of 192.168.1.1
        ("172.16.0.1", False),
        ("192.0.2.10", False),  # documentation range
        ("240.0.0.1", False),
        ("255.255.255.255", False),
        ("ff02::1", False),
    ],
)
def test_only_public_internet_addresses_pass(address: str, allowed: bool) -> None:
    assert (refusal(ipaddress.ip_address(address)) is None) is allowed
