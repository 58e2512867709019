// The Roundtable web console's service worker (served at /sw.js; the server puts SHELL, the
// app's own files, and CACHE, named after their hashes, above this). It keeps the app's shell
// for a fast start and an honest offline page, never a session's data: every page is asked of
// the network, and only when the network fails is the offline page shown. It shows the pushes
// the server sends (api.notify.notifier), closes one when its news was answered elsewhere
// (api.notify.follow_up), says once when the device's sign-in ended, and opens the session a
// tapped notification names.
"use strict";

const OFFLINE = "/offline";

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    const names = await caches.keys();
    await Promise.all(names.filter((name) => name !== CACHE).map((name) => caches.delete(name)));
    // A page is asked of the network while this worker starts, not after: no added wait.
    if (self.registration.navigationPreload) await self.registration.navigationPreload.enable();
    await self.clients.claim();
  })());
});

async function page(event) {
  try {
    const preloaded = await event.preloadResponse;
    return preloaded || await fetch(event.request);
  } catch (error) {
    return (await caches.match(OFFLINE)) || Response.error();
  }
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin) return;
  if (url.pathname.startsWith("/static/")) {
    event.respondWith(caches.match(request).then((kept) => kept || fetch(request)));
  } else if (request.mode === "navigate") {
    event.respondWith(page(event));
  }
});

// A page of this server only: a push names where to go, never another site (the URL resolved
// as the browser will, its origin compared, then only its path, query and fragment kept).
function ownPath(value) {
  if (typeof value !== "string" || !value.startsWith("/")) return "/sessions";
  try {
    const url = new URL(value, self.location.origin);
    const path = url.pathname + url.search + url.hash;
    // "/.//evil.example" resolves to the path "//evil.example", another site once resolved again.
    return url.origin === self.location.origin && !path.startsWith("//") ? path : "/sessions";
  } catch (error) {
    return "/sessions";
  }
}

function text(value, fallback) {
  return typeof value === "string" && value ? value.slice(0, 300) : fallback;
}

// What this device was told, kept a day in its own IndexedDB (the server keeps no list per
// device): the notifications page asks for it with a message.
const TOLD_DB = "roundtable-told";
const DAY_MS = 24 * 3600 * 1000;

function told(mode, work) {
  return new Promise((resolve, reject) => {
    const opening = indexedDB.open(TOLD_DB, 1);
    opening.onupgradeneeded = () => opening.result.createObjectStore("told", {autoIncrement: true});
    opening.onerror = () => reject(opening.error);
    opening.onsuccess = () => {
      const db = opening.result;
      const transaction = db.transaction("told", mode);
      const request = work(transaction.objectStore("told"));
      transaction.oncomplete = () => { db.close(); resolve(request ? request.result : undefined); };
      transaction.onerror = () => { db.close(); reject(transaction.error); };
    };
  });
}

function eachTold(store, visit, done = () => {}) {
  const walking = store.openCursor();
  walking.onsuccess = () => {
    const cursor = walking.result;
    if (!cursor) {
      done();
      return;
    }
    visit(cursor);
    cursor.continue();
  };
}

function remember(news) {
  const oldest = Date.now() - DAY_MS;
  const entry = {at: Date.now(), kind: text(news.kind, ""), title: text(news.title, "Roundtable"),
                 body: text(news.body, ""), url: ownPath(news.url),
                 tag: text(news.tag, "roundtable"), answered: null};
  const same = (kept) => !kept.answered && ["kind", "title", "body", "tag"].every(
    (field) => kept[field] === entry[field]);
  return told("readwrite", (store) => {
    let known = false;
    eachTold(store, (cursor) => {
      if (!(cursor.value.at >= oldest)) cursor.delete();
      else if (same(cursor.value)) known = true;  // the same notice again: one line
    }, () => { if (!known) store.add(entry); });
  }).catch(() => null);
}

function markAnswered(tag, how) {
  return told("readwrite", (store) => {
    eachTold(store, (cursor) => {
      if (cursor.value.tag === tag && !cursor.value.answered) {
        cursor.update({...cursor.value, answered: how});
      }
    });
  }).catch(() => null);
}

self.addEventListener("message", (event) => {
  if (event.data && event.data.type === "forget") {
    // Signed out: what this device was told is the last person's, not the next one's.
    event.waitUntil(told("readwrite", (store) => { store.clear(); }).catch(() => null));
    return;
  }
  const port = event.ports && event.ports[0];
  if (!port || !event.data || event.data.type !== "told") return;
  const oldest = Date.now() - DAY_MS;
  event.waitUntil(told("readonly", (store) => store.getAll())
    .then((all) => (all || []).filter((entry) => entry.at >= oldest).reverse())
    .catch(() => [])
    .then((list) => port.postMessage(list)));
});

self.addEventListener("push", (event) => {
  let news = {};
  try {
    news = event.data ? event.data.json() : {};
  } catch (error) {
    news = {};
  }
  if (news === null || typeof news !== "object") news = {};
  if (news.kind === "answered") {
    // Answered elsewhere (the request decided, the reply sent, the wait over): the notice of
    // that session is closed, and none is shown for it.
    const tag = text(news.tag, "roundtable");
    event.waitUntil(Promise.all([
      self.registration.getNotifications({tag}).then((shown) => shown.forEach((n) => n.close())),
      markAnswered(tag, text(news.how, "answered")),
    ]));
    return;
  }
  const shown = self.registration.showNotification(text(news.title, "Roundtable"), {
    body: text(news.body, "A session changed."),
    tag: text(news.tag, "roundtable"),
    icon: ICON,
    badge: ICON,
    requireInteraction: news.kind === "needs_you" || news.kind === "failed",
    data: {url: ownPath(news.url), kind: text(news.kind, "")},
  });
  // Signed out (the sign-in ended: expired, revoked): told once, and what this device was told
  // belonged to that sign-in.
  const kept = news.kind === "signed_out"
    ? told("readwrite", (store) => { store.clear(); }).catch(() => null) : remember(news);
  event.waitUntil(Promise.all([shown, kept]));
});

async function openPath(target) {
  const url = new URL(ownPath(target), self.location.origin).href;
  const windows = await self.clients.matchAll({type: "window", includeUncontrolled: true});
  const open = windows.find((client) => new URL(client.url).origin === self.location.origin);
  if (open) {
    const moved = (await open.navigate(url).catch(() => null)) || open;
    await moved.focus().catch(() => null);
    return moved;
  }
  return self.clients.openWindow(url);
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const opened = openPath(event.notification.data && event.notification.data.url);
  try {
    event.waitUntil(opened);
  } catch (error) {
    // An event the browser did not make cannot be waited for: the window opens all the same.
  }
});
