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
 * Lifecycle: the script draws a launcher button inside a shadow root (the host page's styles never reach it).
 * Opening the panel starts a visitor session (POST /api/widget/sessions; the token is kept in localStorage, one per
 * site and customer, so a reload keeps the history), loads the latest open conversation and its messages, and
 * follows its server-sent events (message.created, message.delta, typing, conversation.status, resync).
 *
 * Resilience: every message and event carries an id. Messages are rendered once per id, so replays and reloads
 * never duplicate anything. The browser's EventSource reconnects by itself and sends Last-Event-ID; when it gives
 * up (an HTTP error) the widget reconnects with ?since=<last id>. After every (re)connection the messages after the
 * newest one shown are fetched, which closes any gap; a resync event reloads the whole list. Messages typed while
 * the server is unreachable wait in an outbox (kept in localStorage) and are sent in order, one at a time; after a
 * network failure the server's list is checked first, so a message that did arrive is never sent twice.
 *
 * Safety: customer text is only ever set with textContent. Bot and agent replies go through renderMarkdown, which
 * builds DOM nodes from a few Markdown constructs and never parses HTML; links must be http(s) or mailto.
 */
(function () {
  "use strict";

  if (window.memdeskWidget) {
    return; // the tag was included twice
  }

  var REQUEST_TIMEOUT_MS = 15000;
  var STREAM_OPEN_WAIT_MS = 3000;
  var RETRY_MIN_MS = 1000;
  var RETRY_MAX_MS = 15000;
  var DEFAULT_RETRY_AFTER_S = 10;
  var NEAR_BOTTOM_PX = 80;
  var INPUT_BORDER_PX = 2;
  var MAX_INLINE_DEPTH = 4;
  var STORAGE_PREFIX = "memdesk:v1:";
  var SAFE_PROTOCOLS = ["http:", "https:", "mailto:"];
  var STREAM_EVENTS = ["message.created", "message.delta", "typing", "conversation.status", "resync"];
  var SVG_NS = "http://www.w3.org/2000/svg";

  var STRINGS = {
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
      agent: "Support team",
      system: "Notice",
      typing: "The assistant is typing…",
      needsHuman: "A person from our team will join this conversation shortly.",
      human: "You are chatting with a member of our team.",
      closed: "This conversation is closed.",
      newConversation: "Start a new conversation",
      sending: "Sending…",
      queued: "Not sent yet: waiting for the connection.",
      held: "Not sent yet: waiting until you can send again.",
      offline: "Can't reach the support server. Your messages will be sent as soon as the connection is back.",
      reconnecting: "Connection lost; reconnecting…",
      rateLimited: "You are sending messages too quickly. Your message will be sent in {n} s.",
      notSent: "Your message was not sent: {detail}",
      identity: "We could not verify your account, so the chat is unavailable. {detail} Reload the page or sign in again.",
      unavailable: "The chat is unavailable right now: {detail}",
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
      agent: "Support-Team",
      system: "Hinweis",
      typing: "Der Assistent schreibt…",
      needsHuman: "Eine Person aus unserem Team übernimmt dieses Gespräch in Kürze.",
      human: "Sie schreiben mit einer Person aus unserem Team.",
      closed: "Dieses Gespräch ist beendet.",
      newConversation: "Neues Gespräch beginnen",
      sending: "Wird gesendet…",
      queued: "Noch nicht gesendet: warte auf die Verbindung.",
      held: "Noch nicht gesendet: warte, bis wieder gesendet werden kann.",
      offline: "Der Support-Server ist nicht erreichbar. Ihre Nachrichten werden gesendet, sobald die Verbindung wieder steht.",
      reconnecting: "Verbindung unterbrochen; verbinde neu…",
      rateLimited: "Sie senden zu schnell. Ihre Nachricht wird in {n} s gesendet.",
      notSent: "Ihre Nachricht wurde nicht gesendet: {detail}",
      identity: "Ihr Konto konnte nicht bestätigt werden, daher ist der Chat nicht verfügbar. {detail} Laden Sie die Seite neu oder melden Sie sich erneut an.",
      unavailable: "Der Chat ist gerade nicht verfügbar: {detail}",
    },
  };

  // --- configuration ------------------------------------------------------------------------------------------
  var script = document.currentScript || document.querySelector("script[data-memdesk-site]");
  var scriptSrc = script && script.src ? script.src : location.href;
  var base = (script && script.getAttribute("data-memdesk-base")) ||
    scriptSrc.replace(/\/widget\.js(?:[?#].*)?$/, "");
  if (base === scriptSrc) {
    base = new URL(scriptSrc).origin;
  }
  base = base.replace(/\/+$/, "");
  var site = (script && script.getAttribute("data-memdesk-site")) || "default";
  var settings = window.memdeskSettings && typeof window.memdeskSettings === "object" ? window.memdeskSettings : {};
  var customerId = settings.customerId != null && settings.customerId !== "" ? String(settings.customerId) : null;
  var locale = String(settings.locale || document.documentElement.lang || "en").toLowerCase().slice(0, 2);
  var strings = STRINGS[locale] || STRINGS.en;

  function t(key, values) {
    var text = strings[key] || STRINGS.en[key] || key;
    return text.replace(/\{(\w+)\}/g, function (_, name) {
      return values && values[name] != null ? String(values[name]) : "";
    });
  }

  // --- storage (one record per site and customer; memory only when localStorage is unavailable) ---------------
  var storageKey = STORAGE_PREFIX + site + ":" + (customerId ? "customer:" + customerId : "guest");
  var memoryStore = {};

  function loadStored() {
    var raw = null;
    try {
      raw = window.localStorage.getItem(storageKey);
    } catch (error) {
      raw = memoryStore[storageKey] || null;
    }
    try {
      var value = raw ? JSON.parse(raw) : null;
      return value && typeof value === "object" ? value : {};
    } catch (error) {
      return {};
    }
  }

  function saveStored() {
    var record = {
      token: state.token,
      hash: settings.customerHash || null,
      conversationId: state.conversationId,
      open: state.open,
      outbox: state.outbox.map(function (item) {
        return { localId: item.localId, text: item.text, afterId: item.afterId, state: item.state };
      }),
    };
    var raw = JSON.stringify(record);
    try {
      window.localStorage.setItem(storageKey, raw);
    } catch (error) {
      memoryStore[storageKey] = raw;
    }
  }

  var stored = loadStored();
  if (customerId && stored.hash !== (settings.customerHash || null)) {
    stored = {}; // the shop vouches differently now: never reuse a token obtained with another proof
  }

  var state = {
    token: stored.token || null,
    conversationId: stored.conversationId || null,
    status: "bot",
    open: !!stored.open,
    started: null, // the promise of start(), once running
    fatal: false, // identity refused: nothing more to try
    rendered: new Map(), // message id -> element
    claimed: new Set(), // server message ids that confirmed an outbox item
    maxId: 0,
    lastEventId: null,
    stream: null,
    streamOpen: false,
    streamWaiters: [],
    reconnectTimer: null,
    reconnectDelay: RETRY_MIN_MS,
    // Restored messages are "uncertain": the server's list is checked before sending them, in case the attempt
    // before the reload arrived, or another tab of this site sent them meanwhile.
    outbox: (Array.isArray(stored.outbox) ? stored.outbox : []).map(function (item) {
      return { localId: item.localId, text: String(item.text), afterId: item.afterId || 0, state: "uncertain",
        element: null };
    }),
    flushing: false,
    flushTimer: null,
    flushDelay: RETRY_MIN_MS,
    blockedUntil: 0,
    countdownTimer: null,
    draft: null,
    draftText: "",
    typing: false,
    unread: 0,
    loaded: false,
  };

  // --- DOM helpers --------------------------------------------------------------------------------------------
  function h(tag, attributes, children) {
    var element = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (name) {
      var value = attributes[name];
      if (value == null || value === false) {
        return;
      }
      if (name === "text") {
        element.textContent = String(value);
      } else if (name === "class") {
        element.className = value;
      } else {
        element.setAttribute(name, value === true ? "" : String(value));
      }
    });
    (children || []).forEach(function (child) {
      if (child != null) {
        element.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
      }
    });
    return element;
  }

  function icon(pathData) {
    var svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    var path = document.createElementNS(SVG_NS, "path");
    path.setAttribute("d", pathData);
    svg.appendChild(path);
    return svg;
  }

  // --- safe Markdown --------------------------------------------------------------------------------------------
  // Every piece of text becomes a text node; elements come only from this fixed list, attributes only from code.
  var INLINE_PATTERN = [
    "(`+)([^`][\\s\\S]*?)\\1(?!`)", // 1, 2: inline code
    "!?\\[([^\\[\\]\\n]+)\\]\\(\\s*<?([^\\s()<>]+)>?\\s*\\)", // 3, 4: link (an image becomes a link)
    "\\*\\*(?=\\S)([\\s\\S]*?\\S)\\*\\*", // 5: bold
    "__(?=\\S)([\\s\\S]*?\\S)__", // 6: bold
    "\\*(?![\\s*])([^*\\n]*?[^\\s*])\\*", // 7: italics
    "(?<![A-Za-z0-9_])_(?![\\s_])([^_\\n]*?[^\\s_])_(?![A-Za-z0-9_])", // 8: italics
    "(https?:\\/\\/[^\\s<>\"'`]*[^\\s<>\"'`.,;:!?)\\]])", // 9: bare URL
  ].join("|");

  function safeUrl(raw) {
    var url;
    try {
      url = new URL(raw); // relative URLs throw: a reply has no base to resolve them against
    } catch (error) {
      return null;
    }
    return SAFE_PROTOCOLS.indexOf(url.protocol) >= 0 ? url.href : null;
  }

  function link(href) {
    return h("a", { href: href, target: "_blank", rel: "noopener noreferrer" });
  }

  function renderInline(text, parent, depth, inLink) {
    if (depth > MAX_INLINE_DEPTH) {
      parent.appendChild(document.createTextNode(text));
      return;
    }
    var pattern = new RegExp(INLINE_PATTERN, "g");
    var last = 0;
    var match;
    while ((match = pattern.exec(text)) !== null) {
      if (match.index > last) {
        parent.appendChild(document.createTextNode(text.slice(last, match.index)));
      }
      last = pattern.lastIndex;
      var href = match[4] !== undefined ? safeUrl(match[4]) : match[9] !== undefined ? safeUrl(match[9]) : null;
      if (match[2] !== undefined) {
        parent.appendChild(h("code", { text: match[2] }));
      } else if (match[3] !== undefined && href && !inLink) {
        var anchor = link(href);
        renderInline(match[3], anchor, depth + 1, true);
        parent.appendChild(anchor);
      } else if (match[9] !== undefined && href && !inLink) {
        parent.appendChild(link(href)).textContent = match[9];
      } else if (match[5] !== undefined || match[6] !== undefined) {
        var strong = h("strong");
        renderInline(match[5] !== undefined ? match[5] : match[6], strong, depth + 1, inLink);
        parent.appendChild(strong);
      } else if (match[7] !== undefined || match[8] !== undefined) {
        var em = h("em");
        renderInline(match[7] !== undefined ? match[7] : match[8], em, depth + 1, inLink);
        parent.appendChild(em);
      } else {
        parent.appendChild(document.createTextNode(match[0])); // a refused link stays visible as plain text
      }
    }
    if (last < text.length) {
      parent.appendChild(document.createTextNode(text.slice(last)));
    }
  }

  function listItem(line) {
    var match = /^\s{0,3}[-*+]\s+(.*)$/.exec(line);
    if (match) {
      return { ordered: false, text: match[1] };
    }
    match = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/.exec(line);
    return match ? { ordered: true, start: parseInt(match[1], 10), text: match[2] } : null;
  }

  function isFence(line) {
    return /^\s*```/.test(line);
  }

  function renderMarkdown(source) {
    var fragment = document.createDocumentFragment();
    var lines = String(source == null ? "" : source).replace(/\r\n?/g, "\n").split("\n");
    var index = 0;
    while (index < lines.length) {
      var line = lines[index];
      if (!line.trim()) {
        index += 1;
        continue;
      }
      if (isFence(line)) {
        var code = [];
        index += 1;
        while (index < lines.length && !isFence(lines[index])) {
          code.push(lines[index]);
          index += 1;
        }
        index += 1;
        fragment.appendChild(h("pre", null, [h("code", { text: code.join("\n") })]));
        continue;
      }
      var heading = /^\s{0,3}#{1,6}\s+(.*)$/.exec(line);
      if (heading) {
        var strong = h("strong");
        renderInline(heading[1].replace(/\s#+\s*$/, ""), strong, 0, false);
        fragment.appendChild(h("p", null, [strong]));
        index += 1;
        continue;
      }
      var first = listItem(line);
      if (first) {
        var list = h(first.ordered ? "ol" : "ul", first.ordered && first.start !== 1 ? { start: first.start } : null);
        var item = null;
        while (index < lines.length) {
          var next = listItem(lines[index]);
          if (next && next.ordered === first.ordered) {
            item = h("li");
            renderInline(next.text, item, 0, false);
            list.appendChild(item);
          } else if (!next && item && /^\s+\S/.test(lines[index])) {
            item.appendChild(h("br"));
            renderInline(lines[index].trim(), item, 0, false);
          } else {
            break;
          }
          index += 1;
        }
        fragment.appendChild(list);
        continue;
      }
      var paragraph = h("p");
      var lineCount = 0;
      while (index < lines.length && lines[index].trim() && !listItem(lines[index]) && !isFence(lines[index])) {
        if (lineCount > 0) {
          paragraph.appendChild(h("br"));
        }
        renderInline(lines[index].trim(), paragraph, 0, false);
        lineCount += 1;
        index += 1;
      }
      fragment.appendChild(paragraph);
    }
    return fragment;
  }

  // --- HTTP -----------------------------------------------------------------------------------------------------
  function ApiError(kind, status, detail, retryAfter) {
    this.kind = kind; // "network" (no answer, or a timeout) or "http"
    this.status = status;
    this.detail = detail;
    this.retryAfter = retryAfter;
  }

  function retryAfterSeconds(response, detail) {
    var header = parseInt(response.headers.get("Retry-After") || "", 10);
    if (header > 0) {
      return header;
    }
    var inText = /(\d+)\s*second/.exec(detail || ""); // Retry-After is not readable cross-origin without CORS
    return inText ? parseInt(inText[1], 10) : DEFAULT_RETRY_AFTER_S;
  }

  async function api(method, path, body, options) {
    var headers = { Accept: "application/json" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
    }
    if (state.token && !(options && options.anonymous)) {
      headers.Authorization = "Bearer " + state.token;
    }
    var controller = new AbortController();
    var timer = setTimeout(function () {
      controller.abort();
    }, REQUEST_TIMEOUT_MS);
    var response;
    try {
      response = await fetch(base + path, {
        method: method,
        headers: headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
        credentials: "omit",
        cache: "no-store",
      });
    } catch (error) {
      throw new ApiError("network", 0, t("offline"), 0);
    } finally {
      clearTimeout(timer);
    }
    var data = null;
    try {
      data = await response.json();
    } catch (error) {
      data = null;
    }
    if (!response.ok) {
      var detail = data && typeof data.detail === "string" ? data.detail : "HTTP " + response.status;
      throw new ApiError("http", response.status, detail, retryAfterSeconds(response, detail));
    }
    return data;
  }

  function isTransient(error) {
    return error.kind === "network" || error.status >= 500 || error.status === 408;
  }

  // --- the interface --------------------------------------------------------------------------------------------
  var host = h("div", { id: "memdesk-widget", "data-memdesk-site": site });
  host.style.display = "none"; // until the stylesheet has loaded: no unstyled flash
  var root = host.attachShadow({ mode: "open" });
  var stylesheet = h("link", { rel: "stylesheet", href: base + "/widget.css" });
  stylesheet.addEventListener("load", function () {
    host.style.display = "";
  });
  stylesheet.addEventListener("error", function () {
    host.style.display = "";
  });

  var title = settings.title ? String(settings.title) : t("title");
  var launcher = h("button", { type: "button", class: "launcher", "aria-expanded": "false",
    "aria-controls": "memdesk-panel", "aria-label": t("open") }, [
    icon("M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z"),
  ]);
  var badge = h("span", { class: "badge", hidden: true, "aria-hidden": "true" });
  launcher.appendChild(badge);

  var closeButton = h("button", { type: "button", class: "close", "aria-label": t("close") }, [
    icon("M6.4 5 5 6.4 10.6 12 5 17.6 6.4 19 12 13.4 17.6 19 19 17.6 13.4 12 19 6.4 17.6 5 12 10.6z"),
  ]);
  var subtitle = h("p", { class: "subtitle", hidden: true });
  if (customerId && settings.name) {
    subtitle.textContent = t("signedIn", { name: settings.name });
    subtitle.hidden = false;
  }
  var banner = h("p", { class: "banner", role: "status", hidden: true });
  var newConversationButton = h("button", { type: "button", class: "link-button", hidden: true,
    text: t("newConversation") });
  var greeting = h("p", { class: "greeting", text: settings.greeting ? String(settings.greeting) : t("greeting") });
  var log = h("ol", { class: "log", role: "log", "aria-live": "polite", "aria-relevant": "additions",
    "aria-label": title });
  var typingIndicator = h("div", { class: "typing", role: "status", hidden: true }, [
    h("span", { class: "dot", "aria-hidden": "true" }), h("span", { class: "dot", "aria-hidden": "true" }),
    h("span", { class: "dot", "aria-hidden": "true" }), h("span", { class: "sr-only", text: t("typing") }),
  ]);
  var draftSlot = h("div", { class: "draft-slot" });
  var pendingList = h("ol", { class: "pending", "aria-label": t("sending") });
  var scroller = h("div", { class: "scroller", tabindex: "0" }, [
    greeting, log, draftSlot, typingIndicator, pendingList,
  ]);
  var alertBox = h("div", { class: "alert", role: "alert", hidden: true });
  var input = h("textarea", { id: "memdesk-input", rows: "1", placeholder: t("placeholder"), autocomplete: "off",
    "aria-describedby": "memdesk-hint" });
  var sendButton = h("button", { type: "submit", class: "send", "aria-label": t("send") }, [
    icon("M3 20.5 21 12 3 3.5 3 10l12 2-12 2z"),
  ]);
  var form = h("form", { class: "composer", novalidate: true }, [
    h("label", { for: "memdesk-input", class: "sr-only", text: t("inputLabel") }),
    input, sendButton,
    h("span", { id: "memdesk-hint", class: "sr-only", text: t("hint") }),
  ]);
  var panel = h("section", { id: "memdesk-panel", class: "panel", role: "dialog", "aria-modal": "false",
    "aria-labelledby": "memdesk-title", hidden: true, lang: strings === STRINGS.en ? "en" : locale }, [
    h("header", { class: "header" }, [
      h("div", { class: "heading" }, [h("h2", { id: "memdesk-title", text: title }), subtitle]),
      closeButton,
    ]),
    h("div", { class: "notices" }, [banner, newConversationButton]),
    scroller, alertBox, form,
  ]);
  root.appendChild(stylesheet);
  root.appendChild(h("div", { class: "widget" }, [panel, launcher]));

  function fitInput() {
    input.style.height = ""; // grows with its text up to the stylesheet's max-height, then scrolls
    input.style.height = input.scrollHeight + INPUT_BORDER_PX + "px";
  }

  function nearBottom() {
    return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < NEAR_BOTTOM_PX;
  }

  function keepScrolled(wasNearBottom) {
    if (wasNearBottom) {
      scroller.scrollTop = scroller.scrollHeight;
    }
  }

  var alertState = { kind: null };

  function showAlert(kind, text) {
    alertState.kind = kind;
    alertBox.textContent = text;
    alertBox.hidden = false;
  }

  function clearAlert(kinds) {
    if (alertState.kind && (!kinds || kinds.indexOf(alertState.kind) >= 0)) {
      alertState.kind = null;
      alertBox.hidden = true;
      alertBox.textContent = "";
    }
  }

  function updateLauncher() {
    launcher.setAttribute("aria-expanded", state.open ? "true" : "false");
    var label = state.open ? t("close") : state.unread ? t("openUnread", { n: state.unread }) : t("open");
    launcher.setAttribute("aria-label", label);
    badge.textContent = state.unread ? String(state.unread) : "";
    badge.hidden = !state.unread || state.open;
  }

  function setComposerEnabled() {
    var enabled = !state.fatal && state.status !== "closed";
    input.disabled = !enabled;
    sendButton.disabled = !enabled;
  }

  function setStatus(status) {
    state.status = status || "bot";
    var text = { needs_human: t("needsHuman"), human: t("human"), closed: t("closed") }[state.status];
    banner.textContent = text || "";
    banner.hidden = !text;
    banner.className = "banner banner--" + state.status;
    newConversationButton.hidden = state.status !== "closed";
    setComposerEnabled();
  }

  // --- messages -------------------------------------------------------------------------------------------------
  function parseTime(value) {
    var text = String(value || "");
    if (text && !/(Z|[+-]\d\d:?\d\d)$/.test(text)) {
      text += "Z"; // the server stores UTC
    }
    var date = new Date(text);
    return isNaN(date.getTime()) ? null : date;
  }

  function authorLabel(message) {
    if (message.author === "customer") {
      return t("you");
    }
    if (message.author === "agent") {
      return message.agent_name ? message.agent_name + " · " + t("agent") : t("agent");
    }
    return message.author === "bot" ? t("bot") : t("system");
  }

  function messageElement(message) {
    var kind = message.author === "customer" ? "customer" : message.author === "agent" ? "agent" :
      message.author === "bot" ? "bot" : "system";
    var body = h("div", { class: "body" });
    if (kind === "customer" || kind === "system") {
      body.textContent = message.content; // the customer's own text is never interpreted
    } else {
      body.appendChild(renderMarkdown(message.content));
    }
    var when = parseTime(message.created_at);
    return h("li", { class: "msg msg--" + kind, "data-id": message.id }, [
      h("span", { class: kind === "customer" ? "author sr-only" : "author", text: authorLabel(message) }),
      body,
      when ? h("time", { class: "time", datetime: when.toISOString(),
        text: when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) }) : null,
    ]);
  }

  function isVisible(message) {
    return message && typeof message.id === "number" && !message.private &&
      (message.role === "user" || message.role === "assistant") && String(message.content || "").trim() !== "";
  }

  function addMessage(message) {
    if (!isVisible(message) || state.rendered.has(message.id)) {
      return;
    }
    if (message.author === "customer") {
      confirmOutbox(message);
    }
    var wasNearBottom = nearBottom();
    var element = messageElement(message);
    state.rendered.set(message.id, element);
    var before = null;
    if (message.id < state.maxId) { // a gap being filled: keep id order
      var ids = Array.from(state.rendered.keys()).filter(function (id) {
        return id > message.id;
      });
      before = ids.length ? state.rendered.get(Math.min.apply(null, ids)) : null;
    }
    log.insertBefore(element, before);
    state.maxId = Math.max(state.maxId, message.id);
    if (state.loaded && !state.open && message.author !== "customer") {
      state.unread += 1;
      updateLauncher();
    }
    keepScrolled(wasNearBottom || message.author === "customer");
  }

  function clearMessages() {
    log.replaceChildren();
    state.rendered.clear();
    state.claimed.clear();
    state.maxId = 0;
    clearDraft();
  }

  function appendDraft(text) {
    var wasNearBottom = nearBottom();
    state.draftText += String(text || "");
    if (!state.draft) {
      state.draft = h("div", { class: "msg msg--bot msg--draft", "aria-hidden": "true" }, [
        h("span", { class: "author", text: t("bot") }), h("div", { class: "body" }),
      ]);
      draftSlot.appendChild(state.draft);
    }
    state.draft.lastChild.replaceChildren(renderMarkdown(state.draftText));
    typingIndicator.hidden = true;
    keepScrolled(wasNearBottom);
  }

  function clearDraft() {
    if (state.draft) {
      state.draft.remove();
    }
    state.draft = null;
    state.draftText = "";
    typingIndicator.hidden = !state.typing;
  }

  function setTyping(on) {
    var wasNearBottom = nearBottom();
    state.typing = on;
    if (!on) {
      clearDraft();
    }
    typingIndicator.hidden = !on || !!state.draft;
    keepScrolled(wasNearBottom);
  }

  // --- outbox: messages wait here until the server has them -----------------------------------------------------
  function renderPending(item) {
    if (state.outbox.indexOf(item) < 0) {
      return; // already confirmed by the server
    }
    var text = item.state === "sending" ? t("sending") : state.blockedUntil > Date.now() ? t("held") : t("queued");
    if (!item.element) {
      item.element = h("li", { class: "msg msg--customer msg--pending", "data-local-id": item.localId }, [
        h("span", { class: "author sr-only", text: t("you") }),
        h("div", { class: "body", text: item.text }),
        h("span", { class: "pending-state" }),
      ]);
      pendingList.appendChild(item.element);
    }
    item.element.lastChild.textContent = text;
    item.element.classList.toggle("msg--waiting", item.state !== "sending");
  }

  function dropFromOutbox(item) {
    var position = state.outbox.indexOf(item);
    if (position >= 0) {
      state.outbox.splice(position, 1);
    }
    if (item.element) {
      item.element.remove();
      item.element = null;
    }
    saveStored();
  }

  // A customer message from the server may be one the outbox is unsure about (the answer to its POST was lost).
  function confirmOutbox(message) {
    if (state.claimed.has(message.id)) {
      return;
    }
    var text = String(message.content).trim();
    var match = state.outbox.find(function (item) {
      return item.state !== "queued" && item.text.trim() === text && message.id > item.afterId;
    });
    if (match) {
      state.claimed.add(message.id);
      dropFromOutbox(match);
    }
  }

  function queueMessage(text) {
    var item = { localId: Date.now().toString(36) + Math.random().toString(36).slice(2, 8), text: text,
      afterId: state.maxId, state: "queued", element: null };
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
    var tick = function () {
      var left = Math.ceil((state.blockedUntil - Date.now()) / 1000);
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
    var wait = state.blockedUntil - Date.now();
    if (wait > 0) {
      scheduleFlush(wait);
      return;
    }
    state.flushing = true;
    var sessionRenewed = false;
    try {
      while (state.outbox.length && !state.fatal && state.status !== "closed") {
        var item = state.outbox[0];
        try {
          await start();
        } catch (error) {
          return; // start() reports its own failure and tries again later
        }
        try {
          if (item.state === "uncertain") {
            await fillGap(); // did the lost attempt arrive after all? then confirmOutbox has dropped it
            if (state.outbox[0] !== item) {
              continue;
            }
          }
          await ensureConversation(true);
          item.state = "sending";
          renderPending(item);
          saveStored();
          var message = await api("POST", "/api/widget/conversations/" + state.conversationId + "/messages",
            { content: item.text });
          state.claimed.add(message.id);
          dropFromOutbox(item);
          addMessage(message);
          state.flushDelay = RETRY_MIN_MS;
          clearAlert(["offline", "send"]);
        } catch (error) {
          if (!(error instanceof ApiError)) {
            throw error;
          }
          if (state.outbox.indexOf(item) < 0) {
            continue; // the answer was lost, but the message arrived: its event already confirmed it
          }
          if (isTransient(error)) {
            item.state = item.state === "sending" ? "uncertain" : item.state;
            renderPending(item);
            saveStored();
            showAlert("offline", t("offline"));
            scheduleFlush(state.flushDelay);
            state.flushDelay = Math.min(state.flushDelay * 2, RETRY_MAX_MS);
            return;
          }
          if (error.status === 429) {
            item.state = "queued";
            state.blockedUntil = Date.now() + error.retryAfter * 1000;
            renderPending(item);
            showRateLimitCountdown();
            scheduleFlush(error.retryAfter * 1000);
            return;
          }
          if (error.status === 401 && !sessionRenewed) {
            sessionRenewed = true; // the token expired or the server's key changed: one new session
            forgetSession();
            continue;
          }
          if (error.status === 404 && !sessionRenewed) {
            sessionRenewed = true;
            forgetConversation();
            continue;
          }
          if (error.status === 409) {
            setStatus("closed");
            return;
          }
          // 413, 422 and other refusals: the message cannot be sent as it is; give it back for editing.
          dropFromOutbox(item);
          if (!input.value.trim()) {
            input.value = item.text;
            fitInput();
          }
          showAlert("send", t("notSent", { detail: error.detail }));
        }
      }
    } finally {
      state.flushing = false;
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
    clearMessages();
    setStatus("bot");
    saveStored();
  }

  async function ensureSession() {
    if (state.token) {
      return;
    }
    var body = {};
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
    var session = await api("POST", "/api/widget/sessions", body, { anonymous: true });
    state.token = session.token;
    saveStored();
  }

  // The stored conversation (even a closed one, to show how it ended), else the latest open one, else a new one
  // when a message needs it. Its history is loaded before its event stream starts.
  async function ensureConversation(create) {
    if (state.conversationId && state.loaded) {
      return;
    }
    var conversations = (await api("GET", "/api/widget/conversations")) || [];
    var current = conversations.find(function (conversation) {
      return conversation.id === state.conversationId;
    }) || conversations.find(function (conversation) {
      return conversation.status !== "closed";
    });
    if (!current && create) {
      current = await api("POST", "/api/widget/conversations", { title: "" });
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
    var messages = await api("GET", "/api/widget/conversations/" + state.conversationId + "/messages");
    (messages || []).forEach(addMessage);
    state.loaded = true;
    keepScrolled(true);
  }

  async function refreshStatus() {
    var conversations = await api("GET", "/api/widget/conversations");
    var current = (conversations || []).find(function (conversation) {
      return conversation.id === state.conversationId;
    });
    if (current) {
      setStatus(current.status);
    }
  }

  async function fillGap() {
    if (!state.conversationId) {
      return;
    }
    var path = "/api/widget/conversations/" + state.conversationId + "/messages?after_id=" + state.maxId;
    (await api("GET", path) || []).forEach(addMessage);
  }

  function start() {
    if (!state.started) {
      state.started = (async function () {
        await ensureSession();
        await ensureConversation(false);
        state.loaded = true;
        clearAlert(["offline"]);
      })();
      state.started.catch(function (error) {
        state.started = null;
        handleStartError(error);
      });
    }
    return state.started;
  }

  function handleStartError(error) {
    if (!(error instanceof ApiError)) {
      throw error;
    }
    if (error.status === 401 && customerId && !state.token) {
      state.fatal = true; // the shop's proof was refused: retrying cannot help, and falling back to a guest would
      subtitle.hidden = true; // let the customer believe they are signed in
      setComposerEnabled();
      showAlert("identity", t("identity", { detail: error.detail }));
    } else if (error.status === 401) {
      forgetSession();
      scheduleRestart();
    } else if (error.status === 404) {
      forgetConversation();
      scheduleRestart();
    } else if (isTransient(error)) {
      showAlert("offline", t("offline"));
      scheduleRestart();
    } else {
      showAlert("unavailable", t("unavailable", { detail: error.detail }));
    }
  }

  function scheduleRestart() {
    clearTimeout(state.reconnectTimer);
    state.reconnectTimer = setTimeout(function () {
      start().then(flushOutbox, function () {});
    }, state.reconnectDelay);
    state.reconnectDelay = Math.min(state.reconnectDelay * 2, RETRY_MAX_MS);
  }

  // --- live events ----------------------------------------------------------------------------------------------
  function closeStream() {
    if (state.stream) {
      state.stream.close();
    }
    state.stream = null;
    state.streamOpen = false;
  }

  function streamReady() {
    if (state.streamOpen || !state.stream) {
      return Promise.resolve();
    }
    return new Promise(function (resolve) {
      state.streamWaiters.push(resolve);
      setTimeout(resolve, STREAM_OPEN_WAIT_MS);
    });
  }

  function connectStream() {
    closeStream();
    clearTimeout(state.reconnectTimer);
    if (!state.conversationId || !state.token) {
      return;
    }
    var url = base + "/api/widget/conversations/" + state.conversationId + "/events?token=" +
      encodeURIComponent(state.token);
    if (state.lastEventId) {
      url += "&since=" + encodeURIComponent(state.lastEventId);
    }
    var stream = new EventSource(url);
    state.stream = stream;
    stream.addEventListener("open", function () {
      if (state.stream !== stream) {
        return;
      }
      state.streamOpen = true;
      state.reconnectDelay = RETRY_MIN_MS;
      clearAlert(["offline", "reconnecting"]);
      state.streamWaiters.splice(0).forEach(function (resolve) {
        resolve();
      });
      fillGap().catch(function () {});
      flushOutbox();
    });
    stream.addEventListener("error", function () {
      if (state.stream !== stream) {
        return;
      }
      state.streamOpen = false;
      if (alertState.kind !== "offline") {
        showAlert("reconnecting", t("reconnecting"));
      }
      if (stream.readyState === EventSource.CLOSED) { // the browser gave up (an HTTP error): retry ourselves
        closeStream();
        clearTimeout(state.reconnectTimer);
        state.reconnectTimer = setTimeout(reconnect, state.reconnectDelay);
        state.reconnectDelay = Math.min(state.reconnectDelay * 2, RETRY_MAX_MS);
      }
    });
    STREAM_EVENTS.forEach(function (type) {
      stream.addEventListener(type, function (event) {
        if (state.stream === stream) {
          onStreamEvent(type, event);
        }
      });
    });
  }

  async function reconnect() {
    try {
      await fillGap(); // also tells a lost session (401) or conversation (404) from a server that is down
      connectStream();
    } catch (error) {
      if (error.status === 401) {
        forgetSession();
        start().then(flushOutbox, function () {});
      } else if (error.status === 404) {
        forgetConversation();
      } else {
        showAlert("offline", t("offline"));
        state.reconnectTimer = setTimeout(reconnect, state.reconnectDelay);
        state.reconnectDelay = Math.min(state.reconnectDelay * 2, RETRY_MAX_MS);
      }
    }
  }

  async function resync() {
    clearDraft();
    try {
      var messages = await api("GET", "/api/widget/conversations/" + state.conversationId + "/messages");
      (messages || []).forEach(addMessage);
      await refreshStatus();
    } catch (error) {
      showAlert("offline", t("offline"));
    }
  }

  function onStreamEvent(type, event) {
    if (event.lastEventId) {
      state.lastEventId = event.lastEventId;
    }
    var data;
    try {
      data = JSON.parse(event.data);
    } catch (error) {
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
      setTyping(!!data.on);
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
    start().then(flushOutbox, function () {});
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

  launcher.addEventListener("click", function () {
    if (state.open) {
      close();
    } else {
      open();
    }
  });
  closeButton.addEventListener("click", close);
  root.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && state.open) {
      event.preventDefault();
      close();
    }
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var text = input.value.trim();
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
  input.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      sendButton.click();
    }
  });
  newConversationButton.addEventListener("click", function () {
    forgetConversation();
    input.focus();
    flushOutbox(); // whatever waited for the closed conversation goes to the new one
  });
  window.addEventListener("online", function () {
    state.flushDelay = RETRY_MIN_MS;
    flushOutbox();
    if (state.conversationId && !state.stream) {
      reconnect();
    }
  });

  function mount() {
    document.body.appendChild(host);
    state.outbox.forEach(renderPending);
    updateLauncher();
    setComposerEnabled();
    if (state.open) {
      state.open = false;
      open();
    } else if (state.token && state.conversationId) {
      start().then(flushOutbox, function () {}); // follow the conversation, so new replies show as unread
    }
  }

  window.memdeskWidget = { open: open, close: close, renderMarkdown: renderMarkdown };
  if (document.body) {
    mount();
  } else {
    document.addEventListener("DOMContentLoaded", mount);
  }
})();
