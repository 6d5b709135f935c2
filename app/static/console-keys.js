/*
 * memdesk console: keyboard shortcuts, as support desks have them.
 *
 * In the inbox, j and k move through the conversations and Enter opens the one in focus (it is a link). In a
 * conversation, t takes it over, n starts a private note (Enter then adds the note), e closes it. ? lists them
 * all, anywhere. A shortcut never fires while the cursor is in a field, nor with Ctrl, Alt or Cmd held, so typing
 * is never taken for one.
 */
(() => {
  "use strict";

  const SHORTCUTS = [
    ["j / k", "next / previous conversation in the inbox"],
    ["Enter", "open the conversation in focus"],
    ["t", "take the conversation over"],
    ["n", "write a private note (Enter adds it)"],
    ["e", "close the conversation"],
    ["Ctrl+K", "search"],
    ["Enter / Shift+Enter", "in the reply box: send / new line"],
    ["/", "in the reply box: insert a canned reply"],
    ["?", "this list"],
  ];

  const typing = (target) =>
    target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));

  function moveInInbox(step) {
    const links = Array.from(document.querySelectorAll("#inbox-list .row > a"));
    if (!links.length) {
      return false;
    }
    const at = links.indexOf(document.activeElement);
    const next = at < 0 ? (step > 0 ? 0 : links.length - 1) : Math.min(links.length - 1, Math.max(0, at + step));
    links[next].focus();
    links[next].scrollIntoView({ block: "nearest" });
    return true;
  }

  function press(action) {
    const button = document.querySelector(`#state button[data-action="${action}"]`);
    if (!button) {
      return false;
    }
    button.click();
    return true;
  }

  function startNote() {
    const field = document.getElementById("composer-text");
    if (!field) {
      return false;
    }
    field.dataset.mode = "note";
    field.placeholder = "A private note for the team (Enter adds it; the customer never sees it)";
    field.focus();
    return true;
  }

  function shortcutList() {
    let dialog = document.getElementById("shortcuts");
    if (!dialog) {
      dialog = document.createElement("dialog");
      dialog.id = "shortcuts";
      dialog.className = "shortcuts";
      dialog.setAttribute("aria-label", "Keyboard shortcuts");
      const title = document.createElement("h2");
      title.textContent = "Keyboard shortcuts";
      const list = document.createElement("dl");
      SHORTCUTS.forEach(([keys, what]) => {
        const key = document.createElement("dt");
        key.textContent = keys;
        const meaning = document.createElement("dd");
        meaning.textContent = what;
        list.append(key, meaning);
      });
      const close = document.createElement("button");
      close.type = "button";
      close.textContent = "Close";
      close.addEventListener("click", () => dialog.close());
      dialog.append(title, list, close);
      document.body.append(dialog);
    }
    if (dialog.open) {
      dialog.close();
    } else {
      dialog.showModal();
    }
    return true;
  }

  const ACTIONS = {
    j: () => moveInInbox(1),
    k: () => moveInInbox(-1),
    t: () => press("take-over"),
    e: () => press("close"),
    n: startNote,
    "?": shortcutList,
  };

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) {
      return;
    }
    const action = ACTIONS[event.key];
    if (action && action()) {
      event.preventDefault();
    }
  });
})();
