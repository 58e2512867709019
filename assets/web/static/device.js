// The web console on a device (issue 31): the service worker that makes it an installable app,
// the "Install" hint where the browser offers one, telling the server while a page is in view
// (no push comes meanwhile), the installed app's device sign-in, and the notifications page,
// where this device asks to be told and the token's devices are listed.
// The browser's permission to notify is asked only on that page's button.
"use strict";

(() => {
  const csrf = () => document.querySelector('meta[name="csrf-token"]')?.content || "";
  const signedIn = document.body.dataset.signedIn === "1";
  const $ = (selector) => document.querySelector(selector);

  if ("serviceWorker" in navigator) {
    navigator.serviceWorker.register("/sw.js").catch(() => {});
    // What this device was told (its service worker's list) belongs to the sign-in that was
    // told: it is forgotten on signing out, and on any page seen signed out.
    const forget = () => navigator.serviceWorker.ready
      .then((registration) => registration.active && registration.active.postMessage({type: "forget"}))
      .catch(() => {});
    if (!signedIn) forget();
    document.querySelector('form[action="/sign-out"]')?.addEventListener("submit", forget);
  }

  // -- the install hint ----------------------------------------------------------------------

  let offered = null;
  window.addEventListener("beforeinstallprompt", (event) => {
    event.preventDefault();
    offered = event;
    const button = $("#install");
    if (button) button.hidden = false;
  });
  $("#install")?.addEventListener("click", async () => {
    if (!offered) return;
    const chosen = offered;
    offered = null;
    $("#install").hidden = true;
    await chosen.prompt();
  });
  window.addEventListener("appinstalled", () => { if ($("#install")) $("#install").hidden = true; });

  // -- posting -------------------------------------------------------------------------------

  async function post(url, body, keepalive = false) {
    try {
      const response = await fetch(url, {
        method: "POST",
        keepalive,
        headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf()},
        body: JSON.stringify(body),
      });
      const data = await response.json().catch(() => ({}));
      return {ok: response.ok, data};
    } catch (error) {
      return {ok: false, data: {detail: "The server could not be reached."}};
    }
  }

  // -- in view -------------------------------------------------------------------------------

  const PRESENCE_MS = 30000;  // store.push.telling.PRESENCE_SECONDS is 45
  // Each word carries when it was said: leaving one page and opening the next say "no longer"
  // and "in view" at once, and the server keeps the later one whichever arrives last.
  function present() {
    post("/actions/presence", {visible: document.visibilityState === "visible", at: Date.now()},
         document.visibilityState !== "visible");
  }
  if (signedIn && csrf()) {
    present();
    document.addEventListener("visibilitychange", present);
    window.addEventListener("pagehide",
      () => post("/actions/presence", {visible: false, at: Date.now()}, true));
    setInterval(() => { if (document.visibilityState === "visible") present(); }, PRESENCE_MS);
  }

  // -- the device's sign-in (store.access.devices) ----------------------------------------------

  // The installed app signs in as a device: a key pair made here, its private half kept by this
  // browser and never handed out (not extractable), its public half given with the token. A page
  // proves the device's use at most hourly by signing the server's challenge; each proof keeps
  // the sign-in 30 days more. A cookie copied elsewhere has no key, and proves nothing.
  const KEYS_DB = "roundtable-device";
  const PROVED = "roundtable.device.proved";
  const PROVE_EVERY_MS = 3600 * 1000;
  const CHALLENGE_PREFIX = "roundtable device proof ";  // store.access.devices.CHALLENGE_PREFIX
  const ECDSA = {name: "ECDSA", namedCurve: "P-256"};

  const installed = () => ["standalone", "minimal-ui", "fullscreen"].some(
    (mode) => window.matchMedia(`(display-mode: ${mode})`).matches) || navigator.standalone === true;

  function deviceKeys(mode, work) {
    return new Promise((resolve, reject) => {
      const opening = indexedDB.open(KEYS_DB, 1);
      opening.onupgradeneeded = () => opening.result.createObjectStore("keys");
      opening.onerror = () => reject(opening.error);
      opening.onsuccess = () => {
        const db = opening.result;
        const transaction = db.transaction("keys", mode);
        const request = work(transaction.objectStore("keys"));
        transaction.oncomplete = () => { db.close(); resolve(request ? request.result : undefined); };
        transaction.onerror = () => { db.close(); reject(transaction.error); };
      };
    });
  }

  const b64url = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

  function deviceName() {
    const agent = navigator.userAgent;
    const known = [[/iPhone/, "iPhone"], [/iPad/, "iPad"], [/Android/, "Android"],
                   [/Macintosh/, "Mac"], [/Windows/, "Windows"], [/Linux/, "Linux"]];
    const found = known.find(([pattern]) => pattern.test(agent));
    return `${found ? found[1] : "This device"}: the Roundtable app`;
  }

  const canKeep = () => window.indexedDB && window.crypto && window.crypto.subtle;
  const signingIn = document.querySelector('form[action="/sign-in"]');
  if (signingIn && installed() && canKeep()) {
    $("#device-fields").hidden = false;
    $("#device-name").value = deviceName();
    // Signing in waits for the key (a few milliseconds), or it would make a tab's sign-in.
    const submit = signingIn.querySelector('button[type="submit"]');
    submit.disabled = true;
    // Kept aside until the sign-in it is given with is made: a sign-in page left, or a wrong
    // token, leaves the device's key as it was.
    (async () => {
      const pair = await crypto.subtle.generateKey(ECDSA, false, ["sign", "verify"]);
      await deviceKeys("readwrite", (store) => store.put(pair, "pending"));
      $("#device-key").value = b64url(await crypto.subtle.exportKey("spki", pair.publicKey));
    })().catch(() => {}).finally(() => { submit.disabled = false; });  // no key: a tab's sign-in
  }

  // A new secret, and the proof the page's writes carry with it: this page's, and every other
  // open page's of this browser (they are told on a channel). Told of the outcome whatever it
  // is, so that no page waits on a renewal that is over.
  const renewals = window.BroadcastChannel ? new BroadcastChannel("roundtable-sign-in") : null;
  function renewed(proof) {
    if (typeof proof === "string") {
      document.querySelector('meta[name="csrf-token"]').content = proof;
      document.querySelectorAll('input[name="csrf"]').forEach((input) => { input.value = proof; });
    }
    document.dispatchEvent(new Event("roundtable:renewed"));
  }
  renewals?.addEventListener("message", (event) => {
    if (event.data?.type === "renewing") document.dispatchEvent(new Event("roundtable:renewing"));
    if (event.data?.type === "renewed") renewed(event.data.csrf);
  });

  const spkiOf = async (pair) => (pair && pair.publicKey
    ? b64url(await crypto.subtle.exportKey("spki", pair.publicKey)) : null);

  // The key the sign-in was given with is the device's (a key kept aside becomes it once its
  // sign-in is made); at most hourly, a proof of its use keeps the sign-in 30 days more.
  async function keepSignedIn() {
    const pending = await deviceKeys("readonly", (store) => store.get("pending"));
    const due = Date.now() - Number(localStorage.getItem(PROVED) || 0) > PROVE_EVERY_MS;
    if (!pending && !due) return;
    const asked = await post("/actions/device/challenge", {});
    if (!asked.ok || !asked.data.device) return;  // a tab's sign-in: nothing to prove
    if (pending) {
      const made = await spkiOf(pending) === asked.data.key;
      await deviceKeys("readwrite", (store) => {
        if (made) store.put(pending, "device");
        store.delete("pending");  // its sign-in made, or not made at all
      });
      if (made) {
        localStorage.setItem(PROVED, String(Date.now()));  // the sign-in was just made
        return;
      }
    }
    if (!due) return;
    const pair = await deviceKeys("readonly", (store) => store.get("device"));
    if (!pair || !pair.privateKey || await spkiOf(pair) !== asked.data.key) return;
    const words = new TextEncoder().encode(CHALLENGE_PREFIX + asked.data.challenge);
    const signature = await crypto.subtle.sign({name: "ECDSA", hash: "SHA-256"}, pair.privateKey, words);
    document.dispatchEvent(new Event("roundtable:renewing"));
    renewals?.postMessage({type: "renewing"});
    let proof = null;
    try {
      const proven = await post("/actions/device/proof", {signature: b64url(signature)});
      if (proven.ok && typeof proven.data.csrf === "string") {
        proof = proven.data.csrf;
        localStorage.setItem(PROVED, String(Date.now()));
      }
    } finally {
      renewed(proof);
      renewals?.postMessage({type: "renewed", csrf: proof});
    }
  }
  if (signedIn && csrf() && canKeep()) keepSignedIn().catch(() => {});

  // -- the notifications page ----------------------------------------------------------------

  const revokeState = $("#devices-state");
  document.querySelectorAll("[data-revoke-device]").forEach((button) => {
    button.addEventListener("click", async () => {
      const own = button.dataset.thisDevice === "1";
      const asked = own ? "Revoke this device's sign-in? It is signed out at once."
        : "Revoke that device's sign-in? It is signed out at once, and told so.";
      if (!window.confirm(asked)) return;
      const {ok, data} = await post("/actions/device/revoke", {device_id: button.dataset.revokeDevice});
      if (!ok) {
        revokeState.textContent = data.detail || "The sign-in was not revoked.";
        return;
      }
      if (own) {
        location.assign("/sign-in");
        return;
      }
      button.closest("tr").remove();
      revokeState.textContent = `Revoked the sign-in of ${data.revoked.name}.`;
    });
  });

  const panel = $("#push");
  if (!panel) return;
  const state = $("#push-state");
  const on = $("#push-on");
  const off = $("#push-off");
  const say = (words) => { state.textContent = words; };

  // What this device is told of is its own choice: kept on the device, shown as it was left.
  const CHOSEN = "roundtable.push.kinds";
  const boxes = () => Array.from(document.querySelectorAll('#push-kinds input[name="kind"]'));
  function kinds() {
    return boxes().filter((box) => box.checked).map((box) => box.value);
  }
  try {
    const kept = JSON.parse(localStorage.getItem(CHOSEN) || "null");
    if (Array.isArray(kept)) boxes().forEach((box) => { box.checked = kept.includes(box.value); });
  } catch (error) {
    // Nothing kept, or storage refused: every kind, as the page comes.
  }

  function keyBytes(base64url) {
    const text = atob(base64url.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(text, (char) => char.charCodeAt(0));
  }

  async function current() {
    const registration = await navigator.serviceWorker.ready;
    return {registration, subscription: await registration.pushManager.getSubscription()};
  }

  async function keep(subscription) {
    const {ok, data} = await post("/actions/push/subscribe", {...subscription.toJSON(), kinds: kinds()});
    if (!ok) {
      say(data.detail || "The server did not keep this device's subscription.");
      return false;
    }
    say(data.kinds.length ? "Notifications are on for this device."
      : "Notifications are on, but no kind of news is chosen: nothing will be told.");
    on.hidden = true;
    off.hidden = false;
    return true;
  }

  async function look() {
    if (!("serviceWorker" in navigator) || !("PushManager" in window) || !window.Notification) {
      say("This browser cannot be told: it has no Web Push. On an iPhone, add the console to the Home Screen first.");
      return;
    }
    if (!panel.dataset.pushKey) {
      say("This server cannot send pushes (it is read-only).");
      return;
    }
    if (Notification.permission === "denied") {
      say("This browser blocks notifications from this site: allow them in its site settings, then come back.");
      return;
    }
    const {subscription} = await current();
    if (subscription) {
      await keep(subscription);
    } else {
      say("Notifications are off for this device.");
      on.hidden = false;
      off.hidden = true;
    }
  }

  on.addEventListener("click", async () => {
    on.disabled = true;
    try {
      const allowed = await Notification.requestPermission();
      if (allowed !== "granted") {
        say("Notifications were not allowed; nothing was turned on.");
        return;
      }
      const {registration} = await current();
      const subscription = await registration.pushManager.subscribe({
        userVisibleOnly: true, applicationServerKey: keyBytes(panel.dataset.pushKey),
      });
      await keep(subscription);
    } catch (error) {
      say(`This browser could not subscribe: ${error && error.message ? error.message : error}`);
    } finally {
      on.disabled = false;
    }
  });

  off.addEventListener("click", async () => {
    const {subscription} = await current();
    if (subscription) {
      await post("/actions/push/unsubscribe", {endpoint: subscription.endpoint});
      await subscription.unsubscribe();
    }
    say("Notifications are off for this device.");
    on.hidden = false;
    off.hidden = true;
  });

  document.querySelector("#push-kinds")?.addEventListener("change", async () => {
    try {
      localStorage.setItem(CHOSEN, JSON.stringify(kinds()));
    } catch (error) {
      // Storage refused: the server still keeps the choice for this subscription.
    }
    const {subscription} = await current();
    if (subscription) await keep(subscription);
  });

  // -- what this device was told (its service worker keeps it, a day) ------------------------

  function toldLastDay() {
    return new Promise((resolve) => {
      navigator.serviceWorker.ready.then((registration) => {
        const channel = new MessageChannel();
        channel.port1.onmessage = (event) => resolve(Array.isArray(event.data) ? event.data : []);
        registration.active.postMessage({type: "told"}, [channel.port2]);
      }).catch(() => resolve([]));
      setTimeout(() => resolve([]), 3000);
    });
  }

  function ownPage(value) {
    try {
      const url = new URL(String(value), location.origin);
      const path = url.pathname + url.search + url.hash;
      return url.origin === location.origin && !path.startsWith("//") ? path : null;
    } catch (error) {
      return null;
    }
  }

  async function showTold() {
    const list = $("#push-told");
    if (!list || !("serviceWorker" in navigator)) return;
    const told = await toldLastDay();
    list.replaceChildren();
    $("#push-told-none").hidden = told.length > 0;
    for (const entry of told) {
      const item = document.createElement("li");
      const when = document.createElement("time");
      when.dateTime = new Date(entry.at).toISOString();
      when.textContent = new Date(entry.at).toLocaleTimeString([], {hour: "2-digit", minute: "2-digit"});
      const title = document.createElement(ownPage(entry.url) ? "a" : "strong");
      if (title.tagName === "A") title.href = ownPage(entry.url);
      title.textContent = String(entry.title);
      const body = document.createElement("span");
      body.textContent = String(entry.body);
      const state = document.createElement("span");
      state.className = "sub";
      state.textContent = entry.answered ? `answered: ${entry.answered}` : "open";
      item.append(when, " ", title, " ", body, " ", state);
      list.append(item);
    }
  }

  look();
  showTold();
})();
