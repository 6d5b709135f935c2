/*
 * memdesk chat widget: one script tag, no build step, no dependencies.
 *
 *   <script src="https://support.example.com/widget.js" data-memdesk-site="acme" async></script>
 *
 * Optional, before the tag, for a customer the shop has signed in (customerHash is computed by the shop's server:
 * hex(HMAC-SHA256(MEMDESK_WIDGET_IDENTITY_SECRET, customerId)), see app.identity.shop_identity_hmac):
 *
 *   window.memdeskSettings = {customerId, customerHash, name, email, locale, title, greeting};
 *
 * Browser floor: the last two versions of Chrome, Edge, Firefox and Safari (desktop and mobile), and Safari 15 /
 * iOS 15. The code is ES2021 (classes, async/await, optional chaining, ??, template literals) without what Safari 15
 * lacks even where it is older than ES2021: no regex lookbehind (Safari 16.4), no Array.prototype.at, no
 * structuredClone, no Object.hasOwn. tests/e2e/eslint.config.mjs checks this floor (`npm run lint` there).
 *
 * Lifecycle: the script draws a launcher button inside a shadow root (the host page's styles never reach it).
 * Opening the panel starts a visitor session (POST /api/widget/sessions; the token is kept in localStorage, one per
 * site and customer, so a reload keeps the history), loads the latest open conversation and its messages, and
 * follows its server-sent events (message.created, message.delta, typing, conversation.status, resync).
 *
 * Resilience: every message and event carries an id. Messages are rendered once per id, so replays and reloads
 * never duplicate anything. Message ids are opaque (random strings that say nothing of order): the log keeps the
 * order the server gives, a message from a list goes right after the one before it in that list, and a live one
 * goes last. Every failed request goes through one function, handleFailure, which tells a server
 * that is unreachable (no answer, a timeout, 5xx) from a lost session (401), a lost conversation (404), the rate
 * limit (429), a closed conversation (409) and a refused request (413, 422). An unreachable server marks the
 * connection lost ("reconnecting…" in the panel) and connect() is retried with one backoff (backoffDelay) until
 * the session, the history and the event stream are all back. A 503 is such a server too (it answers, but its
 * database does not): no request leaves before its Retry-After has passed. While the panel is open on a visible
 * page, a server that stops answering without closing the stream is noticed by a light request after a short
 * silence. The browser's EventSource reconnects by itself and sends Last-Event-ID; when it gives up (an HTTP
 * error) connect() reopens it with ?since=<last id>. After every (re)connection the messages after the newest one
 * shown are fetched (?after=<its id>), which closes any gap; a resync event reloads the whole list. Messages typed
 * while the connection is lost wait in an outbox (kept in localStorage) and are sent in order, one at a time;
 * after a failure whose outcome is unknown the server's list is checked first, so a message that did arrive is
 * never sent twice.
 *
 * Safety: customer text is only ever set with textContent. Bot and staff replies go through renderMarkdown, which
 * builds DOM nodes from a few Markdown constructs and never parses HTML; links must be http(s) or mailto.
 */
(() => {
  "use strict";

  if (window.memdeskWidget) {
    return; // the tag was included twice
  }

  const REQUEST_TIMEOUT_MS = 15000;
  const STREAM_OPEN_WAIT_MS = 3000;
  // The event stream's keep-alive comments are invisible to EventSource, so while the panel is open on a visible
  // page the widget asks the server for news itself after this much silence. A server that went away without
  // closing the stream is then noticed within about LIVENESS_SILENCE_MS + LIVENESS_TICK_MS + LIVENESS_TIMEOUT_MS.
  const LIVENESS_SILENCE_MS = 1500;
  const LIVENESS_TICK_MS = 500;
  const LIVENESS_TIMEOUT_MS = 1500;
  const RETRY_MIN_MS = 1000;
  const RETRY_MAX_MS = 15000;
  const RETRY_JITTER = 0.2; // up to 20 % shorter, so widgets cut off together do not all return at once
  const DEFAULT_RETRY_AFTER_S = 10;
  // Dots alone for longer than this read as a hung chat; the server answers or hands over by its turn deadline
  // (MEMDESK_TURN_DEADLINE_S), so until then the customer is told the assistant is still on it.
  const STILL_WORKING_AFTER_MS = 6000;
  const PERSON_TYPING_SHOWN_MS = 6000;
  const TYPING_SIGNAL_EVERY_MS = 3000;
  const SERVICE_UNAVAILABLE = 503; // the server is there but cannot serve now; its Retry-After says when to return
  const NEAR_BOTTOM_PX = 80;
  const INPUT_BORDER_PX = 2;
  const MAX_INLINE_DEPTH = 4;
  const STORAGE_PREFIX = "memdesk:v1:";
  const SAFE_PROTOCOLS = ["http:", "https:", "mailto:"];
  const STREAM_EVENTS = ["message.created", "message.delta", "typing", "conversation.status", "resync"];
  const SVG_NS = "http://www.w3.org/2000/svg";

  const STRINGS = {
    en: {
      title: "Chat with us",
      open: "Open chat",
      openUnread: "Open chat ({n} unread)",
      close: "Close chat",
      greeting: "Hi! Ask us anything about your orders, deliveries or returns.",
      signedIn: "Signed in as {name}",
      inputLabel: "Your message",
      hint: "Press Enter to send, Shift+Enter for a new line.",
      placeholder: "Type your message…",
      send: "Send",
      you: "You",
      bot: "Assistant",
      staff: "Support team",
      system: "Notice",
      typing: "The assistant is typing…",
      personTyping: "{name} is typing…",
      stillWorking: "Still working on it…",
      sources: "Sources",
      needsHuman: "A person from our team will join this conversation shortly.",
      human: "You are chatting with a member of our team.",
      closed: "This conversation is closed.",
      askPerson: "Talk to a person",
      askPersonMessage: "I'd like to talk to a person, please.",
      newConversation: "Start a new conversation",
      endChat: "That's all, thanks",
      endChatConfirm: "End this chat?",
      endChatYes: "End chat",
      endChatNo: "Keep chatting",
      sending: "Sending…",
      queued: "Not sent yet: waiting for the connection.",
      held: "Not sent yet: waiting until you can send again.",
      offline: "Can't reach the support server; reconnecting… Your messages will be sent as soon as the connection is back.",
      reconnecting: "Connection lost; reconnecting…",
      rateLimited: "You are sending messages too quickly. Your message will be sent in {n} s.",
      notSent: "Your message was not sent: {detail}",
      identity: "We could not verify your account, so the chat is unavailable. {detail} Reload the page or sign in again.",
      unavailable: "The chat is unavailable right now: {detail}",
      rateQuestion: "How did we do?",
      rateScore: "{n} out of 5",
      rateComment: "Anything you'd like to add? (optional)",
      rateSend: "Send rating",
      rateSkip: "No thanks",
      rateThanks: "Thanks for your feedback! You rated this conversation {n} out of 5.",
      rateChange: "Change my rating",
      rateFailed: "Your rating was not saved: {detail}",
    },
    de: {
      title: "Schreiben Sie uns",
      open: "Chat öffnen",
      openUnread: "Chat öffnen ({n} ungelesen)",
      close: "Chat schließen",
      greeting: "Hallo! Fragen Sie uns alles zu Bestellungen, Lieferungen oder Rücksendungen.",
      signedIn: "Angemeldet als {name}",
      inputLabel: "Ihre Nachricht",
      hint: "Enter sendet, Umschalt+Enter beginnt eine neue Zeile.",
      placeholder: "Nachricht eingeben…",
      send: "Senden",
      you: "Sie",
      bot: "Assistent",
      staff: "Support-Team",
      system: "Hinweis",
      typing: "Der Assistent schreibt…",
      personTyping: "{name} schreibt…",
      stillWorking: "Einen Moment, ich arbeite noch daran…",
      sources: "Quellen",
      needsHuman: "Eine Person aus unserem Team übernimmt dieses Gespräch in Kürze.",
      human: "Sie schreiben mit einer Person aus unserem Team.",
      closed: "Dieses Gespräch ist beendet.",
      askPerson: "Mit einer Person sprechen",
      askPersonMessage: "Ich möchte bitte mit einer Person sprechen.",
      newConversation: "Neues Gespräch beginnen",
      endChat: "Das war's, danke",
      endChatConfirm: "Dieses Gespräch beenden?",
      endChatYes: "Beenden",
      endChatNo: "Weiterschreiben",
      sending: "Wird gesendet…",
      queued: "Noch nicht gesendet: warte auf die Verbindung.",
      held: "Noch nicht gesendet: warte, bis wieder gesendet werden kann.",
      offline: "Der Support-Server ist nicht erreichbar; verbinde neu… Ihre Nachrichten werden gesendet, sobald die Verbindung wieder steht.",
      reconnecting: "Verbindung unterbrochen; verbinde neu…",
      rateLimited: "Sie senden zu schnell. Ihre Nachricht wird in {n} s gesendet.",
      notSent: "Ihre Nachricht wurde nicht gesendet: {detail}",
      identity: "Ihr Konto konnte nicht bestätigt werden, daher ist der Chat nicht verfügbar. {detail} Laden Sie die Seite neu oder melden Sie sich erneut an.",
      unavailable: "Der Chat ist gerade nicht verfügbar: {detail}",
      rateQuestion: "Wie waren wir?",
      rateScore: "{n} von 5",
      rateComment: "Möchten Sie noch etwas ergänzen? (optional)",
      rateSend: "Bewertung senden",
      rateSkip: "Nein, danke",
      rateThanks: "Danke für Ihre Rückmeldung! Sie haben dieses Gespräch mit {n} von 5 bewertet.",
      rateChange: "Bewertung ändern",
      rateFailed: "Ihre Bewertung wurde nicht gespeichert: {detail}",
    },
  };

  // --- configuration ------------------------------------------------------------------------------------------
  const script = document.currentScript ?? document.querySelector("script[data-memdesk-site]");
  const scriptSrc = script?.src || location.href;
  let base = script?.getAttribute("data-memdesk-base") || scriptSrc.replace(/\/widget\.js(?:[?#].*)?$/, "");
  if (base === scriptSrc) {
    base = new URL(scriptSrc).origin;
  }
  base = base.replace(/\/+$/, "");
  const site = script?.getAttribute("data-memdesk-site") || "default";
  const settings = window.memdeskSettings && typeof window.memdeskSettings === "object" ? window.memdeskSettings : {};
  const customerId = settings.customerId != null && settings.customerId !== "" ? String(settings.customerId) : null;
  const locale = String(settings.locale || document.documentElement.lang || "en").toLowerCase().slice(0, 2);
  const strings = STRINGS[locale] ?? STRINGS.en;

  function t(key, values) {
    const text = strings[key] ?? STRINGS.en[key] ?? key;
    return text.replace(/\{(\w+)\}/g, (_, name) => (values?.[name] != null ? String(values[name]) : ""));
  }

  // --- storage (one record per site and customer; memory only when localStorage is unavailable) ---------------
  const storageKey = `${STORAGE_PREFIX}${site}:${customerId ? `customer:${customerId}` : "guest"}`;
  const memoryStore = new Map();

  function loadStored() {
    let raw = null;
    try {
      raw = window.localStorage.getItem(storageKey);
    } catch {
      raw = memoryStore.get(storageKey) ?? null;
    }
    try {
      const value = raw ? JSON.parse(raw) : null;
      return value && typeof value === "object" ? value : {};
    } catch {
      return {};
    }
  }

  function saveStored() {
    const record = {
      token: state.token,
      hash: settings.customerHash || null,
      conversationId: state.conversationId,
      open: state.open,
      outbox: state.outbox.map(({ localId, text, afterId, state: itemState, handoff }) => ({
        localId, text, afterId: afterId === AFTER_HISTORY ? 0 : afterId, state: itemState, handoff,
      })),
      declinedRating: state.declinedRating,
    };
    const raw = JSON.stringify(record);
    try {
      window.localStorage.setItem(storageKey, raw);
    } catch {
      memoryStore.set(storageKey, raw);
    }
  }

  // An outbox item remembers the newest message shown when it was typed (null: none). An item saved by an older
  // widget, which numbered messages, may match only what arrives once the history is loaded: it may be sent twice,
  // but a message the customer typed is never taken for an older one with the same text and dropped.
  const AFTER_HISTORY = { afterHistory: true };

  function storedAfterId(value) {
    if (value === null || typeof value === "string") {
      return value;
    }
    return AFTER_HISTORY;
  }

  let stored = loadStored();
  if (customerId && stored.hash !== (settings.customerHash || null)) {
    stored = {}; // the shop vouches differently now: never reuse a token obtained with another proof
  }

  const state = {
    token: stored.token || null,
    conversationId: stored.conversationId || null,
    status: "bot",
    open: Boolean(stored.open),
    started: null, // the promise of start(), once running
    connecting: false, // connect() is running
    fatal: false, // identity refused: nothing more to try
    rendered: new Map(), // message id -> element
    claimed: new Set(), // server message ids that confirmed an outbox item
    lastEventId: null,
    stream: null,
    streamOpen: false,
    streamOpenedAt: 0,
    streamWaiters: [],
    streamGivenTime: null, // the stream the browser was reopening when connect() last waited for it
    // "up", or "lost" from the first request that found no server until connect() has everything back.
    connection: "up",
    lostAt: 0,
    lastContact: 0, // when the server was last heard from (a response or an event)
    probing: false,
    unavailableUntil: 0, // a 503's Retry-After: no request leaves before then (ms since the epoch)
    retryTimer: null,
    retryAttempt: 0,
    // Restored messages are "uncertain": the server's list is checked before sending them, in case the attempt
    // before the reload arrived, or another tab of this site sent them meanwhile.
    outbox: (Array.isArray(stored.outbox) ? stored.outbox : []).map((item) => ({
      localId: item.localId, text: String(item.text), afterId: storedAfterId(item.afterId), state: "uncertain",
      element: null, handoff: item.handoff === true,
    })),
    flushing: false,
    flushTimer: null,
    blockedUntil: 0,
    countdownTimer: null,
    draft: null,
    draftText: "",
    typing: false,
    personTypingTimer: null,
    lastTypingSignal: 0,
    stillWorkingTimer: null,
    unread: 0,
    loaded: false,
    stuckToBottom: true,
    // The conversation whose rating the customer declined ("No thanks"): it is not asked for again.
    declinedRating: typeof stored.declinedRating === "string" ? stored.declinedRating : null,
    ratingScore: null, // the score chosen in the rating form, before it is sent
  };

  // --- DOM helpers --------------------------------------------------------------------------------------------
  function h(tag, attributes, children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes ?? {})) {
      if (value == null || value === false) {
        continue;
      }
      if (name === "text") {
        element.textContent = String(value);
      } else if (name === "class") {
        element.className = value;
      } else {
        element.setAttribute(name, value === true ? "" : String(value));
      }
    }
    for (const child of children ?? []) {
      if (child != null) {
        element.append(child);
      }
    }
    return element;
  }

  function icon(pathData) {
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    const path = document.createElementNS(SVG_NS, "path");
    path.setAttribute("d", pathData);
    svg.append(path);
    return svg;
  }

  // --- safe Markdown --------------------------------------------------------------------------------------------
  // Every piece of text becomes a text node; elements come only from this fixed list, attributes only from code.
  const INLINE_PATTERN = [
    "(`+)([^`][\\s\\S]*?)\\1(?!`)", // 1, 2: inline code
    "!?\\[([^\\[\\]\\n]+)\\]\\(\\s*<?([^\\s()<>]+)>?\\s*\\)", // 3, 4: link (an image becomes a link)
    "\\*\\*(?=\\S)([\\s\\S]*?\\S)\\*\\*", // 5: bold
    "__(?=\\S)([\\s\\S]*?\\S)__", // 6: bold
    "\\*(?![\\s*])([^*\\n]*?[^\\s*])\\*", // 7: italics
    "_(?![\\s_])([^_\\n]*?[^\\s_])_(?![A-Za-z0-9_])", // 8: italics, unless inside a word (see renderInline)
    "(https?:\\/\\/[^\\s<>\"'`]*[^\\s<>\"'`.,;:!?)\\]])", // 9: bare URL
  ].join("|");
  const WORD_CHARACTER = /[A-Za-z0-9_]/;

  function safeUrl(raw) {
    if (raw === undefined) {
      return null;
    }
    let url;
    try {
      url = new URL(raw); // relative URLs throw: a reply has no base to resolve them against
    } catch {
      return null;
    }
    return SAFE_PROTOCOLS.includes(url.protocol) ? url.href : null;
  }

  function link(href) {
    return h("a", { href, target: "_blank", rel: "noopener noreferrer" });
  }

  function appendText(parent, text) {
    if (text) {
      parent.append(text);
    }
  }

  function renderInline(text, parent, depth, inLink) {
    if (depth > MAX_INLINE_DEPTH) {
      appendText(parent, text);
      return;
    }
    const pattern = new RegExp(INLINE_PATTERN, "g");
    let last = 0;
    for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
      if (match[8] !== undefined && WORD_CHARACTER.test(text.charAt(match.index - 1))) {
        // snake_case is not emphasis. Checked here rather than with a lookbehind, which Safari 15 cannot parse:
        // the underscore stays text and the search goes on from the next character, as a lookbehind would.
        pattern.lastIndex = match.index + 1;
        continue;
      }
      appendText(parent, text.slice(last, match.index));
      last = pattern.lastIndex;
      parent.append(inlineNode(match, depth, inLink));
    }
    appendText(parent, text.slice(last));
  }

  function inlineNode(match, depth, inLink) {
    const [whole, , code, label, target, bold, boldUnderscore, italic, italicUnderscore, bareUrl] = match;
    if (code !== undefined) {
      return h("code", { text: code });
    }
    const href = safeUrl(target ?? bareUrl);
    if (label !== undefined && href && !inLink) {
      const anchor = link(href);
      renderInline(label, anchor, depth + 1, true);
      return anchor;
    }
    if (bareUrl !== undefined && href && !inLink) {
      const anchor = link(href);
      anchor.textContent = bareUrl;
      return anchor;
    }
    const strongText = bold ?? boldUnderscore;
    const emphasisText = italic ?? italicUnderscore;
    if (strongText === undefined && emphasisText === undefined) {
      return document.createTextNode(whole); // a refused link stays visible as plain text
    }
    const element = h(strongText !== undefined ? "strong" : "em");
    renderInline(strongText ?? emphasisText, element, depth + 1, inLink);
    return element;
  }

  function listItem(line) {
    let match = /^\s{0,3}[-*+]\s+(.*)$/.exec(line);
    if (match) {
      return { ordered: false, text: match[1] };
    }
    match = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/.exec(line);
    return match ? { ordered: true, start: parseInt(match[1], 10), text: match[2] } : null;
  }

  function isFence(line) {
    return /^\s*```/.test(line);
  }

  // Each block reader takes the lines and the index of its first line, and returns [element, index after it].
  function readFence(lines, index) {
    const code = [];
    let next = index + 1;
    while (next < lines.length && !isFence(lines[next])) {
      code.push(lines[next]);
      next += 1;
    }
    return [h("pre", null, [h("code", { text: code.join("\n") })]), next + 1];
  }

  function readList(lines, index, first) {
    const list = h(first.ordered ? "ol" : "ul", first.ordered && first.start !== 1 ? { start: first.start } : null);
    let item = null;
    let next = index;
    while (next < lines.length) {
      const entry = listItem(lines[next]);
      if (entry && entry.ordered === first.ordered) {
        item = h("li");
        renderInline(entry.text, item, 0, false);
        list.append(item);
      } else if (!entry && item && /^\s+\S/.test(lines[next])) {
        item.append(h("br"));
        renderInline(lines[next].trim(), item, 0, false);
      } else {
        break;
      }
      next += 1;
    }
    return [list, next];
  }

  function readParagraph(lines, index) {
    const paragraph = h("p");
    let next = index;
    while (next < lines.length && lines[next].trim() && !listItem(lines[next]) && !isFence(lines[next])) {
      if (next > index) {
        paragraph.append(h("br"));
      }
      renderInline(lines[next].trim(), paragraph, 0, false);
      next += 1;
    }
    return [paragraph, next];
  }

  function readBlock(lines, index) {
    const line = lines[index];
    if (isFence(line)) {
      return readFence(lines, index);
    }
    const heading = /^\s{0,3}#{1,6}\s+(.*)$/.exec(line);
    if (heading) {
      const strong = h("strong");
      renderInline(heading[1].replace(/\s#+\s*$/, ""), strong, 0, false);
      return [h("p", null, [strong]), index + 1];
    }
    const first = listItem(line);
    return first ? readList(lines, index, first) : readParagraph(lines, index);
  }

  function renderMarkdown(source) {
    const fragment = document.createDocumentFragment();
    const lines = String(source ?? "").replace(/\r\n?/g, "\n").split("\n");
    let index = 0;
    while (index < lines.length) {
      if (!lines[index].trim()) {
        index += 1;
        continue;
      }
      const [element, next] = readBlock(lines, index);
      fragment.append(element);
      index = next;
    }
    return fragment;
  }

  // --- HTTP -----------------------------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(kind, status, detail, { retryAfter = 0, authenticated = false } = {}) {
      super(detail);
      this.name = "ApiError";
      this.kind = kind; // "network" (no answer, or a timeout) or "http"
      this.status = status;
      this.detail = detail;
      this.retryAfter = retryAfter;
      this.authenticated = authenticated; // the request carried the visitor token
    }
  }

  function retryAfterSeconds(response, detail) {
    const header = parseInt(response.headers.get("Retry-After") ?? "", 10);
    if (header > 0) {
      return header;
    }
    const inText = /(\d+)\s*second/.exec(detail ?? ""); // Retry-After is not readable cross-origin without CORS
    return inText ? parseInt(inText[1], 10) : DEFAULT_RETRY_AFTER_S;
  }

  async function api(method, path, { body, anonymous = false, timeoutMs = REQUEST_TIMEOUT_MS } = {}) {
    const unavailable = state.unavailableUntil - Date.now();
    if (unavailable > 0) {
      await new Promise((resolve) => setTimeout(resolve, unavailable));
    }
    const authenticated = Boolean(state.token) && !anonymous;
    const headers = { Accept: "application/json" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
    }
    if (authenticated) {
      headers.Authorization = `Bearer ${state.token}`;
    }
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs); // covers the body too, not only the headers
    let response;
    let text;
    try {
      response = await fetch(base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
        credentials: "omit",
        cache: "no-store",
      });
      text = await response.text();
    } catch {
      throw new ApiError("network", 0, t("offline"), { authenticated }); // no answer, a timeout, a cut body
    } finally {
      clearTimeout(timer);
    }
    state.lastContact = Date.now();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null; // an error page from a proxy in between: the status says enough
    }
    if (!response.ok) {
      const detail = typeof data?.detail === "string" ? data.detail : `HTTP ${response.status}`;
      const retryAfter = retryAfterSeconds(response, detail);
      if (response.status === SERVICE_UNAVAILABLE) {
        state.unavailableUntil = Math.max(state.unavailableUntil, Date.now() + retryAfter * 1000);
      }
      throw new ApiError("http", response.status, detail, { retryAfter, authenticated });
    }
    return data;
  }

  // While the customer writes, staff watching the conversation see "The customer is typing…": a signal at most every
  // TYPING_SIGNAL_EVERY_MS (the server drops closer ones), best effort, only in a conversation that exists and
  // while a person may be reading (not while only the bot answers).
  function signalTyping() {
    const now = Date.now();
    if (!state.conversationId || !state.token || state.status === "bot" || state.status === "closed"
      || now - state.lastTypingSignal < TYPING_SIGNAL_EVERY_MS || !input.value.trim()) {
      return;
    }
    state.lastTypingSignal = now;
    api("POST", `${conversationPath()}/typing`, { body: { on: true } }).catch(() => {});
  }

  function conversationPath() {
    return `/api/widget/conversations/${encodeURIComponent(state.conversationId)}`;
  }

  // --- the interface --------------------------------------------------------------------------------------------
  const host = h("div", { id: "memdesk-widget", "data-memdesk-site": site });
  host.style.display = "none"; // until the stylesheet has loaded: no unstyled flash
  const root = host.attachShadow({ mode: "open" });
  const stylesheet = h("link", { rel: "stylesheet", href: `${base}/widget.css` });
  const showHost = () => {
    host.style.display = "";
  };
  stylesheet.addEventListener("load", showHost);
  stylesheet.addEventListener("error", showHost);

  const title = settings.title ? String(settings.title) : t("title");
  const launcher = h("button", { type: "button", class: "launcher", "aria-expanded": "false",
    "aria-controls": "memdesk-panel", "aria-label": t("open") }, [
    icon("M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z"),
  ]);
  const badge = h("span", { class: "badge", hidden: true, "aria-hidden": "true" });
  launcher.append(badge);

  const closeButton = h("button", { type: "button", class: "close", "aria-label": t("close") }, [
    icon("M6.4 5 5 6.4 10.6 12 5 17.6 6.4 19 12 13.4 17.6 19 19 17.6 13.4 12 19 6.4 17.6 5 12 10.6z"),
  ]);
  const subtitle = h("p", { class: "subtitle", hidden: true });
  if (customerId && settings.name) {
    subtitle.textContent = t("signedIn", { name: settings.name });
    subtitle.hidden = false;
  }
  const banner = h("p", { class: "banner", role: "status", hidden: true });
  const newConversationButton = h("button", { type: "button", class: "link-button", hidden: true,
    text: t("newConversation") });
  // Goes to the support team without the assistant deciding: the message carries the handoff flag.
  const askPersonButton = h("button", { type: "button", class: "link-button ask-person", text: t("askPerson") });
  // The customer ends the chat themselves, after a confirm step (a stray tap must not close it); the server records
  // the close as any other, and the rating question follows.
  const endChatButton = h("button", { type: "button", class: "link-button end-chat", hidden: true,
    text: t("endChat") });
  const endChatYes = h("button", { type: "button", class: "link-button", text: t("endChatYes") });
  const endChatNo = h("button", { type: "button", class: "link-button", text: t("endChatNo") });
  const endChatConfirm = h("div", { class: "end-chat-confirm", role: "group", hidden: true,
    "aria-label": t("endChatConfirm") }, [h("span", { text: t("endChatConfirm") }), endChatYes, endChatNo]);
  const greeting = h("p", { class: "greeting", text: settings.greeting ? String(settings.greeting) : t("greeting") });
  const log = h("ol", { class: "log", role: "log", "aria-live": "polite", "aria-relevant": "additions",
    "aria-label": title });
  const stillWorkingNote = h("span", { class: "still-working", hidden: true, text: t("stillWorking") });
  const typingLabel = h("span", { class: "sr-only", text: t("typing") });
  const typingIndicator = h("div", { class: "typing", role: "status", hidden: true }, [
    h("span", { class: "dot", "aria-hidden": "true" }), h("span", { class: "dot", "aria-hidden": "true" }),
    h("span", { class: "dot", "aria-hidden": "true" }), typingLabel, stillWorkingNote,
  ]);
  const draftSlot = h("div", { class: "draft-slot" });
  // "How did we do?" once the conversation is closed; see the ratings section below.
  const ratingScores = [1, 2, 3, 4, 5].map((n) => h("button", { type: "button", class: "rating-score",
    "data-score": String(n), "aria-pressed": "false", "aria-label": t("rateScore", { n }), text: String(n) }));
  const ratingComment = h("textarea", { class: "rating-comment", rows: "2", maxlength: "2000",
    placeholder: t("rateComment"), "aria-label": t("rateComment") });
  const ratingSend = h("button", { type: "button", class: "rating-send", disabled: true, text: t("rateSend") });
  const ratingSkip = h("button", { type: "button", class: "link-button", text: t("rateSkip") });
  const ratingForm = h("div", { class: "rating", role: "group", "aria-labelledby": "memdesk-rating-question",
    hidden: true }, [
    h("p", { id: "memdesk-rating-question", class: "rating-question", text: t("rateQuestion") }),
    h("div", { class: "rating-scores" }, ratingScores), ratingComment,
    h("div", { class: "rating-actions" }, [ratingSend, ratingSkip]),
  ]);
  const ratingNote = h("p", { class: "rating-note" });
  const ratingChange = h("button", { type: "button", class: "link-button", hidden: true, text: t("rateChange") });
  const ratingDone = h("div", { class: "rating-done", role: "status", hidden: true }, [ratingNote, ratingChange]);
  const pendingList = h("ol", { class: "pending", "aria-label": t("sending") });
  const scroller = h("div", { class: "scroller", tabindex: "0" }, [
    greeting, log, draftSlot, typingIndicator, pendingList, ratingForm, ratingDone,
  ]);
  const alertBox = h("div", { class: "alert", role: "alert", hidden: true });
  const input = h("textarea", { id: "memdesk-input", rows: "1", placeholder: t("placeholder"), autocomplete: "off",
    "aria-describedby": "memdesk-hint" });
  const sendButton = h("button", { type: "submit", class: "send", "aria-label": t("send") }, [
    icon("M3 20.5 21 12 3 3.5 3 10l12 2-12 2z"),
  ]);
  const form = h("form", { class: "composer", novalidate: true }, [
    h("label", { for: "memdesk-input", class: "sr-only", text: t("inputLabel") }),
    input, sendButton,
    h("span", { id: "memdesk-hint", class: "sr-only", text: t("hint") }),
  ]);
  const panel = h("section", { id: "memdesk-panel", class: "panel", role: "dialog", "aria-modal": "false",
    "aria-labelledby": "memdesk-title", hidden: true, lang: strings === STRINGS.en ? "en" : locale }, [
    h("header", { class: "header" }, [
      h("div", { class: "heading" }, [h("h2", { id: "memdesk-title", text: title }), subtitle]),
      closeButton,
    ]),
    h("div", { class: "notices" }, [banner, newConversationButton,
      h("div", { class: "notice-actions" }, [askPersonButton, endChatButton]), endChatConfirm]),
    scroller, alertBox, form,
  ]);
  root.append(stylesheet, h("div", { class: "widget" }, [panel, launcher]));

  function fitInput() {
    input.style.height = ""; // grows with its text up to the stylesheet's max-height, then scrolls
    input.style.height = `${input.scrollHeight + INPUT_BORDER_PX}px`;
  }

  function nearBottom() {
    return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < NEAR_BOTTOM_PX;
  }

  function keepScrolled(wasNearBottom) {
    if (wasNearBottom) {
      scroller.scrollTop = scroller.scrollHeight;
    }
  }

  // When the message area shrinks (an alert or a banner appears, the input grows, a phone's keyboard opens), a
  // reader who was at the newest message stays there: nothing new slides under the alert out of sight.
  scroller.addEventListener("scroll", () => {
    state.stuckToBottom = nearBottom();
  }, { passive: true });
  new ResizeObserver(() => keepScrolled(state.stuckToBottom)).observe(scroller);

  let alertKind = null;

  function showAlert(kind, text) {
    alertKind = kind;
    alertBox.textContent = text;
    alertBox.hidden = false;
  }

  function clearAlert(kinds) {
    if (alertKind && (!kinds || kinds.includes(alertKind))) {
      alertKind = null;
      alertBox.hidden = true;
      alertBox.textContent = "";
    }
  }

  function updateLauncher() {
    launcher.setAttribute("aria-expanded", state.open ? "true" : "false");
    const label = state.open ? t("close") : state.unread ? t("openUnread", { n: state.unread }) : t("open");
    launcher.setAttribute("aria-label", label);
    badge.textContent = state.unread ? String(state.unread) : "";
    badge.hidden = !state.unread || state.open;
  }

  function setComposerEnabled() {
    const enabled = !state.fatal && state.status !== "closed";
    input.disabled = !enabled;
    sendButton.disabled = !enabled;
    askPersonButton.disabled = !enabled;
  }

  function setStatus(status) {
    state.status = status || "bot";
    const text = { needs_human: t("needsHuman"), human: t("human"), closed: t("closed") }[state.status];
    banner.textContent = text ?? "";
    banner.hidden = !text;
    banner.className = `banner banner--${state.status}`;
    newConversationButton.hidden = state.status !== "closed";
    askPersonButton.hidden = state.status !== "bot";
    showEndChat();
    setComposerEnabled();
    if (state.status === "closed") {
      offerRating();
    } else {
      ratingForm.hidden = true;
      ratingDone.hidden = true;
    }
  }

  function showEndChat() {
    const closable = Boolean(state.conversationId) && state.status !== "closed";
    endChatButton.hidden = !closable || !endChatConfirm.hidden;
    if (!closable) {
      endChatConfirm.hidden = true;
    }
  }

  async function endChat() {
    endChatYes.disabled = true;
    try {
      await api("POST", `${conversationPath()}/close`);
      endChatConfirm.hidden = true;
      setStatus("closed");
    } catch (error) {
      endChatConfirm.hidden = true;
      showEndChat();
      handleFailure(error); // closed already: the status follows; offline: the usual notice
    } finally {
      endChatYes.disabled = false;
    }
  }

  // --- ratings ----------------------------------------------------------------------------------------------------
  // The server says whether to ask (closed, ratings on, none given yet); the widget also stops asking once the
  // customer declined. A given rating shows with a way to change it while the server still allows it.
  async function offerRating() {
    const conversationId = state.conversationId;
    let rating;
    try {
      rating = await api("GET", `${conversationPath()}/rating`);
    } catch {
      return; // not asking is the safe failure: the conversation itself is unaffected
    }
    if (conversationId !== state.conversationId || state.status !== "closed") {
      return;
    }
    if (rating.score != null) {
      showRated(rating);
    } else if (rating.asked && state.declinedRating !== conversationId) {
      ratingDone.hidden = true;
      ratingForm.hidden = false;
      keepScrolled(state.stuckToBottom);
    }
  }

  function showRated(rating) {
    ratingForm.hidden = true;
    ratingNote.textContent = t("rateThanks", { n: rating.score });
    const until = parseTime(rating.changeable_until);
    ratingChange.hidden = !until || until.getTime() <= Date.now();
    ratingDone.hidden = false;
    keepScrolled(state.stuckToBottom);
  }

  function chooseScore(score) {
    state.ratingScore = score;
    for (const button of ratingScores) {
      button.setAttribute("aria-pressed", button.dataset.score === String(score) ? "true" : "false");
    }
    ratingSend.disabled = false;
  }

  async function sendRating() {
    if (state.ratingScore == null) {
      return;
    }
    ratingSend.disabled = true;
    const comment = ratingComment.value.trim();
    try {
      const body = comment ? { score: state.ratingScore, comment } : { score: state.ratingScore };
      showRated(await api("PUT", `${conversationPath()}/rating`, { body }));
      clearAlert(["rating"]);
    } catch (error) {
      ratingSend.disabled = false;
      showAlert("rating", t("rateFailed", { detail: error.message }));
    }
  }

  // --- messages -------------------------------------------------------------------------------------------------
  function parseTime(value) {
    let text = String(value ?? "");
    if (text && !/(Z|[+-]\d\d:?\d\d)$/.test(text)) {
      text += "Z"; // the server stores UTC
    }
    const date = new Date(text);
    return Number.isNaN(date.getTime()) ? null : date;
  }

  function authorKind(message) {
    return ["customer", "staff", "bot"].includes(message.author) ? message.author : "system";
  }

  function authorLabel(message) {
    const kind = authorKind(message);
    if (kind === "staff") {
      return message.staff_name ? `${message.staff_name} · ${t("staff")}` : t("staff");
    }
    return { customer: t("you"), bot: t("bot"), system: t("system") }[kind];
  }

  function messageElement(message) {
    const kind = authorKind(message);
    const body = h("div", { class: "body" });
    if (kind === "customer" || kind === "system") {
      body.textContent = message.content; // the customer's own text is never interpreted
    } else {
      body.append(renderMarkdown(message.content));
    }
    const when = parseTime(message.created_at);
    return h("li", { class: `msg msg--${kind}`, "data-id": message.id }, [
      h("span", { class: kind === "customer" ? "author sr-only" : "author", text: authorLabel(message) }),
      body,
      kind === "bot" ? sourcesLine(message.sources) : null,
      when ? h("time", { class: "time", datetime: when.toISOString(),
        text: when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) }) : null,
    ]);
  }

  // The knowledge a reply cites: "[n] title" each, a link only for an http(s) address (never mailto or script).
  function sourcesLine(sources) {
    const cited = Array.isArray(sources) ? sources.filter((source) => typeof source?.title === "string") : [];
    if (cited.length === 0) {
      return null;
    }
    const items = cited.map((source) => {
      const label = `[${Number.parseInt(source.marker, 10) || "?"}] ${source.title}`;
      const href = safeUrl(typeof source.url === "string" ? source.url : undefined);
      if (!href || !/^https?:/.test(href)) {
        return h("span", { class: "source", text: label });
      }
      const anchor = link(href);
      anchor.className = "source";
      anchor.textContent = label;
      return anchor;
    });
    return h("p", { class: "sources" }, [h("span", { class: "sources-label", text: `${t("sources")}: ` }),
      ...items.flatMap((item, index) => (index === 0 ? [item] : [", ", item]))]);
  }

  function isVisible(message) {
    return typeof message?.id === "string" && message.id !== "" && !message.private &&
      (message.role === "user" || message.role === "assistant") && String(message.content ?? "").trim() !== "";
  }

  function newestId() {
    return log.lastElementChild?.getAttribute("data-id") ?? null;
  }

  // The element a message goes before: after `previous`, the message before it in a list from the server (null: it
  // is the list's first, so it goes first), or last when `previous` is undefined (a live message).
  function insertionPoint(previous) {
    if (previous === undefined) {
      return null;
    }
    if (previous === null) {
      return log.firstElementChild;
    }
    const anchor = state.rendered.get(previous);
    return anchor ? anchor.nextElementSibling : null;
  }

  function addMessage(message, previous = undefined) {
    if (!isVisible(message) || state.rendered.has(message.id)) {
      return;
    }
    const before = insertionPoint(previous);
    if (message.author === "customer") {
      confirmOutbox(message, before);
    }
    const wasNearBottom = nearBottom();
    const element = messageElement(message);
    state.rendered.set(message.id, element);
    log.insertBefore(element, before);
    if (state.loaded && !state.open && message.author !== "customer") {
      state.unread += 1;
      updateLauncher();
    }
    keepScrolled(wasNearBottom || message.author === "customer");
  }

  // Messages in the server's order; `previous` is the id of the one before the first (null: the list is complete).
  function addMessages(messages, previous = null) {
    let previousId = previous;
    for (const message of messages ?? []) {
      addMessage(message, previousId);
      if (state.rendered.has(message.id)) {
        previousId = message.id;
      }
    }
  }

  function clearMessages() {
    log.replaceChildren();
    state.rendered.clear();
    state.claimed.clear();
    clearDraft();
  }

  function appendDraft(text) {
    const wasNearBottom = nearBottom();
    state.draftText += String(text ?? "");
    if (!state.draft) {
      state.draft = h("div", { class: "msg msg--bot msg--draft", "aria-hidden": "true" }, [
        h("span", { class: "author", text: t("bot") }), h("div", { class: "body" }),
      ]);
      draftSlot.append(state.draft);
    }
    state.draft.lastChild.replaceChildren(renderMarkdown(state.draftText));
    showTyping(false);
    keepScrolled(wasNearBottom);
  }

  function clearDraft() {
    state.draft?.remove();
    state.draft = null;
    state.draftText = "";
    showTyping(state.typing);
  }

  // A person's typing (``who``) shows their name beside the dots; their signals come every few seconds while they
  // write, so one missing for PERSON_TYPING_SHOWN_MS means they stopped (or closed the console).
  function setTyping(on, who) {
    const wasNearBottom = nearBottom();
    clearTimeout(state.personTypingTimer);
    const person = on && typeof who === "string" && who ? who : "";
    typingLabel.textContent = person ? t("personTyping", { name: person }) : t("typing");
    typingLabel.className = person ? "typing-who" : "sr-only";
    if (person) {
      state.personTypingTimer = setTimeout(() => setTyping(false), PERSON_TYPING_SHOWN_MS);
    }
    state.typing = on;
    if (!on) {
      clearDraft();
    }
    showTyping(on && !state.draft);
    keepScrolled(wasNearBottom);
  }

  // The dots without a token for STILL_WORKING_AFTER_MS add the "still working" note; a token or the end of the
  // turn takes both away, and the next wait starts its own count.
  function showTyping(visible) {
    typingIndicator.hidden = !visible;
    if (!visible) {
      clearTimeout(state.stillWorkingTimer);
      state.stillWorkingTimer = null;
      stillWorkingNote.hidden = true;
    } else if (state.stillWorkingTimer === null && stillWorkingNote.hidden) {
      state.stillWorkingTimer = setTimeout(() => {
        const wasNearBottom = nearBottom();
        state.stillWorkingTimer = null;
        stillWorkingNote.hidden = false;
        keepScrolled(wasNearBottom);
      }, STILL_WORKING_AFTER_MS);
    }
  }

  // --- outbox: messages wait here until the server has them -----------------------------------------------------
  function renderPending(item) {
    if (!state.outbox.includes(item)) {
      return; // already confirmed by the server
    }
    const text = item.state === "sending" ? t("sending") : state.blockedUntil > Date.now() ? t("held") : t("queued");
    if (!item.element) {
      item.element = h("li", { class: "msg msg--customer msg--pending", "data-local-id": item.localId }, [
        h("span", { class: "author sr-only", text: t("you") }),
        h("div", { class: "body", text: item.text }),
        h("span", { class: "pending-state" }),
      ]);
      pendingList.append(item.element);
    }
    item.element.lastChild.textContent = text;
    item.element.classList.toggle("msg--waiting", item.state !== "sending");
  }

  function dropFromOutbox(item) {
    const position = state.outbox.indexOf(item);
    if (position >= 0) {
      state.outbox.splice(position, 1);
    }
    item.element?.remove();
    item.element = null;
    saveStored();
  }

  // Whether a message about to go before `before` (null: last) comes after the message `afterId` of an outbox item.
  function landsAfter(afterId, before) {
    if (afterId === null) {
      return true; // nothing was shown when the item was typed
    }
    if (afterId === AFTER_HISTORY) {
      return state.loaded;
    }
    const anchor = state.rendered.get(afterId);
    if (!anchor) {
      return false; // not shown yet: the history is still loading, up to it
    }
    return before === null || (anchor !== before &&
      Boolean(anchor.compareDocumentPosition(before) & Node.DOCUMENT_POSITION_FOLLOWING));
  }

  // A customer message from the server may be one the outbox is unsure about (the answer to its POST was lost).
  function confirmOutbox(message, before) {
    if (state.claimed.has(message.id)) {
      return;
    }
    const text = String(message.content).trim();
    const match = state.outbox.find((item) => item.state !== "queued" && item.text.trim() === text &&
      landsAfter(item.afterId, before));
    if (match) {
      state.claimed.add(message.id);
      dropFromOutbox(match);
    }
  }

  function queueMessage(text, handoff = false) {
    const item = { localId: Date.now().toString(36) + Math.random().toString(36).slice(2, 8), text,
      afterId: newestId(), state: "queued", element: null, handoff };
    state.outbox.push(item);
    saveStored();
    renderPending(item);
    scroller.scrollTop = scroller.scrollHeight;
    flushOutbox();
  }

  function scheduleFlush(delay) {
    clearTimeout(state.flushTimer);
    state.flushTimer = setTimeout(flushOutbox, delay);
  }

  function showRateLimitCountdown() {
    clearInterval(state.countdownTimer);
    const tick = () => {
      const left = Math.ceil((state.blockedUntil - Date.now()) / 1000);
      if (left <= 0 || !state.outbox.length) {
        clearInterval(state.countdownTimer);
        clearAlert(["rate"]);
        return;
      }
      showAlert("rate", t("rateLimited", { n: left }));
    };
    tick();
    state.countdownTimer = setInterval(tick, 1000);
  }

  async function flushOutbox() {
    if (state.flushing || state.fatal || !state.outbox.length) {
      return;
    }
    if (state.connection === "lost") {
      showConnectionAlert(); // connect() sends them once the server is back
      return;
    }
    const wait = state.blockedUntil - Date.now();
    if (wait > 0) {
      scheduleFlush(wait);
      return;
    }
    state.flushing = true;
    try {
      while (state.outbox.length && !state.fatal && state.status !== "closed" && state.connection === "up") {
        const item = state.outbox[0];
        try {
          await sendFirst(item);
        } catch (error) {
          if (!sendFailed(item, error)) {
            return;
          }
        }
      }
    } finally {
      state.flushing = false;
    }
  }

  async function sendFirst(item) {
    await start();
    if (item.state === "uncertain") {
      await fillGap(); // did the lost attempt arrive after all? then confirmOutbox has dropped it
      if (state.outbox[0] !== item) {
        return;
      }
    }
    await ensureConversation(true);
    item.state = "sending";
    renderPending(item);
    saveStored();
    const body = item.handoff ? { content: item.text, handoff: true } : { content: item.text };
    const message = await api("POST", `${conversationPath()}/messages`, { body });
    state.claimed.add(message.id);
    dropFromOutbox(item);
    addMessage(message);
    state.retryAttempt = 0;
    clearAlert(["send"]);
  }

  // After a failed send: true to go on with the next message, false to stop until something calls flushOutbox.
  function sendFailed(item, error) {
    if (!state.outbox.includes(item)) {
      return true; // the answer was lost, but the message arrived: its event already confirmed it
    }
    const outcome = handleFailure(error);
    if (item.state === "sending") {
      item.state = outcome === "unreachable" ? "uncertain" : "queued"; // only then may it have arrived
    }
    if (outcome !== "refused") {
      renderPending(item);
      saveStored();
      return false;
    }
    dropFromOutbox(item); // 413, 422 and other refusals: it cannot be sent as it is; give it back for editing
    if (!input.value.trim()) {
      input.value = item.text;
      fitInput();
    }
    showAlert("send", t("notSent", { detail: error.detail }));
    return true;
  }

  // --- failures and reconnection: the one path ------------------------------------------------------------------
  function failureKind(error) {
    if (error.kind === "network" || error.status >= 500 || error.status === 408) {
      return "unreachable";
    }
    if (error.status === 401) {
      // Refused while asking for a session: the shop's proof of identity is wrong. Retrying cannot help, and
      // falling back to a guest would let the customer believe they are signed in.
      return error.authenticated ? "session" : customerId ? "identity" : "refused";
    }
    return { 404: "conversation", 409: "closed", 429: "rateLimited" }[error.status] ?? "refused";
  }

  // Acts on a failed request and says what it was; the caller handles "refused" (the request itself was refused,
  // e.g. 413 or 422), everything else is handled here.
  function handleFailure(error) {
    if (!(error instanceof ApiError)) {
      throw error;
    }
    const kind = failureKind(error);
    if (kind === "unreachable") {
      connectionLost();
    } else if (kind === "session") {
      forgetSession(); // the token expired, or the server's key changed: a new session
      scheduleConnect();
    } else if (kind === "conversation") {
      forgetConversation(); // erased, or not this customer's any more
      scheduleConnect();
    } else if (kind === "identity") {
      refuseIdentity(error);
    } else if (kind === "closed") {
      setStatus("closed");
    } else if (kind === "rateLimited") {
      state.blockedUntil = Date.now() + error.retryAfter * 1000;
      state.outbox.forEach(renderPending);
      showRateLimitCountdown();
      scheduleFlush(error.retryAfter * 1000);
    }
    return kind;
  }

  function reportFailure(error) {
    if (handleFailure(error) === "refused") {
      showAlert("unavailable", t("unavailable", { detail: error.detail }));
    }
  }

  // The one backoff: doubling from RETRY_MIN_MS up to RETRY_MAX_MS, with jitter.
  function backoffDelay(attempt) {
    const delay = Math.min(RETRY_MIN_MS * 2 ** attempt, RETRY_MAX_MS);
    return Math.round(delay * (1 - RETRY_JITTER * Math.random()));
  }

  function scheduleConnect() {
    if (state.retryTimer !== null || state.fatal) {
      return; // one retry at a time
    }
    state.retryTimer = setTimeout(() => {
      state.retryTimer = null;
      connect();
    }, backoffDelay(state.retryAttempt));
    state.retryAttempt += 1;
  }

  function showConnectionAlert() {
    if (state.connection === "lost") {
      showAlert(state.outbox.length ? "offline" : "reconnecting", t(state.outbox.length ? "offline" : "reconnecting"));
    }
  }

  function connectionLost() {
    if (state.connection !== "lost") {
      state.connection = "lost";
      state.lostAt = Date.now();
      panel.setAttribute("data-connection", "lost");
    }
    showConnectionAlert();
    scheduleConnect();
  }

  function connectionRestored() {
    clearTimeout(state.retryTimer);
    state.retryTimer = null;
    if (state.connection === "lost") {
      state.connection = "up";
      state.retryAttempt = 0;
      panel.removeAttribute("data-connection");
    }
    clearAlert(["offline", "reconnecting"]);
    flushOutbox();
  }

  function refuseIdentity(error) {
    state.fatal = true;
    clearTimeout(state.retryTimer);
    subtitle.hidden = true;
    setComposerEnabled();
    showAlert("identity", t("identity", { detail: error.detail }));
  }

  // Session, conversation and history, then the event stream; when all are there, the outbox is sent.
  async function connect() {
    if (state.connecting || state.fatal) {
      return;
    }
    state.connecting = true;
    try {
      await start();
      await probeServer(REQUEST_TIMEOUT_MS); // start() may have nothing left to ask
      if (state.conversationId && !(await streamConnected())) {
        throw new ApiError("network", 0, t("offline"));
      }
      connectionRestored();
    } catch (error) {
      reportFailure(error);
    } finally {
      state.connecting = false;
    }
  }

  // A server that stops answering without closing the stream shows nothing by itself: ask it for news after a
  // silence, while someone is looking, even when other requests are still waiting for their (longer) timeout. A
  // lost connection is connect()'s to retry.
  async function checkLiveness() {
    const watched = state.open && !document.hidden && state.token && !state.fatal;
    const silent = Date.now() - state.lastContact >= LIVENESS_SILENCE_MS;
    if (!watched || !silent || state.probing || state.connection !== "up") {
      return;
    }
    state.probing = true;
    try {
      await probeServer(LIVENESS_TIMEOUT_MS);
    } catch (error) {
      reportFailure(error);
    } finally {
      state.probing = false;
    }
  }

  // --- session and conversation ---------------------------------------------------------------------------------
  function forgetSession() {
    closeStream();
    state.token = null;
    state.started = null;
    forgetConversation();
  }

  function forgetConversation() {
    closeStream();
    state.conversationId = null;
    state.lastEventId = null;
    state.loaded = false;
    state.started = null;
    clearMessages();
    setStatus("bot");
    saveStored();
  }

  async function ensureSession() {
    if (state.token) {
      return;
    }
    const body = {};
    if (customerId) {
      body.external_id = customerId;
      body.identity_hmac = settings.customerHash ? String(settings.customerHash) : null;
    }
    if (settings.name) {
      body.name = String(settings.name);
    }
    if (settings.email) {
      body.email = String(settings.email);
    }
    const session = await api("POST", "/api/widget/sessions", { body, anonymous: true });
    state.token = session.token;
    saveStored();
  }

  // The stored conversation (even a closed one, to show how it ended), else the latest open one, else a new one
  // when a message needs it. Its history is loaded before its event stream starts.
  async function ensureConversation(create) {
    if (state.conversationId && state.loaded) {
      return;
    }
    const conversations = (await api("GET", "/api/widget/conversations")) ?? [];
    let current = conversations.find((conversation) => conversation.id === state.conversationId) ??
      conversations.find((conversation) => conversation.status !== "closed");
    if (!current && create) {
      current = await api("POST", "/api/widget/conversations", { body: { title: "" } });
    }
    state.conversationId = current ? current.id : null;
    saveStored();
    if (!current) {
      return;
    }
    setStatus(current.status);
    await loadHistory();
    connectStream();
    await streamReady(); // so that the live reply to the first message is not missed
  }

  async function loadHistory() {
    addMessages(await api("GET", `${conversationPath()}/messages`));
    state.loaded = true;
    keepScrolled(true);
  }

  async function refreshStatus() {
    const conversations = await api("GET", "/api/widget/conversations");
    const current = (conversations ?? []).find((conversation) => conversation.id === state.conversationId);
    if (current) {
      setStatus(current.status);
    }
  }

  // The lightest request that proves the server answers; in a conversation it also fetches anything missed.
  function probeServer(timeoutMs) {
    if (state.conversationId) {
      return fillGap(timeoutMs);
    }
    return api("GET", "/api/widget/conversations", { timeoutMs });
  }

  async function fillGap(timeoutMs = REQUEST_TIMEOUT_MS) {
    if (!state.conversationId) {
      return;
    }
    const newest = newestId();
    const query = newest === null ? "" : `?after=${encodeURIComponent(newest)}`;
    addMessages(await api("GET", `${conversationPath()}/messages${query}`, { timeoutMs }), newest);
  }

  function start() {
    if (!state.started) {
      const started = (async () => {
        await ensureSession();
        await ensureConversation(false);
        state.loaded = true;
      })();
      started.catch(() => {
        if (state.started === started) {
          state.started = null; // the next attempt starts over
        }
      });
      state.started = started;
    }
    return state.started;
  }

  // --- live events ----------------------------------------------------------------------------------------------
  function releaseStreamWaiters(opened) {
    for (const resolve of state.streamWaiters.splice(0)) {
      resolve(opened);
    }
  }

  function closeStream() {
    state.stream?.close();
    state.stream = null;
    state.streamOpen = false;
    releaseStreamWaiters(false);
  }

  // Resolves true once the stream is open, false when it closes or STREAM_OPEN_WAIT_MS have passed.
  function streamReady() {
    if (state.streamOpen || !state.stream) {
      return Promise.resolve(state.streamOpen);
    }
    return new Promise((resolve) => {
      state.streamWaiters.push(resolve);
      setTimeout(() => resolve(false), STREAM_OPEN_WAIT_MS);
    });
  }

  // A stream opened since the connection was lost is live. One the browser is reopening (it sends Last-Event-ID)
  // is given STREAM_OPEN_WAIT_MS, once; anything else, or a reopening that did not finish in that time, is replaced.
  function streamConnected() {
    if (state.streamOpen && state.streamOpenedAt >= state.lostAt) {
      return Promise.resolve(true);
    }
    const reopening = state.stream?.readyState === EventSource.CONNECTING;
    if (reopening && state.streamGivenTime !== state.stream) {
      state.streamGivenTime = state.stream;
    } else {
      connectStream();
    }
    return streamReady();
  }

  function connectStream() {
    closeStream();
    if (!state.conversationId || !state.token) {
      return;
    }
    let url = `${base}${conversationPath()}/events?token=${encodeURIComponent(state.token)}`;
    if (state.lastEventId) {
      url += `&since=${encodeURIComponent(state.lastEventId)}`;
    }
    const stream = new EventSource(url);
    state.stream = stream;
    stream.addEventListener("open", () => {
      if (state.stream !== stream) {
        return;
      }
      state.streamOpen = true;
      state.streamOpenedAt = Date.now();
      state.lastContact = state.streamOpenedAt;
      releaseStreamWaiters(true);
      fillGap().then(connectionRestored, reportFailure); // what was missed while it was away
    });
    stream.addEventListener("error", () => {
      if (state.stream !== stream) {
        return;
      }
      state.streamOpen = false;
      if (stream.readyState === EventSource.CLOSED) {
        closeStream(); // the browser gave up (an HTTP error): connect() opens a new one
      }
      connectionLost();
    });
    for (const type of STREAM_EVENTS) {
      stream.addEventListener(type, (event) => {
        if (state.stream === stream) {
          onStreamEvent(type, event);
        }
      });
    }
  }

  async function resync() {
    clearDraft();
    try {
      addMessages(await api("GET", `${conversationPath()}/messages`));
      await refreshStatus();
    } catch (error) {
      reportFailure(error);
    }
  }

  function onStreamEvent(type, event) {
    state.lastContact = Date.now();
    if (event.lastEventId) {
      state.lastEventId = event.lastEventId;
    }
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    if (type === "message.created") {
      if (data.conversation_id !== state.conversationId) {
        return;
      }
      if (data.role === "assistant") {
        clearDraft(); // the complete message replaces what was streamed
      }
      addMessage(data);
    } else if (type === "message.delta") {
      appendDraft(data.text);
    } else if (type === "typing") {
      setTyping(Boolean(data.on), data.who);
    } else if (type === "conversation.status") {
      setStatus(data.status);
    } else if (type === "resync") {
      resync();
    }
  }

  // --- opening, closing, sending --------------------------------------------------------------------------------
  function open() {
    if (state.open) {
      return;
    }
    state.open = true;
    state.unread = 0;
    panel.hidden = false;
    host.setAttribute("data-open", "");
    updateLauncher();
    saveStored();
    scroller.scrollTop = scroller.scrollHeight;
    (input.disabled ? closeButton : input).focus();
    connect();
  }

  function close() {
    if (!state.open) {
      return;
    }
    state.open = false;
    panel.hidden = true;
    host.removeAttribute("data-open");
    updateLauncher();
    saveStored();
    launcher.focus();
  }

  launcher.addEventListener("click", () => (state.open ? close() : open()));
  closeButton.addEventListener("click", close);
  root.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && state.open) {
      event.preventDefault();
      close();
    }
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text || input.disabled) {
      return;
    }
    input.value = "";
    fitInput();
    clearAlert(["send"]);
    queueMessage(text);
    input.focus();
  });
  input.addEventListener("input", fitInput);
  input.addEventListener("input", signalTyping);
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      sendButton.click();
    }
  });
  askPersonButton.addEventListener("click", () => {
    if (askPersonButton.disabled) {
      return;
    }
    askPersonButton.hidden = true; // one press is enough; the status banner takes over
    clearAlert(["send"]);
    queueMessage(t("askPersonMessage"), true);
  });
  ratingScores.forEach((button) => button.addEventListener("click", () => chooseScore(Number(button.dataset.score))));
  ratingSend.addEventListener("click", sendRating);
  ratingSkip.addEventListener("click", () => {
    state.declinedRating = state.conversationId;
    saveStored();
    ratingForm.hidden = true;
  });
  ratingChange.addEventListener("click", () => {
    ratingDone.hidden = true;
    ratingForm.hidden = false;
  });
  endChatButton.addEventListener("click", () => {
    endChatButton.hidden = true;
    askPersonButton.hidden = true; // one question at a time
    endChatConfirm.hidden = false;
    endChatNo.focus();
  });
  endChatNo.addEventListener("click", () => {
    endChatConfirm.hidden = true;
    askPersonButton.hidden = state.status !== "bot";
    showEndChat();
    endChatButton.focus();
  });
  endChatYes.addEventListener("click", endChat);
  newConversationButton.addEventListener("click", () => {
    forgetConversation();
    input.focus();
    flushOutbox(); // whatever waited for the closed conversation goes to the new one
  });
  window.addEventListener("online", () => {
    if (!state.open && !state.conversationId) {
      return; // never used on this page: no session is created for a visitor who did not open the chat
    }
    clearTimeout(state.retryTimer); // the network is back: try now rather than at the end of a backoff
    state.retryTimer = null;
    state.retryAttempt = 0;
    connect();
  });

  function mount() {
    document.body.append(host);
    state.outbox.forEach(renderPending);
    updateLauncher();
    setComposerEnabled();
    setInterval(checkLiveness, LIVENESS_TICK_MS);
    if (state.open) {
      state.open = false;
      open();
    } else if (state.token && state.conversationId) {
      connect(); // follow the conversation, so new replies show as unread
    }
  }

  window.memdeskWidget = { open, close, renderMarkdown };
  if (document.body) {
    mount();
  } else {
    document.addEventListener("DOMContentLoaded", mount);
  }
})();
