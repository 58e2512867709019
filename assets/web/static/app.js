// The Roundtable web console's one script: actions (each with its own Idempotency-Key, so a
// retry after a lost answer is safe), the terminate dialog, live updates from /live (rows and
// counts read again in place, never reordered under the reader), "more" rows, reveal, copy and
// the console's keys. Text from the server is only ever set as text; the HTML it inserts is the
// server's own rendering of its templates, escaped there.
"use strict";

(() => {
  // Read at each write: an installed app's proof of use renews the sign-in's secret, and the
  // proof its writes carry with it (static/device.js).
  const csrf = () => document.querySelector('meta[name="csrf-token"]')?.content || "";
  const operator = document.body.dataset.operator === "1";
  const $ = (selector, root = document) => root.querySelector(selector);
  const $$ = (selector, root = document) => Array.from(root.querySelectorAll(selector));
  const enc = encodeURIComponent;
  const LABELS = {heartbeat: "Heartbeat", pause: "Pause", stop: "Stop", resume: "Resume",
                  terminate: "Terminate", launch: "Start", "stop-agent": "Stop agent"};

  // -- telling the operator ------------------------------------------------------------------

  function say(text, {problem = false, actions = [], where = "#notice"} = {}) {
    const box = $(where) || $("#notice");
    box.replaceChildren();
    box.classList.toggle("problem", problem);
    const words = document.createElement("span");
    words.textContent = text;
    box.append(words);
    for (const [label, run] of actions) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "quiet small";
      button.textContent = label;
      button.addEventListener("click", () => { box.hidden = true; run(); });
      box.append(button);
    }
    box.hidden = false;
  }

  function newKey() {
    if (crypto.randomUUID) return "web-" + crypto.randomUUID();
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return "web-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  async function getJSON(url) {
    const response = await fetch(url, {headers: {Accept: "application/json"}});
    const data = await response.json().catch(() => ({}));
    if (response.status === 401) signedOut();
    return {ok: response.ok, status: response.status, data};
  }

  function signedOut() {
    say("Your sign-in ended.", {problem: true, actions: [["Sign in", () => {
      location.href = "/sign-in?next=" + enc(location.pathname + location.search);
    }]]});
  }

  // -- the dialog ----------------------------------------------------------------------------

  const dialog = $("#dialog");
  let onConfirm = null;
  let opener = null;  // what had the focus: it has it again when the dialog closes

  // The dialog holds the focus: Tab from its last control comes back to its first (the page
  // behind is inert while it is open), shift+Tab the other way.
  dialog?.addEventListener("keydown", (event) => {
    if (event.key !== "Tab") return;
    const stops = $$("button, input, textarea, select, a[href], [tabindex]", dialog)
      .filter((element) => !element.hidden && !element.disabled && element.offsetParent !== null
              && element.tabIndex >= 0);
    if (!stops.length) return;
    const first = stops[0];
    const last = stops[stops.length - 1];
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  });
  dialog?.addEventListener("close", () => {
    let back = opener;
    opener = null;
    if (back && !back.isConnected && back.dataset?.action) {
      // The page was read again meanwhile: the same action's button, where it is now.
      back = $(`[data-action="${CSS.escape(back.dataset.action)}"][data-session="${CSS.escape(back.dataset.session || "")}"]`);
    }
    if (back && back.isConnected && typeof back.focus === "function") back.focus();
  });

  function openDialog({title, content, confirm = "Confirm", danger = false, run = null}) {
    $("#dialog-title").textContent = title;
    const body = $("#dialog-content");
    body.replaceChildren();
    if (typeof content === "string") {
      const p = document.createElement("p");
      p.textContent = content;
      body.append(p);
    } else if (content) {
      body.append(content);
    }
    $("#dialog-error").hidden = true;
    const button = $("#dialog-confirm");
    button.textContent = confirm;
    button.hidden = run === null;
    button.classList.toggle("act-terminate", danger);
    onConfirm = run;
    if (!dialog.open) {
      opener = document.activeElement;
      dialog.showModal();
    }
    (body.querySelector("textarea, input") || button).focus();
  }

  function serverHTML(html) {
    // The server's own rendering (its templates escape every value).
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content;
  }

  $("#dialog-cancel")?.addEventListener("click", () => dialog.close());
  dialog?.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!onConfirm) { dialog.close(); return; }
    const problem = await onConfirm();
    if (problem) {
      const error = $("#dialog-error");
      error.textContent = problem;
      error.hidden = false;
    } else {
      dialog.close();
    }
  });

  // -- actions -------------------------------------------------------------------------------

  function versionOf(sessionId) {
    const row = rowOf(sessionId);
    if (row) return row.dataset.version;
    const page = $("#session");
    return page && page.dataset.session === sessionId ? page.dataset.version : "";
  }

  // `then`: what follows once the action is done (a terminate that stops the agent too).
  async function send(sessionId, action, version, key, body, then = null) {
    let response;
    try {
      response = await fetch(`/actions/sessions/${enc(sessionId)}/${action}`, {
        method: "POST",
        headers: {"Content-Type": "application/json", "Idempotency-Key": key,
                  "X-CSRF-Token": csrf(), ...(version ? {"If-Match": String(version)} : {})},
        body: body ? JSON.stringify(body) : "",
      });
    } catch (error) {
      say(`No answer from the server about ${LABELS[action].toLowerCase()} ${sessionId}: ` +
          "it may or may not have been done. A retry is safe (it cannot apply twice).",
          {problem: true, actions: [["Retry", () => send(sessionId, action, version, key, body,
                                                          then)]]});
      return null;
    }
    const data = await response.json().catch(() => ({}));
    if (response.ok && action === "stop-agent") {
      say(`Sent ${data.signal} to the agent of ${sessionId}: ` +
          (data.exited ? "it exited." : "it has not exited yet."));
      await refreshSession(sessionId);
      return null;
    }
    if (response.ok && action === "launch") {
      say(`Started ${sessionId} on ${data.host} (it is ${data.session?.status}); ` +
          `there, ${data.attach} shows it.`);
      return null;
    }
    if (response.ok) {
      say(`${LABELS[action]}: ${sessionId} is now ${data.status}.`);
      await refreshSession(sessionId);
      return then ? then() : null;
    }
    if (response.status === 401) { signedOut(); return data.detail || "Sign in again."; }
    if (response.status === 409 && data.code === "session_transition_conflict") {
      say(`${sessionId} changed since this page read it (${data.detail || "a newer version"}).`,
          {problem: true, actions: [
            ["Refresh", () => refreshSession(sessionId)],
            ["Retry", async () => {
              await refreshSession(sessionId);
              send(sessionId, action, versionOf(sessionId), newKey(), body, then);
            }],
          ]});
      return null;
    }
    const words = `${data.title || "Refused"}: ${data.detail || response.status}`;
    say(words, {problem: true});
    return words;
  }

  async function act(sessionId, action) {
    if (!operator) return;
    const version = versionOf(sessionId);
    if (action === "terminate") return terminate(sessionId);
    if (action === "stop-agent") {
      openDialog({
        title: `Stop the agent of ${sessionId}?`,
        content: "Its process gets SIGINT where it runs, then SIGTERM if it has not exited " +
                 "10 seconds later. The session's status follows from what its hooks report.",
        confirm: "Stop agent", danger: true,
        run: async () => send(sessionId, action, "", newKey(), null),
      });
      return;
    }
    if (action === "launch") {
      openDialog({
        title: `Start ${sessionId} on its machine?`,
        content: "The session resumes, and its machine's host starts the agent in tmux there, " +
                 "continuing its own conversation with the briefing as its prompt.",
        confirm: "Start",
        run: async () => send(sessionId, action, version, newKey(), null),
      });
      return;
    }
    if (action === "stop" || action === "resume") {
      openDialog({
        title: `${LABELS[action]} ${sessionId}?`,
        content: action === "stop"
          ? "The session stops; it can be resumed later."
          : "The session resumes from where it was paused or stopped.",
        confirm: LABELS[action], danger: action === "stop",
        run: async () => { await send(sessionId, action, version, newKey(), null); return null; },
      });
      return;
    }
    await send(sessionId, action, version, newKey(), null);
  }

  async function terminate(sessionId) {
    const {ok, data} = await getJSON(`/fragments/sessions/${enc(sessionId)}/terminate`);
    if (!ok) { say(`${data.title || "Refused"}: ${data.detail || ""}`, {problem: true}); return; }
    const key = newKey();
    openDialog({
      title: `Terminate ${sessionId}?`, content: serverHTML(data.impact), confirm: "Terminate",
      danger: true,
      run: async () => {
        const details = ($("#impact-details")?.value || "").trim();
        if (data.requires_details && !details) {
          return "Say what terminating does to the agent's claims before terminating.";
        }
        const stopAgent = $("#impact-stop-agent")?.checked
          ? () => send(sessionId, "stop-agent", "", newKey(), null) : null;
        return send(sessionId, "terminate", data.version, key,
                    details ? {impact_details: details} : null, stopAgent);
      },
    });
  }

  // -- a selection of many (the console's marks) ---------------------------------------------

  // Ticked ids, or every session matching the list's filters less the unticked ones.
  const marks = {ids: new Set(), matching: false, except: new Set()};

  const isMarked = (id) => (marks.matching ? !marks.except.has(id) : marks.ids.has(id));
  const anyMarked = () => marks.matching || marks.ids.size > 0;

  function setMark(id, on) {
    if (marks.matching) { if (on) marks.except.delete(id); else marks.except.add(id); }
    else if (on) marks.ids.add(id);
    else marks.ids.delete(id);
  }

  function clearMarks() {
    marks.ids.clear();
    marks.except.clear();
    marks.matching = false;
    showMarks();
  }

  function showMarks() {
    const boxes = $$("input.mark");
    for (const box of boxes) {
      box.checked = isMarked(box.dataset.session);
      box.closest("tr")?.classList.toggle("marked", box.checked);
    }
    const shown = $("#mark-shown");
    if (shown) {
      const ticked = boxes.filter((box) => box.checked).length;
      shown.checked = boxes.length > 0 && ticked === boxes.length;
      shown.indeterminate = ticked > 0 && ticked < boxes.length;
    }
    const bar = $("#bulk-bar");
    if (!bar) return;
    bar.hidden = false;
    const count = marks.ids.size;
    $("#bulk-count").textContent = marks.matching
      ? "Every session matching the filters" +
        (marks.except.size ? `, less ${marks.except.size} unticked` : "") + " is selected"
      : count ? `${count} session${count === 1 ? "" : "s"} selected` : "No session selected";
    $(".actions", bar).hidden = !anyMarked();
    $("#mark-clear").hidden = !anyMarked();
    $("#mark-matching").hidden = marks.matching;
  }

  function selection() {
    if (!marks.matching) return {ids: Array.from(marks.ids)};
    const query = $("#bulk-bar").dataset.matching.split("?")[1] || "";
    return {matching: query, except: Array.from(marks.except)};
  }

  async function postJSON(url, body, key) {
    const response = await fetch(url, {
      method: "POST",
      headers: {"Content-Type": "application/json", "Idempotency-Key": key, "X-CSRF-Token": csrf()},
      body: JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    if (response.status === 401) signedOut();
    return {ok: response.ok, status: response.status, data};
  }

  async function bulkAct(action) {
    if (!operator || !anyMarked()) return;
    const key = newKey();
    const chosen = selection();
    let preview;
    try {
      preview = await postJSON(`/fragments/bulk/${action}`, chosen, key);
    } catch {
      say("No answer from the server: nothing was done.", {problem: true});
      return;
    }
    const {ok, data} = preview;
    if (!ok) { say(`${data.title || "Refused"}: ${data.detail || preview.status}`, {problem: true}); return; }
    openDialog({
      title: `${LABELS[action]} the selected sessions?`,
      content: serverHTML(data.preview),
      confirm: `${LABELS[action]} ${data.applies}`,
      danger: action === "stop" || action === "terminate",
      run: data.applies ? async () => {
        const details = ($("#impact-details")?.value || "").trim();
        if (action === "terminate" && data.requires_details && !details) {
          return "Say what terminating does to the agents' claims before terminating.";
        }
        return runBulk(action, chosen, key, details);
      } : null,
    });
  }

  async function runBulk(action, chosen, key, details) {
    const body = details ? {...chosen, impact_details: details} : chosen;
    const retry = ["Retry", () => runBulk(action, chosen, key, details)];
    let answer;
    try {
      answer = await postJSON(`/actions/bulk/${action}`, body, key);
    } catch {
      say(`No answer from the server about ${LABELS[action].toLowerCase()} on the selection: ` +
          "some may have been done. A retry is safe (what was done is replayed, never done twice).",
          {problem: true, actions: [retry]});
      return null;
    }
    const {ok, status, data} = answer;
    if (status === 401) return data.detail || "Sign in again.";
    if (!ok) return `${data.title || "Refused"}: ${data.detail || status}`;
    say(serverHTML(data.summary).textContent.trim(),
        {problem: Boolean(data.failed || data.error), actions: data.error ? [retry] : []});
    const acted = $$("input.mark").filter((box) => box.checked).map((box) => box.dataset.session);
    if (marks.matching) clearMarks();
    for (const id of data.applied || []) marks.ids.delete(id);
    showMarks();
    await refreshRows(acted);
    refreshCounts();
    return null;
  }

  // -- reading again in place ----------------------------------------------------------------

  function rowOf(sessionId) {
    return $(`tr.row[data-session="${CSS.escape(sessionId)}"]`);
  }

  // One read of rows at a time: ids asked for meanwhile are gathered for the next.
  // A read caused by a live batch names it (seq): pages reacting to the same batch, showing
  // the same rows, share one read on the server.
  // rowsSeq: undefined while nothing waits; null once a read that must not be shared waits
  // (after an action: a shared answer might predate it).
  const rowsWanted = new Set();
  let rowsReading = null;
  let rowsSeq;

  async function refreshRows(ids, seq = null) {
    for (const id of ids) if (rowOf(id)) rowsWanted.add(id);
    if (seq === null) rowsSeq = null;
    else if (rowsSeq !== null) rowsSeq = Math.max(rowsSeq ?? 0, seq);
    while (rowsReading) await rowsReading;
    if (!rowsWanted.size) return;
    const batch = Array.from(rowsWanted);
    const batchSeq = rowsSeq ?? null;
    rowsWanted.clear();
    rowsSeq = undefined;
    rowsReading = readRows(batch, batchSeq);
    try { await rowsReading; } finally { rowsReading = null; }
  }

  // Live changes re-read the rows in view at once; a row out of view when it comes into view,
  // when it is focused, or within OUT_OF_VIEW_MS (what a screen reader or a find in the page
  // meets is never older), so a phone is not sent the whole list twice a second.
  const OUT_OF_VIEW_MS = 3000;
  const inView = new Set();
  let lateSeq = null;
  let lateDue = null;
  const watcher = window.IntersectionObserver ? new IntersectionObserver((entries) => {
    const due = [];
    for (const entry of entries) {
      const id = entry.target.dataset.session;
      if (entry.isIntersecting) {
        inView.add(id);
        if (entry.target.dataset.stale === "1") due.push(id);
      } else {
        inView.delete(id);
      }
    }
    if (due.length) refreshRows(due);
  }) : null;

  function watchRows() {
    if (!watcher) return;
    for (const row of $$("tr.row")) watcher.observe(row);
  }

  function liveRows(ids, seq) {
    const now = [];
    let late = false;
    for (const id of ids) {
      const row = rowOf(id);
      if (!row) continue;
      if (!watcher || inView.has(id)) now.push(id);
      else { row.dataset.stale = "1"; late = true; }
    }
    if (now.length) refreshRows(now, seq);
    if (late) {
      lateSeq = seq;
      lateDue ??= setTimeout(() => {
        lateDue = null;
        const stale = $$('tr.row[data-stale="1"]').map((row) => row.dataset.session);
        if (stale.length) refreshRows(stale, lateSeq);
      }, OUT_OF_VIEW_MS);
    }
  }

  document.addEventListener("focusin", (event) => {
    const row = event.target.closest?.('tr.row[data-stale="1"]');
    if (row) refreshRows([row.dataset.session]);
  });

  async function readRows(shown, seq) {
    const query = (seq !== null ? `seq=${seq}&` : "") + shown.map((id) => "id=" + enc(id)).join("&");
    const {ok, data} = await getJSON("/fragments/rows?" + query);
    if (!ok) return;
    for (const [id, html] of Object.entries(data.rows)) {
      const row = rowOf(id);
      if (!row) continue;
      if (html === null) { row.classList.add("gone"); continue; }
      const fresh = serverHTML(html).firstElementChild;
      const focused = document.activeElement === row;
      watcher?.unobserve(row);
      row.replaceWith(fresh);
      watcher?.observe(fresh);
      if (focused) fresh.focus();
    }
    showMarks();
    relativeTimes();
  }

  let countsDue = null;
  function refreshCounts() {
    const table = $("#sessions");
    if (!table || countsDue) return;
    countsDue = setTimeout(async () => {
      countsDue = null;
      const {ok, data} = await getJSON(table.dataset.query);
      if (ok) $("#counts").replaceChildren(serverHTML(data.counts));
    }, 300);
  }

  const revealed = new Map();

  async function refreshSession(sessionId) {
    const page = $("#session");
    if (!page) { await refreshRows([sessionId]); refreshCounts(); return; }
    if (page.dataset.session !== sessionId) return;
    const after = page.dataset.lastEvent || "0";
    const {ok, data} = await getJSON(`/fragments/sessions/${enc(sessionId)}?after=${enc(after)}`);
    if (!ok) return;
    $("#session-head").replaceChildren(serverHTML(data.head));
    showRequests($("#requests"), data.requests);
    $("#fields").replaceChildren(serverHTML(data.fields));
    $("#projections").replaceChildren(serverHTML(data.projections));
    const history = $("#history");
    const atEnd = history.scrollTop + history.clientHeight >= history.scrollHeight - 4;
    for (const item of serverHTML(data.history).children) {
      if (!$(`li[data-event="${CSS.escape(item.dataset.event)}"]`, history)) history.append(item.cloneNode(true));
    }
    if (atEnd) history.scrollTop = history.scrollHeight;
    if (data.last_event_id !== null) page.dataset.lastEvent = data.last_event_id;
    page.dataset.version = data.version;
    for (const [name, value] of revealed) showRevealed(name, value);
    relativeTimes();
  }

  // -- permission requests -------------------------------------------------------------------

  // The requests read again are shown when they are not the ones shown: at once, unless the
  // operator is answering one (the focus in it, or a message typed), who is asked first.
  function showRequests(box, html) {
    if (!box || typeof html !== "string") return;
    const ids = (root) => Array.from(root.querySelectorAll("[data-request]"),
                                     (card) => card.dataset.request).join(" ");
    const fresh = serverHTML(html);
    const now = ids(fresh);
    if (now === ids(box)) return;
    const put = () => { box.replaceChildren(serverHTML(html)); relativeTimes(); };
    const busy = box.contains(document.activeElement) ||
      $$("textarea", box).some((area) => area.value.trim());
    if (!busy) { put(); return; }
    if (box.dataset.told === now) return;
    box.dataset.told = now;
    say("The permission requests changed since this page read them.",
        {actions: [["Show them", () => { delete box.dataset.told; put(); }]]});
  }

  // The fleet's requests page reads its list again when the store changed, at most once a
  // FLEET_MS (a fleet changes many times a second).
  const FLEET_MS = 1000;
  let fleetDue = null;
  function fleetChanged() {
    const box = $("#fleet-requests");
    if (!box || fleetDue) return;
    fleetDue = setTimeout(async () => {
      fleetDue = null;
      const {ok, data} = await getJSON(box.dataset.follow);
      if (ok) showRequests(box, data.html);
    }, FLEET_MS);
  }

  // -- live ----------------------------------------------------------------------------------

  // While a proof of use renews the sign-in's secret, the stream opened with the old one ends:
  // it is opened again with the new one, and that end is no sign-out.
  // A renewal is over within seconds: told of none, a page takes a stream's end as said.
  const RENEWING_MS = 10000;
  let renewingSince = 0;
  let stream = null;
  const renewing = () => Date.now() - renewingSince < RENEWING_MS;
  document.addEventListener("roundtable:renewing", () => { renewingSince = Date.now(); });
  document.addEventListener("roundtable:renewed", () => {
    renewingSince = 0;
    if (stream) {
      stream.close();
      live();
    }
  });

  function live() {
    const state = $("#live-state");
    if (!state || !window.EventSource) return;
    const setState = (name, words) => { state.dataset.state = name; state.textContent = words; };
    const source = new EventSource("/live");
    stream = source;
    source.addEventListener("open", () => setState("live", "Live"));
    source.addEventListener("error", () => setState("lost", "Live: reconnecting…"));
    source.addEventListener("signed-out", () => {
      source.close();
      if (renewing()) return;
      setState("off", "Live: off");
      signedOut();
    });
    source.addEventListener("changed", (event) => {
      setState("live", "Live");
      let changed, seq;
      try { ({ids: changed, seq} = JSON.parse(event.data)); } catch { return; }
      const ids = Object.keys(changed);
      const page = $("#session");
      if (page) {
        if (ids.includes(page.dataset.session)) refreshSession(page.dataset.session);
        return;
      }
      if ($("#fleet-requests")) { fleetChanged(); return; }
      if (!$("#sessions") && !$(".empty")) return;
      liveRows(ids, Number.isInteger(seq) ? seq : null);
      // A heartbeat changes no count; any other change may.
      if (ids.some((id) => changed[id].some((kind) => kind !== "heartbeat"))) refreshCounts();
      const fresh = ids.filter((id) => !rowOf(id) && changed[id].includes("registered"));
      if (fresh.length) {
        say(`${fresh.length} new session${fresh.length === 1 ? "" : "s"} since this page was read.`,
            {where: "#list-notice", actions: [["Show them", () => location.reload()]]});
      }
    });
  }

  // -- small things --------------------------------------------------------------------------

  function ago(seconds) {
    const whole = Math.floor(Math.abs(seconds));
    const amount = whole < 60 ? `${whole}s` : whole < 3600 ? `${Math.floor(whole / 60)}m`
      : whole < 86400 ? `${Math.floor(whole / 3600)}h` : `${Math.floor(whole / 86400)}d`;
    return seconds < 0 ? `in ${amount}` : `${amount} ago`;
  }

  function relativeTimes() {
    const now = Date.now();
    for (const time of $$("time[datetime]")) {
      if (!/ago$|^in /.test(time.textContent)) continue;
      const moment = Date.parse(time.getAttribute("datetime"));
      if (Number.isNaN(moment)) continue;
      const shown = ago((now - moment) / 1000);
      if (time.textContent !== shown) time.textContent = shown;  // no layout for what is unchanged
    }
  }

  function showRevealed(name, value) {
    const span = $(`.masked[data-field="${CSS.escape(name)}"]`);
    const button = $(`[data-reveal="${CSS.escape(name)}"]`);
    if (span) span.textContent = value;
    if (button) { button.textContent = "Hide"; button.dataset.shown = "1"; }
  }

  async function reveal(name, button) {
    const page = $("#session");
    if (!page) return;
    if (button?.dataset.shown === "1") {
      revealed.delete(name);
      $(`.masked[data-field="${CSS.escape(name)}"]`).textContent = "••••••";
      button.textContent = "Reveal";
      delete button.dataset.shown;
      return;
    }
    const {ok, data} = await getJSON(
      `/fragments/sessions/${enc(page.dataset.session)}/reveal/${enc(name)}`);
    if (!ok) { say(`${data.title || "Refused"}: ${data.detail || ""}`, {problem: true}); return; }
    revealed.set(name, data.value);
    showRevealed(name, data.value);
  }

  async function copy(selector) {
    const text = $(selector)?.textContent || "";
    try {
      await navigator.clipboard.writeText(text);
      say("Copied.");
    } catch {
      const range = document.createRange();
      range.selectNodeContents($(selector));
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      say("Selected: copy it with your system's copy key.");
    }
  }

  // The next page comes as the reader nears the end of the list (the link stays, for a keyboard
  // and for a browser without the observer).
  const nearEnd = window.IntersectionObserver ? new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (entry.isIntersecting) more(entry.target);  // more() skips a link already loading
    }
  }, {rootMargin: "0px 0px 600px 0px"}) : null;

  async function more(link) {
    if (link.hasAttribute("aria-busy")) return;
    link.setAttribute("aria-busy", "true");
    let page;
    try {
      const response = await fetch(link.href);
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      page = new DOMParser().parseFromString(await response.text(), "text/html");
    } catch (error) {
      link.removeAttribute("aria-busy");
      if (nearEnd) nearEnd.unobserve(link);  // a failed page is asked for again by the link
      say(`The next sessions did not load (${error.message}): use "More sessions" to try again.`, {problem: true});
      return;
    }
    const rows = $("#rows");
    for (const row of $$("#rows > tr", page)) {
      if (!rowOf(row.dataset.session)) rows.append(document.adoptNode(row));
    }
    const next = $("#more", page);
    if (next) {
      link.href = next.href;
      link.removeAttribute("aria-busy");
      // Observed afresh: a link still in view after a page (a tall screen) fetches the next.
      if (nearEnd) { nearEnd.unobserve(link); nearEnd.observe(link); }
    } else {
      if (nearEnd) nearEnd.unobserve(link);
      link.closest("p").textContent = "The end of the list.";
    }
    watchRows();
    showMarks();
    relativeTimes();
  }

  function help() {
    openDialog({title: "Keyboard shortcuts", content: $("#help-content").content.cloneNode(true)});
  }

  // -- clicks and keys -----------------------------------------------------------------------

  document.addEventListener("click", (event) => {
    const target = event.target.closest(
      "[data-action], [data-bulk], [data-reveal], [data-copy], [data-help], #more, #mark-matching, #mark-clear");
    if (!target) return;
    if (target.id === "more") { event.preventDefault(); more(target); }
    else if (target.id === "mark-matching") { marks.matching = true; marks.ids.clear(); showMarks(); }
    else if (target.id === "mark-clear") clearMarks();
    else if (target.dataset.bulk) bulkAct(target.dataset.bulk);
    else if (target.dataset.action) act(target.dataset.session, target.dataset.action);
    else if (target.dataset.reveal) reveal(target.dataset.reveal, target);
    else if (target.dataset.copy) copy(target.dataset.copy);
    else if (target.hasAttribute("data-help")) help();
  });

  document.addEventListener("change", (event) => {
    const box = event.target;
    if (box.matches?.("input.mark")) setMark(box.dataset.session, box.checked);
    else if (box.id === "mark-shown") {
      for (const each of $$("input.mark")) setMark(each.dataset.session, box.checked);
    } else return;
    showMarks();
  });

  function focusedSession() {
    const page = $("#session");
    if (page) return page.dataset.session;
    const row = document.activeElement?.closest?.("tr.row");
    return row ? row.dataset.session : null;
  }

  function moveFocus(step) {
    const rows = $$("tr.row");
    if (!rows.length) return;
    const at = rows.indexOf(document.activeElement?.closest?.("tr.row"));
    const next = rows[Math.min(Math.max(at + step, 0), rows.length - 1)] || rows[0];
    next.focus();
    next.scrollIntoView({block: "nearest"});
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest("input, textarea, select, [contenteditable]")) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    if (dialog?.open) return;
    // Enter and space on a button, link or summary do what they do there.
    if ((event.key === "Enter" || event.key === " ") &&
        event.target.closest("button, a, summary")) return;
    const id = focusedSession();
    const keys = {
      ArrowDown: () => moveFocus(1), ArrowUp: () => moveFocus(-1),
      j: () => moveFocus(1), k: () => moveFocus(-1),
      Enter: () => { if (id && !$("#session")) location.href = "/sessions/" + enc(id); },
      b: () => { if (id) location.href = `/sessions/${enc(id)}/briefing`; },
      "/": () => $("#f-text")?.focus(),
      O: () => { location.href = "/overview"; },
      A: () => { location.href = "/audit"; },
      "?": help,
      " ": () => {
        if (!id || !operator || $("#session")) return;
        setMark(id, !isMarked(id));
        showMarks();
      },
      u: () => { if (operator) clearMarks(); },
      "*": () => {
        if (!operator || !$("#bulk-bar")) return;
        marks.matching = true;
        marks.ids.clear();
        showMarks();
      },
      v: () => $$("[data-reveal]").forEach((button) => reveal(button.dataset.reveal, button)),
      Escape: () => { if ($("#session") || $(".briefing")) location.href = "/sessions"; },
    };
    for (const [key, action] of [["h", "heartbeat"], ["p", "pause"], ["s", "stop"],
                                 ["r", "resume"], ["t", "terminate"]]) {
      keys[key] = () => {
        if (operator && anyMarked() && !$("#session")) { bulkAct(action); return; }
        if (!id || !operator) return;
        const scope = rowOf(id) || $("#session-head");
        if (scope && !$(`[data-action="${action}"]`, scope)) {
          say(`${LABELS[action]} is not allowed for ${id} in its status.`, {problem: true});
          return;
        }
        act(id, action);
      };
    }
    const run = keys[event.key];
    if (run) { event.preventDefault(); run(); }
  });

  // A phone shows the list first: the filters fold away unless some are on.
  const filters = $("#filter-box");
  if (filters && !filters.dataset.filtering && matchMedia("(max-width: 760px)").matches) {
    filters.open = false;
  }

  // The transcript page follows the agent's transcript: its newest entries read again every
  // few seconds while the page is seen, replaced only when the file grew.
  function followTranscript() {
    const list = $("#transcript[data-follow]");
    if (!list) return;
    setInterval(async () => {
      if (document.hidden) return;
      const {ok, data} = await getJSON(list.dataset.follow);
      if (!ok || data.reason || String(data.size) === list.dataset.size) return;
      const atEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 16;
      list.replaceChildren(serverHTML(data.html));
      list.dataset.size = String(data.size);
      if (atEnd) window.scrollTo(0, document.body.scrollHeight);
    }, 3000);
  }

  watchRows();
  followTranscript();
  const moreLink = $("#more");
  if (moreLink && nearEnd) nearEnd.observe(moreLink);
  showMarks();
  live();
  relativeTimes();
  setInterval(relativeTimes, 15000);
})();
