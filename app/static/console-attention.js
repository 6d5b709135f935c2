/*
 * memdesk console: what needs this staff member, on every page.
 *
 * - The tab title and the icon carry the number of conversations waiting for them (GET /console/attention:
 *   handoffs nobody has taken, and new customer messages in conversations assigned to them).
 * - The number is read again on every console event (the stream the inbox follows, /console/events; the inbox page
 *   already has it open, other pages open their own), at most once a second, and once a minute in any case, so a
 *   lost event costs a minute at most.
 * - A new item (a handoff, or a new message) is announced once per browser tab: a browser notification when the
 *   member turned them on in their settings and the browser allows it, and a short tone when they turned the sound
 *   on. What was there when the tab first opened the console is not announced (sessionStorage keeps what was).
 * - On the settings page, turning notifications on asks the browser for its permission; the browser remembers the
 *   answer, so it is asked once.
 */
(() => {
  "use strict";

  const THROTTLE_MS = 1000;
  const POLL_MS = 60000;
  const SEEN_KEY = "memdesk.attention.seen";
  const SEEN_KEPT = 200;
  const body = document.body;
  const baseTitle = document.title;
  const icon = document.querySelector('link[rel="icon"]');
  const baseIcon = icon ? icon.href : null;
  let pending = null;
  let lastRead = 0;

  const wants = (name) => body.dataset[name] === "1";

  function seenKeys() {
    try {
      const stored = sessionStorage.getItem(SEEN_KEY);
      return stored === null ? null : new Set(JSON.parse(stored));
    } catch {
      return null;
    }
  }

  function keepSeen(keys) {
    try {
      sessionStorage.setItem(SEEN_KEY, JSON.stringify(Array.from(keys).slice(-SEEN_KEPT)));
    } catch {
      // Storage refused (a private window): announcements may repeat on the next page, nothing else changes.
    }
  }

  function showCount(count) {
    document.title = count > 0 ? `(${count}) ${baseTitle}` : baseTitle;
    if (!icon || !baseIcon) {
      return;
    }
    if (count === 0) {
      icon.href = baseIcon;
      return;
    }
    const image = new Image();
    image.onload = () => {
      const canvas = document.createElement("canvas");
      canvas.width = 32;
      canvas.height = 32;
      const pen = canvas.getContext("2d");
      pen.drawImage(image, 0, 0, 32, 32);
      pen.fillStyle = "#d92d20";
      pen.beginPath();
      pen.arc(22, 10, 10, 0, 2 * Math.PI);
      pen.fill();
      pen.fillStyle = "#ffffff";
      pen.font = "bold 14px sans-serif";
      pen.textAlign = "center";
      pen.textBaseline = "middle";
      pen.fillText(count > 9 ? "9+" : String(count), 22, 11);
      icon.href = canvas.toDataURL("image/png");
    };
    image.src = baseIcon;
  }

  function tone() {
    const Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) {
      return;
    }
    const audio = new Context();
    const oscillator = audio.createOscillator();
    const gain = audio.createGain();
    oscillator.frequency.value = 880;
    gain.gain.value = 0.08;
    oscillator.connect(gain).connect(audio.destination);
    oscillator.start();
    oscillator.stop(audio.currentTime + 0.15);
    oscillator.onended = () => audio.close();
  }

  function notify(item) {
    if (!wants("notifyDesktop") || !("Notification" in window) || Notification.permission !== "granted") {
      return;
    }
    const title = item.kind === "handoff" ? `${item.customer} needs a person` : `New message from ${item.customer}`;
    // eslint-disable-next-line compat/compat -- checked above: iOS Safari before 16.4 has no Notification
    const shown = new Notification(title, { body: item.preview, tag: item.key });
    shown.onclick = () => {
      window.focus();
      window.location.href = `/console/conversations/${item.conversation}`;
    };
  }

  function announce(items) {
    const seen = seenKeys();
    const keys = items.map((item) => item.key);
    if (seen === null) {
      keepSeen(keys);
      return;
    }
    const fresh = items.filter((item) => !seen.has(item.key));
    fresh.forEach(notify);
    if (fresh.length && wants("notifySound")) {
      tone();
    }
    keys.forEach((key) => seen.add(key));
    keepSeen(seen);
  }

  async function read() {
    lastRead = Date.now();
    try {
      const response = await fetch("/console/attention", { headers: { Accept: "application/json" } });
      if (!response.ok) {
        return;
      }
      const found = await response.json();
      showCount(found.count);
      announce(found.items);
    } catch {
      // Offline or signed out: the next event or the minute's poll reads again.
    }
  }

  function soon() {
    if (pending !== null) {
      return;
    }
    const wait = Math.max(0, lastRead + THROTTLE_MS - Date.now());
    pending = window.setTimeout(() => {
      pending = null;
      read();
    }, wait);
  }

  function follow() {
    if (document.querySelector('[sse-connect="/console/events"]')) {
      document.addEventListener("sse:inbox", soon);
    } else if ("EventSource" in window) {
      new EventSource("/console/events").addEventListener("inbox", soon);
    }
    window.setInterval(read, POLL_MS);
    read();
  }

  function askOnSettingsPage() {
    const box = document.getElementById("notify-desktop");
    const note = document.getElementById("notify-permission");
    if (!box || !note) {
      return;
    }
    const explain = () => {
      // eslint-disable-next-line compat/compat -- checked first: iOS Safari before 16.4 has no Notification
      const state = "Notification" in window ? Notification.permission : "unsupported";
      note.hidden = state === "granted";
      note.textContent = {
        denied: "This browser blocks notifications from the console; allow them in its site settings.",
        default: "The browser will ask whether the console may show notifications.",
        unsupported: "This browser cannot show notifications.",
      }[state] || "";
    };
    box.addEventListener("change", () => {
      if (box.checked && "Notification" in window && Notification.permission === "default") {
        Notification.requestPermission().then(explain);
      }
      explain();
    });
    explain();
  }

  follow();
  askOnSettingsPage();
})();
