/*
 * memdesk console: canned replies in the composer.
 *
 * A slash at the start of the reply box lists the canned replies whose shortcut starts with what follows it (or
 * whose text holds it), already filled in for this conversation by the server (/console/canned/suggest). Arrow
 * keys move through the list, Enter or Tab puts the chosen reply in the box, Escape closes the list; a click does
 * the same. While the list is open, Enter chooses rather than sends.
 *
 * The composer is replaced after every send (htmx swaps it), so every listener is on the document and the
 * elements are looked up by id each time.
 */
(() => {
  "use strict";

  const TRIGGER = /^\/(\S{0,64})$/;
  const DEBOUNCE_MS = 120;
  let found = [];
  let chosen = 0;
  let timer = null;
  let asked = 0;

  const box = () => document.getElementById("composer-text");
  const list = () => document.getElementById("canned-suggest");
  const isOpen = () => {
    const shown = list();
    return Boolean(shown && !shown.hidden && found.length);
  };

  function close() {
    const shown = list();
    found = [];
    if (shown) {
      shown.hidden = true;
      shown.replaceChildren();
    }
    const field = box();
    if (field) {
      field.setAttribute("aria-expanded", "false");
      field.removeAttribute("aria-activedescendant");
    }
  }

  function draw() {
    const shown = list();
    const field = box();
    if (!shown || !field) {
      return;
    }
    shown.replaceChildren(
      ...found.map((reply, index) => {
        const item = document.createElement("li");
        item.id = `canned-option-${index}`;
        item.setAttribute("role", "option");
        item.setAttribute("aria-selected", index === chosen ? "true" : "false");
        item.dataset.index = String(index);
        const name = document.createElement("code");
        name.textContent = `/${reply.shortcut}${reply.team ? "" : " (yours)"}`;
        const text = document.createElement("span");
        text.textContent = reply.text;
        item.append(name, text);
        return item;
      }),
    );
    shown.hidden = found.length === 0;
    field.setAttribute("aria-expanded", found.length ? "true" : "false");
    if (found.length) {
      field.setAttribute("aria-activedescendant", `canned-option-${chosen}`);
    }
  }

  async function lookUp(query, conversation) {
    const ticket = ++asked;
    const params = new URLSearchParams({ q: query, conversation });
    try {
      const response = await fetch(`/console/canned/suggest?${params}`, { headers: { Accept: "application/json" } });
      if (!response.ok || ticket !== asked) {
        return;
      }
      found = (await response.json()).replies;
      chosen = 0;
      draw();
    } catch {
      close();
    }
  }

  function insert(index) {
    const field = box();
    const reply = found[index];
    if (!field || !reply) {
      return;
    }
    field.value = reply.text;
    close();
    field.focus();
    field.setSelectionRange(field.value.length, field.value.length);
  }

  document.addEventListener("input", (event) => {
    const field = event.target;
    if (!(field instanceof HTMLTextAreaElement) || field.id !== "composer-text") {
      return;
    }
    const match = TRIGGER.exec(field.value);
    window.clearTimeout(timer);
    if (!match) {
      close();
      return;
    }
    timer = window.setTimeout(() => lookUp(match[1], field.dataset.conversation || ""), DEBOUNCE_MS);
  });

  // Capture phase: the list takes Enter before the composer's own handler would send the text.
  document.addEventListener(
    "keydown",
    (event) => {
      const field = event.target;
      if (!(field instanceof HTMLTextAreaElement) || field.id !== "composer-text" || !isOpen()) {
        return;
      }
      const moves = { ArrowDown: 1, ArrowUp: -1 };
      if (event.key in moves) {
        chosen = (chosen + moves[event.key] + found.length) % found.length;
        draw();
      } else if (event.key === "Enter" || event.key === "Tab") {
        insert(chosen);
      } else if (event.key === "Escape") {
        close();
      } else {
        return;
      }
      event.preventDefault();
      event.stopPropagation();
    },
    true,
  );

  document.addEventListener("mousedown", (event) => {
    const item = event.target instanceof Element ? event.target.closest("#canned-suggest li") : null;
    if (item) {
      event.preventDefault();
      insert(Number(item.dataset.index));
    }
  });
})();
