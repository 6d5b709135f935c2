/*
 * memdesk console: the little the pages need beyond htmx.
 *
 * - A message can reach a conversation page twice (it was stored while the page loaded, and the live stream
 *   replays from the page's position): a streamed entry whose id is already on the page is dropped.
 * - The transcript follows new messages when the reader is at its bottom.
 * - The inbox list reloads on an inbox event at most once per 300 ms, and htmx drops the events in between: a
 *   change that lands in that window (a new conversation handed off at once) would stay unseen until the next one.
 *   Once the events have been quiet for a moment, the list reloads once more ("inbox:settle").
 * - Ctrl+K (Cmd+K on a Mac) puts the cursor in the search box of the top bar, from any page.
 * - In the composer, Enter sends the reply (or adds the note, after the "n" shortcut of console-keys.js) and
 *   Shift+Enter starts a new line, as in every chat tool; Enter that
 *   confirms an input method's composition (Chinese, Japanese) is left to it.
 */
(function () {
  "use strict";

  var ENTRY_ID = /^\s*<li id="(m-\d+)"/;

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 120;
  }

  document.addEventListener("htmx:sseBeforeMessage", function (event) {
    var data = event.detail && event.detail.data;
    var match = typeof data === "string" ? ENTRY_ID.exec(data) : null;
    if (match && document.getElementById(match[1])) {
      event.preventDefault();
      return;
    }
    document.body.dataset.follow = nearBottom() ? "1" : "";
  });

  document.addEventListener("htmx:sseMessage", function () {
    if (document.body.dataset.follow === "1") {
      window.scrollTo(0, document.body.scrollHeight);
    }
  });

  var INBOX_SETTLE_MS = 400; // longer than the list's throttle, so the reload is never dropped by it
  var inboxSettle = null;

  document.addEventListener("sse:inbox", function () {
    window.clearTimeout(inboxSettle);
    inboxSettle = window.setTimeout(function () {
      var list = document.getElementById("inbox-list");
      if (list) {
        htmx.trigger(list, "inbox:settle");
      }
    }, INBOX_SETTLE_MS);
  });

  document.addEventListener("keydown", function (event) {
    var box = document.getElementById("console-search");
    if (box && (event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "k") {
      event.preventDefault();
      box.focus();
      box.select();
    }
  });

  document.addEventListener("keydown", function (event) {
    var field = event.target;
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) {
      return;
    }
    if (!(field instanceof HTMLTextAreaElement) || field.id !== "composer-text") {
      return;
    }
    event.preventDefault();
    var action = field.dataset.mode === "note" ? "note" : "reply";
    var send = field.form && field.form.querySelector('button[data-action="' + action + '"]');
    if (send && field.value.trim()) {
      // A click, not requestSubmit: the note button posts through its own hx-post, which htmx runs on a click.
      send.click();
    }
  });

  // A filter that applies as soon as it is chosen (the inbox's label), without a button.
  document.addEventListener("change", function (event) {
    var field = event.target;
    if (field instanceof HTMLSelectElement && field.hasAttribute("data-submit-on-change") && field.form) {
      field.form.requestSubmit();
    }
  });

  document.addEventListener("htmx:beforeRequest", function () {
    var flash = document.getElementById("flash");
    if (flash) {
      flash.textContent = "";
    }
  });
})();
