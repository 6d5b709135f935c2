"""Importing from the web: pages and sitemaps of a real local site become documents; every kind of bad page becomes a
failure with its reason while the rest is read."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from app.knowledge.types import DocumentFailure, SourceDocument
from app.knowledge.web import WebLimits, read_urls
from tests.support.web_site import LocalSite, Route, running_site

# The site runs on 127.0.0.1, which the import refuses unless private addresses are allowed.
LIMITS = WebLimits(allow_private=True, timeout_s=5.0, deadline_s=10.0)

REFUND_ARTICLE = """
<h1>Refund policy</h1>
<p>We refund every order within 30 days of delivery. Start the return from your account page.</p>
<h2>Refund timing</h2>
<p>Refunds reach your card within 5 to 7 business days after the parcel arrives at our warehouse.</p>
"""


@pytest.fixture
def site() -> Iterator[LocalSite]:
    with running_site() as site:
        yield site


def documents(results: list[SourceDocument | DocumentFailure]) -> dict[str, SourceDocument]:
    return {result.locator: result for result in results if isinstance(result, SourceDocument)}


def failures(results: list[SourceDocument | DocumentFailure]) -> dict[str, str]:
    return {result.locator: result.reason for result in results if isinstance(result, DocumentFailure)}


def read(urls: list[str], limits: WebLimits = LIMITS) -> list[SourceDocument | DocumentFailure]:
    return list(read_urls(urls, limits=limits))


def test_a_sitemap_s_pages_become_documents_with_their_titles_headings_and_lastmod(site: LocalSite) -> None:
    refunds = site.page("/help/refunds", "Refunds | Acme Kitchen", REFUND_ARTICLE)
    shipping = site.page(
        "/help/shipping",
        "Shipping | Acme Kitchen",
        "<h1>Shipping</h1><p>Orders leave our warehouse within two working days, tracked from the first scan.</p>",
        head='<meta property="og:title" content="Shipping times">',
    )
    sitemap = site.sitemap("/sitemap.xml", [(refunds, "2026-11-20"), (shipping, "2026-11-21T09:30:00+01:00")])

    results = read([sitemap])

    assert failures(results) == {}
    found = documents(results)
    assert set(found) == {refunds, shipping}
    refund = found[refunds]
    assert refund.title == "Refunds | Acme Kitchen"
    assert refund.url == refunds
    assert "# Refund policy" in refund.markdown and "## Refund timing" in refund.markdown
    assert "5 to 7 business days" in refund.markdown
    assert "Privacy" not in refund.markdown and "Contact" not in refund.markdown  # the menus and footer stay out
    assert refund.updated_at == datetime(2026, 11, 20, tzinfo=UTC)
    assert found[shipping].title == "Shipping times"  # og:title first
    assert found[shipping].updated_at == datetime(2026, 11, 21, 8, 30, tzinfo=UTC)


def test_a_gzipped_sitemap_index_leads_to_its_sitemaps_pages(site: LocalSite) -> None:
    pages = [
        site.page(f"/help/{n}", f"Article {n}", f"<h1>Article {n}</h1><p>{'Useful words. ' * 20}</p>")
        for n in (1, 2, 3)
    ]
    first = site.sitemap("/sitemap-1.xml.gz", pages[:2], gzipped=True)
    second = site.sitemap("/sitemap-2.xml", pages[2:], content_type="text/xml")
    index = site.sitemap("/sitemap_index.xml", [first, second], index=True)

    results = read([index])

    assert failures(results) == {}
    assert set(documents(results)) == set(pages)


def test_a_sitemap_is_recognised_by_its_root_element_whatever_its_name_and_type(site: LocalSite) -> None:
    page = site.page("/faq", "FAQ", "<h1>FAQ</h1><p>Answers to what customers ask most about orders and returns.</p>")
    site.sitemap("/pages", [page], gzipped=True)
    site.routes["/pages"].content_type = "application/octet-stream"

    results = read([site.url("/pages")])

    assert set(documents(results)) == {page}


def test_a_url_listed_twice_is_fetched_once(site: LocalSite) -> None:
    page = site.page("/help/once", "Once", "<h1>Once</h1><p>One article listed by two sitemaps and given by hand.</p>")
    first = site.sitemap("/a.xml", [page])
    second = site.sitemap("/b.xml", [page, page + "#section"])

    results = read([first, second, page])

    assert list(documents(results)) == [page]
    assert site.requests.count("/help/once") == 1


def test_a_redirect_within_the_site_is_followed_and_the_final_address_identifies_the_page(site: LocalSite) -> None:
    final = site.page("/help/returns", "Returns", REFUND_ARTICLE)
    moved = site.redirect("/returns-old", "/help/returns", status=301)

    results = read([moved])

    assert list(documents(results)) == [final]
    assert documents(results)[final].url == final


def test_the_canonical_link_names_the_page_only_when_it_is_on_the_same_site(site: LocalSite) -> None:
    site.page("/p", "Warranty", REFUND_ARTICLE, head='<link rel="canonical" href="/help/warranty">')
    elsewhere = site.page(
        "/help/care", "Care", REFUND_ARTICLE, head='<link rel="canonical" href="https://mirror.example/care">'
    )

    results = read([site.url("/p?id=7"), elsewhere])

    assert set(documents(results)) == {site.url("/help/warranty"), elsewhere}


def test_a_redirect_off_site_fails_saying_where_it_went(site: LocalSite) -> None:
    elsewhere = site.url("/landing", host="localhost")
    away = site.redirect("/partner", elsewhere)
    kept = site.page("/help/kept", "Kept", REFUND_ARTICLE)

    results = read([away, kept])

    assert list(documents(results)) == [kept]
    reason = failures(results)[away]
    assert "off-site" in reason and elsewhere in reason
    assert "/landing" not in site.requests


def test_too_many_redirects_fail(site: LocalSite) -> None:
    for hop in range(8):
        site.redirect(f"/loop/{hop}", f"/loop/{hop + 1}")

    assert "more than 5 redirects" in failures(read([site.url("/loop/0")]))[site.url("/loop/0")]


def test_a_page_that_does_not_answer_in_time_fails_and_the_others_are_read(site: LocalSite) -> None:
    slow = site.page("/slow", "Slow", REFUND_ARTICLE, delay_s=3.0)
    quick = site.page("/quick", "Quick", REFUND_ARTICLE)

    results = read([slow, quick], WebLimits(allow_private=True, timeout_s=0.5))

    assert list(documents(results)) == [quick]
    assert "timed out after 0.5 s" in failures(results)[slow]


def test_a_page_that_trickles_in_past_the_deadline_fails_though_every_read_is_quick(site: LocalSite) -> None:
    trickle = site.page("/trickle", "Trickle", REFUND_ARTICLE * 4, drip_s=0.01)

    results = read([trickle], WebLimits(allow_private=True, timeout_s=2.0, deadline_s=1.0))

    assert "took longer than 1 s to download" in failures(results)[trickle]


def test_a_response_over_the_size_cap_is_not_read_past_the_cap(site: LocalSite) -> None:
    cap = 256 * 1024
    endless = site.text("/huge", b"<p>" + b"x" * (64 * 1024) + b"</p>", "text/html", repeat=2000)  # 128 MB
    declared = site.text("/declared", b"<p>" + b"y" * (2 * cap) + b"</p>", "text/html")
    small = site.page("/small", "Small", REFUND_ARTICLE)

    results = read([endless, declared, small], WebLimits(allow_private=True, max_document_bytes=cap))

    assert list(documents(results)) == [small]
    assert "over the 262,144-byte limit (stopped reading)" in failures(results)[endless]
    assert site.bytes_sent["/huge"] < 2000 * 64 * 1024 // 10  # the client hung up early
    assert f"is {2 * cap + 7:,} bytes, over the 262,144-byte limit" in failures(results)[declared]


def test_a_gzipped_response_is_capped_by_what_it_unpacks_to(site: LocalSite) -> None:
    cap = 256 * 1024
    bomb = gzip.compress(b"<html><body><p>" + b"z" * (50 * 1024 * 1024) + b"</p></body></html>")
    packed = site.text("/packed", bomb, "text/html", headers={"Content-Encoding": "gzip"})

    results = read([packed], WebLimits(allow_private=True, max_document_bytes=cap))

    assert len(bomb) < cap
    assert "over the 262,144-byte limit" in failures(results)[packed]


def test_robots_txt_is_obeyed_and_names_memdesk(site: LocalSite) -> None:
    site.robots("User-agent: *\nDisallow: /private/\n\nUser-agent: memdesk\nDisallow: /drafts/\n")
    public = site.page("/help/public", "Public", REFUND_ARTICLE)
    draft = site.page("/drafts/new-policy", "Draft", REFUND_ARTICLE)
    sitemap = site.sitemap("/sitemap.xml", [public, draft])

    results = read([sitemap])

    assert list(documents(results)) == [public]
    assert "robots.txt" in failures(results)[draft] and "does not allow memdesk" in failures(results)[draft]
    assert "/drafts/new-policy" not in site.requests
    assert site.requests.count("/robots.txt") == 1
    assert all(agent.startswith("memdesk/") for agent in site.user_agents)


def test_a_missing_robots_txt_allows_everything_and_a_broken_one_nothing(site: LocalSite) -> None:
    page = site.page("/help/a", "A", REFUND_ARTICLE)
    assert list(documents(read([page]))) == [page]  # /robots.txt answers 404

    with running_site() as broken:
        broken.routes["/robots.txt"] = Route(b"oops", "text/plain", status=503)
        other = broken.page("/help/b", "B", REFUND_ARTICLE)
        results = read([other])
        assert "robots.txt" in failures(results)[other] and "could not be read" in failures(results)[other]
        assert "/help/b" not in broken.requests


def test_requests_to_one_site_never_exceed_its_concurrency_limit(site: LocalSite) -> None:
    pages = [site.page(f"/help/{n}", f"Article {n}", REFUND_ARTICLE, delay_s=0.2) for n in range(10)]

    results = read([site.sitemap("/sitemap.xml", pages)], WebLimits(allow_private=True, concurrency_per_host=2))

    assert len(documents(results)) == 10
    assert site.most_in_flight == 2


def test_an_import_reads_at_most_the_page_limit_from_sitemaps(site: LocalSite) -> None:
    pages = [site.page(f"/help/{n}", f"Article {n}", REFUND_ARTICLE) for n in range(5)]
    sitemap = site.sitemap("/sitemap.xml", pages)

    results = read([sitemap], WebLimits(allow_private=True, max_pages=3))

    assert len(documents(results)) == 3
    assert "MEMDESK_KNOWLEDGE_MAX_PAGES" in failures(results)[sitemap]


def test_a_sitemap_listing_another_site_s_pages_does_not_fetch_them(site: LocalSite) -> None:
    own = site.page("/help/own", "Own", REFUND_ARTICLE)
    foreign = site.url("/help/own", host="localhost")
    results = read([site.sitemap("/sitemap.xml", [own, foreign])])

    assert list(documents(results)) == [own]
    assert "another site" in failures(results)[foreign]


def test_a_broken_sitemap_fails_clearly(site: LocalSite) -> None:
    broken = site.text("/sitemap.xml", b'<?xml version="1.0"?><urlset><url><loc>http://x', "application/xml")
    damaged = site.text("/sitemap.xml.gz", b"\x1f\x8b\x08\x00garbage", "application/gzip")
    feed = site.text("/feed.xml", b'<?xml version="1.0"?><rss><channel/></rss>', "application/rss+xml")

    reasons = failures(read([broken, damaged, feed]))

    assert "not well-formed XML" in reasons[broken]
    assert "damaged" in reasons[damaged]
    assert "application/rss+xml" in reasons[feed]


def test_a_sitemap_s_entities_are_not_expanded(site: LocalSite) -> None:
    page = site.page("/help/safe", "Safe", REFUND_ARTICLE)
    hostile = (
        '<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY secret SYSTEM "file:///etc/passwd">]>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{page}</loc></url>'
        "<url><loc>&secret;&b;</loc></url></urlset>"
    )
    sitemap = site.text("/sitemap.xml", hostile.encode(), "application/xml")

    results = read([sitemap])

    assert page in documents(results)
    assert not any("root:" in reason for reason in failures(results).values())


@pytest.mark.parametrize(
    ("content_type", "body", "reason"),
    [
        ("application/pdf", b"%PDF-1.7\n%binary", "is a PDF"),
        ("image/png", b"\x89PNG\r\n\x1a\n\x00\x00", "is image/png, which is not a page memdesk can import"),
        ("", b"something", "is no content type"),
        ("text/html", b"\x00\x01\x02\x03binary\x00" * 100, "binary data"),
        ("text/plain", b"\x00\x01\x02\x03binary\x00" * 100, "binary data"),
        ("text/plain", "Rückgabe binnen 30 Tagen".encode("latin-1"), "is not valid utf-8 text"),
        ("text/plain; charset=x-no-such-charset", b"text", "unknown charset"),
        ("text/html", b"<html><head><title>Empty</title></head><body></body></html>", "no readable text"),
    ],
)
def test_a_page_memdesk_cannot_read_fails_with_its_reason(
    site: LocalSite, content_type: str, body: bytes, reason: str
) -> None:
    bad = site.text("/bad", body, content_type)
    good = site.page("/good", "Good", REFUND_ARTICLE)

    results = read([bad, good])

    assert list(documents(results)) == [good]
    assert reason in failures(results)[bad]


def test_plain_text_and_markdown_pages_are_taken_as_they_are(site: LocalSite) -> None:
    notes = site.text("/notes.txt", "Rückgabe binnen 30 Tagen.".encode("latin-1"), "text/plain; charset=iso-8859-1")
    guide = site.text("/guide.md", b"# Care guide\n\nOil the board monthly.\n", "text/markdown; charset=utf-8")

    found = documents(read([notes, guide]))

    assert found[notes].markdown == "Rückgabe binnen 30 Tagen."
    assert found[notes].title == "notes.txt"
    assert found[guide].title == "Care guide"
    assert found[guide].markdown.startswith("# Care guide")


def test_broken_html_is_read_as_far_as_it_goes(site: LocalSite) -> None:
    broken = site.text(
        "/broken",
        b"<html><head><title>Half a page</title><body><div><p>Exchanges are free within 60 days <b>of <i>delivery"
        b"<p>Bring the receipt to any store or send the parcel back with the prepaid label",
        "text/html",
    )

    found = documents(read([broken]))

    assert found[broken].title == "Half a page"
    assert "Exchanges are free within 60 days" in found[broken].markdown


def test_a_page_declaring_its_charset_in_a_meta_tag_is_decoded_by_it(site: LocalSite) -> None:
    body = (
        '<html><head><meta charset="windows-1252"><title>Rückgabe</title></head><body><article>'
        "<h1>Rückgabe</h1><p>Sie können jede Bestellung binnen 30 Tagen zurückgeben, ohne Angabe von Gründen.</p>"
        "</article></body></html>"
    ).encode("windows-1252")
    german = site.text("/de/rueckgabe", body, "text/html")

    found = documents(read([german]))

    assert found[german].title == "Rückgabe"
    assert "binnen 30 Tagen zurückgeben" in found[german].markdown


def test_scripts_handlers_and_javascript_links_never_reach_the_markdown(site: LocalSite) -> None:
    hostile = site.page(
        "/help/hostile",
        "Hostile",
        "<h1>Returns</h1><p onclick=\"alert('click')\">Return any item within 30 days for a full refund, "
        "no questions asked.<script>alert('script')</script></p>"
        '<p>Read <a href="javascript:alert(\'link\')">the details</a>, <a href="JaVa&#09;ScRiPt:alert(2)">more</a>'
        ' or <a href="data:text/html,<script>alert(3)</script>">this</a>,'
        ' or <a href="/help/contact">contact us</a>.</p>'
        '<img src="x" onerror="alert(\'img\')"><style>p { color: red }</style>',
    )

    markdown = documents(read([hostile]))[hostile].markdown

    assert "Return any item within 30 days" in markdown
    for inert in ("alert", "script", "onclick", "onerror", "javascript", "data:", "color: red"):
        assert inert not in markdown.lower()
    assert f"({site.url('/help/contact')})" in markdown  # an ordinary link keeps its address


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://files.example/help.html", "help/refunds", "http://"])
def test_only_absolute_http_and_https_urls_are_read(url: str) -> None:
    (result,) = read([url])

    assert isinstance(result, DocumentFailure)
    assert result.locator == url
    assert "http" in result.reason or "host" in result.reason


def test_progress_counts_pages_as_sitemaps_reveal_them(site: LocalSite) -> None:
    pages = [site.page(f"/help/{n}", f"Article {n}", REFUND_ARTICLE) for n in range(3)]
    seen: list[tuple[int, int]] = []

    list(read_urls([site.sitemap("/sitemap.xml", pages)], limits=LIMITS, progress=lambda *step: seen.append(step)))

    assert seen[0] == (1, 4)  # the sitemap read, its three pages now known
    assert seen[-1] == (4, 4)
