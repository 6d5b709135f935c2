/*
 * memdesk console: the little the pages need beyond htmx.
 *
 * - A message can reach a conversation page twice (it was stored while the page loaded, and the live stream
 *   replays from the page's position): a streamed entry whose id is already on the page is dropped.
 * - The transcript follows new messages when the reader is at its bottom.
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

  document.addEventListener("htmx:beforeRequest", function () {
    var flash = document.getElementById("flash");
    if (flash) {
      flash.textContent = "";
    }
  });
})();
