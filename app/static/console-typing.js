/*
 * memdesk console: typing indicators.
 *
 * - While a staff member writes in the reply box, the customer sees "Sam is typing…": one signal when they start
 *   and then at most one every SIGNAL_EVERY_MS while they go on, and "stopped" once the box is empty or after
 *   IDLE_MS without a keystroke (the server drops anything more frequent, app/live/typing.py). A private note
 *   (after the "n" shortcut) sends nothing.
 * - "The customer is typing…" arrives through the conversation's stream; it goes away after SHOWN_FOR_MS without a
 *   new signal, or when the customer's message arrives.
 */
(() => {
  "use strict";

  const SIGNAL_EVERY_MS = 3000;
  const IDLE_MS = 5000;
  const SHOWN_FOR_MS = 6000;
  let lastSignal = 0;
  let idle = null;
  let shownUntil = null;

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRF-Token"] || "";
    } catch {
      return "";
    }
  }

  function signal(field, on) {
    const conversation = field.dataset.conversation;
    if (!conversation) {
      return;
    }
    lastSignal = on ? Date.now() : 0;
    fetch(`/console/conversations/${conversation}/typing`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": csrfToken() },
      body: new URLSearchParams({ on: on ? "true" : "false" }),
    }).catch(() => {
      // A lost signal only costs the indicator; the reply itself goes through the form.
    });
  }

  document.addEventListener("input", (event) => {
    const field = event.target;
    if (!(field instanceof HTMLTextAreaElement) || field.id !== "composer-text" || field.dataset.mode === "note") {
      return;
    }
    window.clearTimeout(idle);
    if (!field.value.trim()) {
      if (lastSignal) {
        signal(field, false);
      }
      return;
    }
    if (Date.now() - lastSignal >= SIGNAL_EVERY_MS) {
      signal(field, true);
    }
    idle = window.setTimeout(() => signal(field, false), IDLE_MS);
  });

  // The reply was sent: the composer is replaced, and the customer sees the message instead of the dots.
  document.addEventListener("htmx:beforeRequest", (event) => {
    const form = event.target instanceof Element ? event.target.closest("#composer") : null;
    window.clearTimeout(idle);
    lastSignal = form ? 0 : lastSignal;
  });

  document.addEventListener("htmx:sseMessage", (event) => {
    const note = document.getElementById("customer-typing");
    if (!note) {
      return;
    }
    const type = event.detail && event.detail.type;
    if (type === "customer-typing" && note.textContent) {
      window.clearTimeout(shownUntil);
      shownUntil = window.setTimeout(() => {
        note.textContent = "";
      }, SHOWN_FOR_MS);
    } else if (type === "transcript") {
      note.textContent = "";
    }
  });
})();
