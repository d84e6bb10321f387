// Stoker's dashboard: keeps the page live from /api/events (no inline script: the CSP).
// The overview updates its figures in place ([data-path], [data-table], [data-chart]);
// the other pages ask the server for their content again ("X-Stoker-Part: 1") on every
// status event and swap in its [data-live] regions, so each page is rendered in one
// place, the server.  Buttons and forms with data-api call the JSON API (see action()
// in stoker/admin/views/html.py), through a confirm dialog when they ask for one.
// The stream closes while the page is hidden or put away (pagehide) and opens again when
// it is shown (visibilitychange, pageshow); after 5 errors in a row (or once the browser
// gives the stream up) it asks /api/status, and a 401 there sends the browser to the
// login page instead of retrying for ever.  Under a mount path (body[data-root]) every
// URL it builds itself is under that path.
"use strict";

(function () {
  const MAX_ERRORS = 5;
  // Where the admin side is mounted ("" at the root, "/stoker" in an app mounting it
  // there): every URL this script asks for itself is under it (the page's own links,
  // forms and data-api URLs carry it already, rendered by the server).
  // (The script is deferred: the body is there when it runs.)
  const ROOT = (document.body && document.body.dataset.root) || "";
  const atRoot = (path) => ROOT + path;
  let source = null;
  let errors = 0;

  function at(status, path) {
    return path.split(".").reduce((v, k) => (v == null ? v : v[k]), status);
  }

  function shown(value, style) {
    if (value === null || value === undefined) return "—";
    switch (style) {
      case "percent": return (value * 100).toFixed(1) + " %";
      case "rate": return Number(value).toFixed(1) + " req/s";
      case "ms": return (value * 1000).toFixed(0) + " ms";
      case "count": return Math.trunc(value).toLocaleString("en-US").replace(/,/g, " ");
      case "bytes": {
        let size = Number(value);
        const units = ["B", "KiB", "MiB", "GiB", "TiB"];
        let unit = 0;
        while (size >= 1024 && unit < units.length - 1) { size /= 1024; unit += 1; }
        return unit === 0 ? size.toFixed(0) + " B" : size.toFixed(1) + " " + units[unit];
      }
      default: return String(value);
    }
  }

  function cell(text, numeric) {
    const td = document.createElement("td");
    td.textContent = text;
    if (numeric) td.className = "num";
    return td;
  }

  function fillTable(name, rows, empty) {
    const body = document.querySelector('[data-table="' + name + '"]');
    if (!body) return;
    const fresh = rows.map((cells) => {
      const tr = document.createElement("tr");
      cells.forEach(([text, numeric]) => tr.appendChild(cell(text, numeric)));
      return tr;
    });
    if (fresh.length === 0 && empty) {
      const tr = document.createElement("tr");
      const td = cell(empty, false);
      td.colSpan = 4;
      tr.appendChild(td);
      fresh.push(tr);
    }
    body.replaceChildren(...fresh);
  }

  // ---- the overview: words for time, the banner, the lists ----
  function span(seconds) {  // as stoker.admin.views.html.span
    const s = Math.abs(seconds);
    if (s < 60) return s.toFixed(0) + " s";
    if (s < 3600) return Math.floor(s / 60) + " min";
    if (s < 86400) {
      const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
      return m ? h + " h " + m + " min" : h + " h";
    }
    return Math.floor(s / 86400) + " d";
  }

  function moment(at, now) {
    if (at === null || at === undefined) return "—";
    return at > now ? "in " + span(at - now) : span(now - at) + " ago";
  }

  function bannerText(status) {  // as stoker.admin.views.overview.banner_text
    const breaker = status.breaker || {};
    const since = status.origin_down_since;
    if ((since === null || since === undefined) && (breaker.phase || "closed") === "closed") return "";
    const when = since === null || since === undefined ? "" : " (for " + span(status.now - since) + ")";
    const stale = status.stale_if_error || 0;
    const served = stale
      ? "Stoker answers from stale copies where it has them (" + shown(stale, "count") + " so far) and 503 where it has none."
      : "Stoker answers 503 where it has no stale copy.";
    const probing = breaker.phase === "half_open" ? " Its breaker is half-open: Stoker is trying it again." : "";
    return "The origin is down" + when + "." + probing + " " + served;
  }

  function item(text, cls, tag) {
    const li = document.createElement("li");
    if (cls) li.className = cls;
    const inner = tag ? document.createElement(tag) : li;
    inner.textContent = text;
    if (tag) li.appendChild(inner);
    return li;
  }

  function fillList(name, items) {
    const list = document.querySelector('[data-list="' + name + '"]');
    if (list) list.replaceChildren(...items);
  }

  function overviewParts(status) {
    const banner = document.getElementById("origin-banner");
    if (banner) { const text = bannerText(status); banner.textContent = text; banner.hidden = !text; }
    const empty = document.getElementById("empty-note");
    if (empty) empty.hidden = status.hit_ratio !== null && status.hit_ratio !== undefined;
    const reasons = Object.entries(status.uncacheable || {}).slice(0, 5);
    fillList("uncacheable", reasons.length ? reasons.map(([reason, count]) => {
      const li = item(reason + " ", "", "span");
      const b = document.createElement("b"); b.textContent = shown(count, "count");
      li.appendChild(b);
      return li;
    }) : [item("No uncacheable requests.", "detail")]);
    const cold = (status.warm || {}).cold;
    let urls = [item("No warmer runs in this process.", "detail")];
    if (cold && cold.urls.length === 0) urls = [item("Nothing purged is waiting for a re-warm.", "detail")];
    if (cold && cold.urls.length) {
      urls = cold.urls.map((url) => item(url, "", "code"));
      if (cold.pending > cold.urls.length) urls.push(item("and " + shown(cold.pending - cold.urls.length, "count") + " more", "detail"));
    }
    fillList("cold", urls);
    const next = document.getElementById("next-warm");
    const due = cold && cold.next_warm;
    if (next) next.textContent = due ? due.name + " " + moment(due.due_at, status.now) : "—";
  }

  // ---- the overview's charts: a window (5 min, hour, day) of 60 slots, a time axis ----
  const SVG = "http://www.w3.org/2000/svg";
  const H = 110, TOP = 12, AXIS = 16, PLOT = H - TOP - AXIS;
  let W = 360;  // each chart is drawn at its box's width (text stays at its size)
  const POINTS = 60;
  const WINDOWS = { "5m": { tick: 60, word: "per 5 s", empty: "the last 5 minutes" },
                    "1h": { tick: 600, word: "per minute", empty: "the last hour" },
                    "1d": { tick: 4 * 3600, word: "per 24 min", empty: "the last day" } };
  const STORED = "stoker.window";
  let windowName = chosenWindow();
  let lastStatus = null;

  function chosenWindow() {  // the URL's #window=…, else the last choice, else the hour
    const hashed = new URLSearchParams(window.location.hash.slice(1)).get("window");
    let stored = null;
    try { stored = window.localStorage.getItem(STORED); } catch (e) { /* storage off */ }
    return [hashed, stored].find((name) => name && WINDOWS[name]) || "1h";
  }

  function choose(name) {
    windowName = name;
    try { window.localStorage.setItem(STORED, name); } catch (e) { /* storage off */ }
    history.replaceState(null, "", "#window=" + name);
    if (lastStatus) charts(lastStatus);
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-window]");
    if (button) choose(button.dataset.window);
  });
  window.addEventListener("resize", () => { if (lastStatus) charts(lastStatus); });

  function svg(children, label) {
    const root = document.createElementNS(SVG, "svg");
    root.setAttribute("viewBox", "0 0 " + W + " " + H);
    root.setAttribute("role", "img");
    root.setAttribute("aria-label", label);
    children.forEach((child) => root.appendChild(child));
    return root;
  }

  function shape(kind, attrs, text) {
    const node = document.createElementNS(SVG, kind);
    Object.entries(attrs).forEach(([k, v]) => node.setAttribute(k, String(v)));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function clock(at) {
    const d = new Date(at * 1000);
    return String(d.getHours()).padStart(2, "0") + ":" + String(d.getMinutes()).padStart(2, "0");
  }

  function frame(now, step, tick, topText) {  // the axes: time ticks below, the top value
    const start = now - POINTS * step;
    const x = (at) => ((at - start) / (POINTS * step)) * W;
    const nodes = [shape("line", { x1: 0, x2: W, y1: TOP + PLOT, y2: TOP + PLOT, class: "axis" })];
    for (let t = Math.ceil(start / tick) * tick; t <= now; t += tick) {
      const px = x(t);
      nodes.push(shape("line", { x1: px, x2: px, y1: TOP + PLOT, y2: TOP + PLOT + 3, class: "axis" }));
      if (px > 16 && px < W - 16) {
        nodes.push(shape("text", { x: px, y: H - 3, class: "tick", "text-anchor": "middle" }, clock(t)));
      }
    }
    nodes.push(shape("text", { x: 2, y: 9, class: "scale" }, topText));
    return [nodes, x];
  }

  function emptyChart(nodes, words) {
    nodes.push(shape("text", { x: W / 2, y: TOP + PLOT / 2, class: "empty", "text-anchor": "middle" }, words));
  }

  function bars(rows, series, now, step, tick, per, unit, empty) {
    const value = (r, key) => (r[key] || 0) / per;
    const top = Math.max(0, ...rows.map((r) => series.reduce((sum, [key]) => sum + value(r, key), 0)));
    const [nodes, x] = frame(now, step, tick, top ? unit(top) : "");
    const width = W / POINTS;
    rows.forEach((r) => {
      let y = TOP + PLOT;
      series.forEach(([key, cls]) => {
        const h = top ? (value(r, key) / top) * PLOT : 0;
        y -= h;
        if (h <= 0) return;
        const rect = shape("rect", { x: x(r.at) + 0.5, y: y, width: Math.max(1, width - 1), height: h, class: cls });
        rect.appendChild(shape("title", {}, clock(r.at) + ": " + unit(value(r, key)) + " " + key));
        nodes.push(rect);
      });
    });
    if (!top) emptyChart(nodes, empty);
    return nodes;
  }

  function lines(rows, series, now, step, tick, empty) {
    const top = Math.max(0, ...rows.flatMap((r) => series.map(([key]) => r[key] || 0)));
    const [nodes, x] = frame(now, step, tick, top ? shown(top, "ms") : "");
    series.forEach(([key, cls]) => {
      const points = rows.filter((r) => r[key] !== null && r[key] !== undefined)
        .map((r) => [Math.min(x(r.at + step / 2), W - 3), TOP + PLOT - (r[key] / top) * PLOT]);
      if (!points.length) return;
      nodes.push(shape("polyline", { class: cls, fill: "none",
        points: points.map(([px, py]) => px.toFixed(1) + "," + py.toFixed(1)).join(" ") }));
      points.forEach(([px, py]) => nodes.push(shape("circle", { cx: px, cy: py, r: 1.8, class: cls })));
    });
    if (!top) emptyChart(nodes, empty);
    return nodes;
  }

  function perSecond(value) {
    return value >= 10 ? value.toFixed(0) : value >= 1 ? value.toFixed(1) : value.toFixed(2);
  }

  function charts(status) {
    const win = WINDOWS[windowName];
    const data = (status.history || {})[windowName] || { step: 60, rows: [] };
    const rows = data.rows, step = data.step, now = status.now || Date.now() / 1000;
    const span = win.empty;
    const draw = {
      requests: () => bars(rows, [["cache", "cache"], ["origin", "origin"]], now, step, win.tick, step,
                           (v) => perSecond(v) + " req/s", "No requests in " + span),
      latency: () => lines(rows, [["p50", "p50"], ["p99", "p99"]], now, step, win.tick,
                           "No origin answers in " + span),
      errors: () => bars(rows, [["errors", "errors"]], now, step, win.tick, 1,
                         (v) => shown(v, "count"), "Every origin request answered in " + span),
      served: () => bars(rows, [["served", "cache"]], now, step, win.tick, step,
                         (v) => (v < 10 ? v.toFixed(1) + " B" : shown(v, "bytes")) + "/s",
                         "Nothing served from cache in " + span) };
    document.querySelectorAll("[data-chart]").forEach((box) => {
      const make = draw[box.dataset.chart];
      if (!make) return;
      W = Math.max(200, Math.round(box.clientWidth) || 360);
      box.replaceChildren(svg(make(), box.parentElement.querySelector("figcaption").textContent));
    });
    document.querySelectorAll("[data-slot]").forEach((node) => { node.textContent = win.word; });
    document.querySelectorAll("button[data-window]").forEach((button) => {
      button.setAttribute("aria-pressed", String(button.dataset.window === windowName));
    });
  }

  function render(status) {
    document.querySelectorAll("[data-path]").forEach((node) => {
      node.textContent = shown(at(status, node.dataset.path), node.dataset.format);
    });
    const phase = document.querySelector(".phase");
    if (phase) phase.dataset.phase = (status.breaker || {}).phase || "";
    fillTable("outcomes", (status.outcomes || []).map((r) => [
      [r.kind, false], [r.reason || "—", false], [r.source, false], [shown(r.count, "count"), true]]),
      "No requests yet");
    fillTable("nodes", (status.nodes || []).map((n) => {
      const f = n.figures || {};
      const up = f.origin_up === undefined ? "—" : (f.origin_up ? "up" : "down");
      const answered = n.figures ? (f.cache || 0) + (f.miss || 0) + (f.uncacheable || 0) + (f.origin_failure || 0) : null;
      return [[n.name + (n.name === status.node ? " (this one)" : ""), false], [n.live ? "live" : "gone", false],
              [shown(answered, "count"), true], [shown(f.hit_ratio, "percent"), true],
              [up, false], [shown(f.origin_p50, "ms"), true]];
    }));
    if (document.querySelector("[data-chart]")) {
      lastStatus = status;
      overviewParts(status);
      charts(status);
    }
    refresh();
  }

  // ---- the other pages' live regions ----
  let fetching = false, again = false;

  async function refresh() {
    if (!document.querySelector("[data-live]")) return;
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      const answer = await fetch(window.location.pathname + window.location.search,
        { credentials: "same-origin", headers: { "X-Stoker-Part": "1" } });
      if (answer.redirected || answer.status === 401) { window.location.assign(atRoot("/login")); return; }
      if (!answer.ok) return;
      const fresh = new DOMParser().parseFromString(await answer.text(), "text/html")
        .querySelectorAll("[data-live]");
      const current = document.querySelectorAll("[data-live]");
      current.forEach((region, i) => { if (fresh[i]) region.replaceWith(document.adoptNode(fresh[i])); });
    } catch (e) { /* the next event tries again */ } finally {
      fetching = false;
      if (again) { again = false; refresh(); }
    }
  }

  // ---- actions: buttons and forms that call the API ----
  function flash(text, bad) {
    const box = document.getElementById("flash");
    if (!box) return;
    box.textContent = text;
    box.className = bad ? "flash bad" : "flash";
    box.hidden = false;
  }

  function confirmed(question, typed, label) {
    const dialog = document.getElementById("confirm");
    if (!question || !dialog) return Promise.resolve(true);
    const input = document.getElementById("confirm-input");
    const ok = document.getElementById("confirm-ok");
    document.getElementById("confirm-question").textContent = question;
    document.getElementById("confirm-typed").hidden = !typed;
    document.getElementById("confirm-expected").textContent = typed || "";
    ok.textContent = label || "Confirm";
    input.value = "";
    ok.disabled = Boolean(typed);
    input.oninput = () => { ok.disabled = input.value.trim() !== typed; };
    dialog.returnValue = "cancel";
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
      dialog.showModal();
      document.getElementById("confirm-cancel").focus();  // Cancel is the default
    });
  }

  // A message template filled from an object (a form's body, an API's answer): "{name}"
  // is the field (a list joined with ", ", true as nothing); "{!name}" is nothing, there
  // only when the field is false; a "[...]" part is left out when a field in it is not
  // there (absent, null, false, empty).  The values are text: textContent shows them.
  function fill(text, data) {
    if (!text) return text;
    const value = (name) => {
      if (name[0] === "!") return data && data[name.slice(1)] === false ? "" : undefined;
      const v = data ? data[name] : undefined;
      if (v === true) return "";
      const items = [].concat(v === undefined || v === null ? [] : v)
        .filter((x) => x !== false && x !== "");
      return items.length ? items.join(", ") : undefined;
    };
    const fields = /\{(!?\w+)\}/g;
    const kept = text.replace(/\[([^\]]*)\]/g, (_, part) =>
      [...part.matchAll(fields)].every(([, name]) => value(name) !== undefined) ? part : "");
    return kept.replace(fields, (_, name) => value(name) || "");
  }

  function said(answer, data) {
    if (data && data.error) return data.error;
    return answer.status + " " + answer.statusText;
  }

  async function call(api, method, body, spec) {
    if (!(await confirmed(spec.confirm, spec.typed, spec.confirmLabel))) return;
    let answer, data = null;
    try {
      answer = await fetch(api, { method: method, credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body) });
      data = await answer.json().catch(() => null);
    } catch (e) { flash("Stoker did not answer: " + e, true); return; }
    if (answer.status === 401) { window.location.assign(atRoot("/login")); return; }
    if (answer.status === 409 && spec.replace !== undefined) {
      flash(said(answer, data) + ".", true);
      const again = document.createElement("button");
      again.type = "button"; again.className = "danger"; again.textContent = "Replace it";
      again.addEventListener("click", () => call(api, method, Object.assign({}, body, { replace: true }),
        { done: spec.done, confirm: "Stop the run that is going and start this one instead?",
          confirmLabel: "Replace" }));
      document.getElementById("flash").append(" ", again);
      return;
    }
    if (!answer.ok) { flash(said(answer, data), true); return; }
    flash(fill(spec.done, data) || "Done.", false);
    refresh();
    return data;
  }

  function bodyOf(form) {
    const body = {};
    let api = form.dataset.api;
    Array.from(form.elements).forEach((field) => {
      if (!field.name) return;
      if (api.includes("{" + field.name + "}")) {
        api = api.replace("{" + field.name + "}", encodeURIComponent(field.value.trim()));
      } else if (field.type === "checkbox") {
        body[field.name] = field.checked;
      } else if ("list" in field.dataset) {
        const items = field.value.split(/\s+/).filter(Boolean);
        if (items.length) body[field.name] = items;
      } else if (field.value !== "" || !("optional" in field.dataset)) {
        body[field.name] = field.value;
      }
    });
    return [api, body];
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-api]");
    if (!button) return;
    const d = button.dataset;
    call(d.api, d.method || "POST", d.body ? JSON.parse(d.body) : undefined,
      { confirm: d.confirm, typed: d.typed, confirmLabel: d.confirmLabel, done: d.done, replace: d.replace });
  });

  document.addEventListener("submit", async (event) => {
    const form = event.target.closest("form[data-api]");
    if (!form) return;
    event.preventDefault();
    const [api, body] = bodyOf(form);
    const d = form.dataset;
    const filled = fill(d.confirm, body);
    const data = await call(api, d.method || "POST", body,
      { confirm: filled, typed: d.typed, confirmLabel: d.confirmLabel, done: d.done, replace: d.replace });
    if (data !== undefined && "reset" in d) form.reset();
  });

  function state(text, name) {
    const live = document.getElementById("live");
    if (live) { live.textContent = text; live.dataset.state = name; }
  }

  function close() {
    if (source) { source.close(); source = null; state("paused", "paused"); }
  }

  // A stream that failed: a 401 from /api/status means the session ended (to the login
  // page); else (an answer, or the listener down) `reopen` again 3 s later.
  async function retryOrLogIn(reopen) {
    try {
      const answer = await fetch(atRoot("/api/status"), { credentials: "same-origin" });
      if (answer.status === 401) { window.location.assign(atRoot("/login")); return; }
    } catch (e) { /* the listener is down: try the stream again below */ }
    setTimeout(reopen, 3000);
  }

  function probe() {
    close();
    errors = 0;
    retryOrLogIn(open);
  }

  function open() {
    if (source || document.visibilityState === "hidden") return;
    if (!document.querySelector("[data-path], [data-table], [data-live]")) return;
    source = new EventSource(atRoot("/api/events"));
    source.addEventListener("status", (event) => {
      errors = 0;
      state("live", "live");
      render(JSON.parse(event.data));
    });
    source.onerror = () => {
      errors += 1;
      state("reconnecting…", "error");
      // CLOSED: the browser gave up on its own (a 401, say); else it retries, up to 5 times
      if (errors >= MAX_ERRORS || source.readyState === EventSource.CLOSED) probe();
    };
  }

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") close(); else open();
  });
  window.addEventListener("pagehide", close);
  window.addEventListener("pageshow", open);
  document.addEventListener("DOMContentLoaded", open);
  // The Log page (ol#log-lines[data-log]): the requests answered, from /api/log, newest
  // first, at most data-kept lines; built as text, never as HTML. Pause holds new lines
  // (counted) until Resume; the stream closes while the page is hidden.
  const logList = document.getElementById("log-lines");
  let logSource = null;
  let paused = false;
  let held = [];
  const logState = (text) => { const s = document.getElementById("log-state"); if (s) s.textContent = text; };
  let shownFilter = "";

  function logItem(r) {
    const li = document.createElement("li");
    const part = (cls, text, tag) => {
      const el = document.createElement(tag || "span");
      el.className = cls;
      el.textContent = text;
      li.appendChild(el);
      return el;
    };
    const when = new Date(r.time * 1000);
    part("when", when.toISOString().slice(11, 23), "time").dateTime = when.toISOString();
    const tone = r.outcome === "hit" || r.outcome.startsWith("stale") ? "ok"
      : r.outcome === "error" || r.status >= 500 ? "failed" : "running";
    part("tag " + tone, r.outcome + (r.reason ? " (" + r.reason + ")" : ""));
    part("status" + (r.status >= 500 ? " bad" : ""), String(r.status));
    part("method", r.method);
    part("url", r.host + r.path).title = r.host + r.path;
    const took = r.duration_ms === null ? "" : " · " + r.duration_ms.toFixed(1) + " ms";
    const size = r.bytes === null ? "" : " · " + shown(r.bytes, "bytes");
    part("meta", r.client + took + size);
    return li;
  }

  function logNote(text) {
    const li = document.createElement("li");
    li.className = "note";
    li.textContent = text;
    return li;
  }

  function logAdd(items) {
    const empty = logList.querySelector(".empty");
    if (empty) empty.remove();
    for (const item of items) logList.insertBefore(item, logList.firstChild);
    const kept = Number(logList.dataset.kept) || 500;
    while (logList.children.length > kept) logList.lastChild.remove();
  }

  function logTake(item) {
    if (paused) { held.push(item); logState("Paused: " + held.length + " new, held."); }
    else logAdd([item]);
  }

  function logClose() { if (logSource) { logSource.close(); logSource = null; } }

  function logOpen() {
    if (!logList || logSource || document.visibilityState === "hidden") return;
    logSource = new EventSource(logList.dataset.log);
    logSource.addEventListener("hello", (event) => {
      shownFilter = JSON.parse(event.data).filter;
      if (!paused) logState("Live: showing " + shownFilter + ".");
    });
    logSource.addEventListener("request", (event) => logTake(logItem(JSON.parse(event.data))));
    logSource.addEventListener("dropped", (event) => {
      const n = JSON.parse(event.data).dropped;
      logTake(logNote("… " + n + (n === 1 ? " line" : " lines") + " dropped (this page fell behind)"));
    });
    logSource.onerror = () => {
      logState("Reconnecting…");
      if (logSource.readyState !== EventSource.CLOSED) return;
      logClose();
      retryOrLogIn(logOpen);
    };
  }

  if (logList) {
    const pause = document.getElementById("log-pause");
    pause.addEventListener("click", () => {
      paused = !paused;
      pause.textContent = paused ? "Resume" : "Pause";
      pause.setAttribute("aria-pressed", String(paused));
      if (paused) { logState("Paused: " + held.length + " new, held."); return; }
      logAdd(held);
      held = [];
      logState("Live: showing " + shownFilter + ".");
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "hidden") logClose(); else logOpen();
    });
    window.addEventListener("pagehide", logClose);
    window.addEventListener("pageshow", logOpen);
    logOpen();
  }
  function showCurrentPage() {  // on a phone the page links scroll: keep the current one in view
    const current = document.querySelector("nav [aria-current]");
    if (current) current.parentElement.scrollLeft = current.offsetLeft - current.parentElement.offsetLeft - 16;
  }
  document.addEventListener("DOMContentLoaded", showCurrentPage);
  window.addEventListener("resize", showCurrentPage);
})();
