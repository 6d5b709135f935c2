"""The demo shop and the widget on phones and a desktop, and the alert beside the messages, in headless Chromium.

Phones are emulated as phones (touch, mobile viewport): there a page wider than the screen widens the layout
viewport, which pushes fixed elements such as the launcher off the screen, so "fits" is checked on the page's width
and on where the launcher, the panel's header and its close button land.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from tests.e2e.conftest import CHROMIUM_PATH, PHONES, FlakyProxy, Visitor
from tests.e2e.test_widget_browser import Visit

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]

SIGNED_IN_PATH = "/demo?customer=demo-cust-0001"
# One word no line can break by itself: a long link, as a bot reply or a customer might write it.
UNBREAKABLE = "https://shop.example.com/track/" + "1Z999AA1" * 12
PAGE_WIDTHS = "() => ({document: document.documentElement.scrollWidth, window: window.innerWidth})"
WIDGET_BOX = """(selector) => {
  const e = document.querySelector('#memdesk-widget').shadowRoot.querySelector(selector);
  const r = e.getBoundingClientRect();
  return {left: r.left, top: r.top, right: r.right, bottom: r.bottom};
}"""
HORIZONTAL_OVERFLOW = """() => {
  const root = document.querySelector('#memdesk-widget').shadowRoot;
  return ['.panel', '.scroller', '.log', '.composer']
    .map(s => root.querySelector(s))
    .filter(e => e.scrollWidth > e.clientWidth)
    .map(e => e.className);
}"""


def widget_box(visitor: Visitor, selector: str) -> dict[str, float]:
    box: dict[str, float] = visitor.page.evaluate(WIDGET_BOX, selector)
    return box


def assert_on_screen(visitor: Visitor, selector: str, viewport: dict[str, int]) -> None:
    box = widget_box(visitor, selector)
    inside = box["left"] >= 0 and box["top"] >= 0
    inside = inside and box["right"] <= viewport["width"] and box["bottom"] <= viewport["height"]
    assert inside, f"{selector} at {box} is not inside the {viewport['width']}x{viewport['height']} screen"


def assert_page_fits(visitor: Visitor, viewport: dict[str, int]) -> None:
    widths: dict[str, Any] = visitor.page.evaluate(PAGE_WIDTHS)
    assert widths == {"document": viewport["width"], "window": viewport["width"]}


@pytest.mark.parametrize("who", ["guest", "signed-in"])
@pytest.mark.parametrize("size", list(PHONES))
def test_the_demo_page_and_the_open_widget_fit_a_phone_screen(visit: Visit, size: str, who: str) -> None:
    viewport = PHONES[size]
    visitor = visit(viewport=viewport, phone=True)
    visitor.goto(SIGNED_IN_PATH if who == "signed-in" else "/demo")
    assert_page_fits(visitor, viewport)
    assert_on_screen(visitor, ".launcher", viewport)
    visitor.screenshot(f"phone-{size}-{who}-page")

    visitor.widget(".launcher").tap()
    visitor.widget(".panel").wait_for()
    for selector in (".panel", ".header", ".close", ".composer", ".send"):
        assert_on_screen(visitor, selector, viewport)
    if who == "signed-in":
        assert visitor.widget(".subtitle").inner_text() == "Signed in as demo-cust-0001"
    visitor.send(f"Where is {size} {UNBREAKABLE}")
    visitor.page.get_by_text(f"Scripted reply to: Where is {size}").wait_for()
    assert visitor.page.evaluate(HORIZONTAL_OVERFLOW) == []
    assert_page_fits(visitor, viewport)
    visitor.screenshot(f"phone-{size}-{who}-open")

    visitor.widget(".close").tap()
    visitor.widget(".panel").wait_for(state="hidden")
    assert_on_screen(visitor, ".launcher", viewport)


def test_the_open_widget_on_a_desktop_screen(visit: Visit) -> None:
    visitor = visit()
    visitor.goto(SIGNED_IN_PATH)
    visitor.open()
    visitor.send(f"Where is desktop {UNBREAKABLE}")
    visitor.page.get_by_text("Scripted reply to: Where is desktop").wait_for()
    assert visitor.page.evaluate(HORIZONTAL_OVERFLOW) == []
    visitor.screenshot("desktop-signed-in-open")


MESSAGE_BOXES = """() => {
  const root = document.querySelector('#memdesk-widget').shadowRoot;
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  return {
    alert: box(root.querySelector('.alert')),
    scroller: box(root.querySelector('.scroller')),
    messages: [...root.querySelectorAll('.log .msg, .pending .msg')].map(e => ({text: e.innerText, box: box(e)})),
  };
}"""


def overlaps(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_the_offline_alert_never_covers_a_message(visit: Visit, proxy: FlakyProxy) -> None:
    viewport = PHONES["360x740"]
    visitor = visit(viewport=viewport, phone=True)
    visitor.goto()
    visitor.open()
    filler = " and a little more text so that the conversation fills the screen" * 3
    for number in range(3):
        visitor.send(f"Question {number}{filler}")
        visitor.page.get_by_text(f"Scripted reply to: Question {number}").wait_for()

    proxy.down()
    visitor.widget(".alert").get_by_text("reconnecting").wait_for()
    visitor.send("Typed while the server is away")
    visitor.widget(".alert").get_by_text("Can't reach the support server").wait_for()
    visitor.widget(".msg--pending .pending-state").wait_for()
    visitor.page.wait_for_timeout(300)  # let any scrolling settle before measuring
    found = visitor.page.evaluate(MESSAGE_BOXES)
    visitor.screenshot("offline-alert-phone")
    covered = [m["text"] for m in found["messages"] if overlaps(m["box"], found["alert"])]
    assert covered == []
    queued = found["messages"][-1]
    assert "Typed while the server is away" in queued["text"] and "Not sent yet" in queued["text"]
    assert found["scroller"][1] <= queued["box"][1] and queued["box"][3] <= found["scroller"][3], "queued not in view"
