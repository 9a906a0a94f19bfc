// The burrow console: a single page over the public HTTP API (the same routes as
// /openapi.json). Views: the sessions list with the fork tree, a session's timeline (live over
// the events stream), its files at any version, and diffs of versions or forks. Every API
// error is shown; nothing is swallowed. Text from sessions is inserted as text, never as HTML.

const TOKEN_KEY = "burrow-token";
const THEME_KEY = "burrow-theme";
const PAGE = 100;

// ---------- small DOM helpers ----------

/** Creates an element: h("a", {href: "#"}, "text", child, ...). */
function h(tag, attrs, ...children) {
  const svg = ["svg", "g", "rect", "text", "path", "a", "title"].includes(tag) && attrs && attrs.svg;
  const el = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "svg" || v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const s = (tag, attrs, ...children) => h(tag, { ...attrs, svg: true }, ...children);
const main = () => document.getElementById("main");

function toast(message, kind) {
  const t = document.getElementById("toast");
  t.textContent = message;
  t.className = kind || "";
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, kind === "info" ? 3000 : 8000);
}

function fmtBytes(n) {
  if (n === null || n === undefined) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

function relTime(iso) {
  if (!iso) return "never";
  const secs = (Date.now() - Date.parse(iso)) / 1000;
  const abs = Math.abs(secs);
  const fmt = (n, unit) => `${Math.round(n)} ${unit}${Math.round(n) === 1 ? "" : "s"} ago`;
  if (abs < 45) return "just now";
  if (abs < 3600) return fmt(abs / 60, "minute");
  if (abs < 86400) return fmt(abs / 3600, "hour");
  if (abs < 86400 * 30) return fmt(abs / 86400, "day");
  return iso.slice(0, 10);
}
const timeEl = (iso) => h("time", { datetime: iso, title: iso }, relTime(iso));
const shortId = (id) => (id || "").slice(0, 12);
const sessionName = (x) => x.name || shortId(x.id);

// ---------- the API ----------

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

/** Calls the API; JSON in and out unless `raw`. A 401 asks for the token. */
async function api(path, { method = "GET", body, raw = false, signal } = {}) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try { const j = await res.json(); if (j && j.error) message = j.error; } catch { /* not JSON */ }
    if (res.status === 401) askToken(message);
    throw new ApiError(res.status, message);
  }
  if (raw) return res;
  if (res.status === 204) return null;
  return res.json();
}
const enc = encodeURIComponent;
const sessionPath = (id) => `/sessions/${enc(id)}`;
const filePath = (p) => p.split("/").filter(Boolean).map(enc).join("/");

function askToken(message) {
  const d = document.getElementById("token-dialog");
  if (!d.open) {
    d.querySelector("p").textContent = sessionStorage.getItem(TOKEN_KEY)
      ? `The server refused the token (${message}). Give the right one.`
      : "Give the bearer token burrow serve was started with. It is kept for this tab only.";
    d.showModal();
  }
}

/** Shows an error where the view's content would be, and as a toast. */
function showError(where, e) {
  const msg = e instanceof Error ? e.message : String(e);
  if (e instanceof ApiError && e.status === 401) {
    where.replaceChildren(h("div", { class: "refused", id: "refused" },
      h("h1", {}, "Refused"), h("p", {}, `The server answered: ${msg}.`),
      h("button", { type: "button", class: "primary", onclick: () => askToken(msg) }, "Give the token")));
    return;
  }
  where.replaceChildren(h("p", { class: "bad", role: "alert" }, `Error: ${msg}`));
  toast(msg);
}

/** Fetches a file as a Blob and saves it under `name` (the token rides in the header). */
async function download(path, name) {
  try {
    const res = await api(path, { raw: true });
    const url = URL.createObjectURL(await res.blob());
    const a = h("a", { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) { toast(e.message); }
}

/** Reads a Server-Sent Events stream through fetch (EventSource cannot send the token). */
async function stream(path, onEvent, signal) {
  const res = await api(path, { raw: true, signal });
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

// ---------- routing ----------

let viewAbort = new AbortController();

function route() {
  viewAbort.abort();
  viewAbort = new AbortController();
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const m = main();
  m.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  if (parts[0] === "s" && parts[1]) {
    sessionView(m, parts[1], parts[2] || "timeline", params, viewAbort.signal);
  } else {
    document.getElementById("where").textContent = "";
    sessionsView(m, params, viewAbort.signal);
  }
}

// ---------- sessions: list and fork tree ----------

async function sessionsView(m, params, signal) {
  document.title = "burrow: sessions";
  let sessions, labels;
  try {
    [sessions, labels] = await Promise.all([api("/sessions", { signal }), api("/labels", { signal })]);
  } catch (e) { if (!signal.aborted) showError(m, e); return; }
  const all = sessions.sessions;
  const bySession = new Map();
  for (const l of labels.labels) {
    if (!bySession.has(l.session)) bySession.set(l.session, []);
    bySession.get(l.session).push(l);
  }
  const search = h("input", { type: "search", id: "search", placeholder: "Filter by name or id", "aria-label": "Filter sessions", value: params.get("q") || "" });
  const tbody = h("tbody", { id: "session-rows" });
  const graph = forkTree(all, bySession);
  const draw = () => {
    const q = search.value.trim().toLowerCase();
    const shown = all.filter((x) => !q || (x.name || "").toLowerCase().includes(q) || x.id.includes(q));
    tbody.replaceChildren(...shown.slice().reverse().map((x) => h("tr", { "data-session": x.id },
      h("td", {}, h("a", { href: `#/s/${enc(x.id)}` }, sessionName(x)), x.name ? h("div", { class: "muted mono" }, shortId(x.id)) : null),
      h("td", {}, timeEl(x.created_at)),
      h("td", {}, timeEl(x.last_active_at)),
      h("td", { class: "num" }, x.versions, h("div", { class: "muted" }, `at v${x.version}`)),
      h("td", { class: "num" }, fmtBytes(x.bytes)),
      h("td", { class: "hide-narrow" }, x.parent ? h("a", { href: `#/s/${enc(x.parent)}` }, sessionName(all.find((p) => p.id === x.parent) || { id: x.parent })) : h("span", { class: "muted" }, "—")),
    )));
    graph.highlight(q);
    if (!shown.length) tbody.append(h("tr", {}, h("td", { colspan: 6, class: "muted" }, all.length ? "No session matches." : "No sessions yet: create one with burrow session new or POST /sessions.")));
  };
  search.addEventListener("input", draw);
  m.replaceChildren(
    h("h1", {}, "Sessions ", h("span", { class: "muted" }, `(${all.length})`)),
    h("div", { class: "row" }, search, h("button", { type: "button", onclick: newSession }, "New session")),
    h("h2", {}, "Fork tree"),
    graph.el,
    h("h2", {}, "All sessions"),
    h("div", { class: "table-wrap" }, h("table", { id: "sessions" },
      h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Created"), h("th", {}, "Last active"),
        h("th", { class: "num" }, "Versions"), h("th", { class: "num" }, "Bytes"), h("th", { class: "hide-narrow" }, "Parent"))),
      tbody)),
  );
  draw();
  // Fit once the page has its final width (fonts and the table settle the layout).
  requestAnimationFrame(() => requestAnimationFrame(graph.fit));
}

async function newSession() {
  const name = prompt("Name of the new session (empty: none)");
  if (name === null) return;
  try {
    const info = await api("/sessions", { method: "POST", body: name ? { name } : {} });
    location.hash = `#/s/${enc(info.id)}`;
  } catch (e) { toast(e.message); }
}

/** The fork tree as an SVG graph: a tidy layout (depth across, leaves down), pan by drag,
 *  zoom by wheel or buttons, every node a link to its session. */
function forkTree(all, labels) {
  const byId = new Map(all.map((x) => [x.id, x]));
  const kids = new Map();
  const roots = [];
  for (const x of all) {
    if (x.parent && byId.has(x.parent)) {
      if (!kids.has(x.parent)) kids.set(x.parent, []);
      kids.get(x.parent).push(x);
    } else roots.push(x);
  }
  const W = 170, H = 46, GX = 60, GY = 14;
  const pos = new Map();
  let leaf = 0;
  const place = (x, depth) => {
    const cs = kids.get(x.id) || [];
    let y;
    if (!cs.length) y = leaf++ * (H + GY);
    else {
      const ys = cs.map((c) => place(c, depth + 1));
      y = (ys[0] + ys[ys.length - 1]) / 2;
    }
    pos.set(x.id, { x: depth * (W + GX), y });
    return y;
  };
  roots.forEach((r) => place(r, 0));
  const view = s("g", {});
  for (const x of all) {
    const p = pos.get(x.id);
    const q = x.parent && pos.get(x.parent);
    if (q) {
      const mx = (q.x + W + p.x) / 2;
      view.append(s("path", { class: "edge", d: `M${q.x + W},${q.y + H / 2} C${mx},${q.y + H / 2} ${mx},${p.y + H / 2} ${p.x},${p.y + H / 2}` }));
    }
  }
  const nodes = new Map();
  for (const x of all) {
    const p = pos.get(x.id);
    const ls = (labels.get(x.id) || []).map((l) => l.label);
    const node = s("a", { href: `#/s/${enc(x.id)}`, class: "node", "data-session": x.id, "aria-label": `session ${sessionName(x)}` },
      s("title", {}, `${x.name || x.id}\n${x.versions} versions, ${fmtBytes(x.bytes)}${ls.length ? `\nlabels: ${ls.join(", ")}` : ""}`),
      s("rect", { x: p.x, y: p.y, width: W, height: H }),
      s("text", { x: p.x + 8, y: p.y + 17 }, sessionName(x).slice(0, 22)),
      s("text", { x: p.x + 8, y: p.y + 31, class: "sub" }, `v${x.version} · ${x.versions} versions · ${fmtBytes(x.bytes)}`),
      ls.length ? s("text", { x: p.x + 8, y: p.y + 42, class: "lbl" }, ls.join(", ").slice(0, 30)) : null);
    nodes.set(x.id, node);
    view.append(node);
  }
  const svg = s("svg", { role: "img", "aria-label": "Fork tree of the sessions", id: "fork-tree" }, view);
  let t = { x: 20, y: 20, k: 1 };
  const apply = () => view.setAttribute("transform", `translate(${t.x},${t.y}) scale(${t.k})`);
  const zoom = (f, cx, cy) => {
    const k = Math.min(4, Math.max(0.05, t.k * f));
    t = { x: cx - (cx - t.x) * (k / t.k), y: cy - (cy - t.y) * (k / t.k), k };
    apply();
  };
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  let drag = null;
  svg.addEventListener("pointerdown", (e) => {
    if (e.target.closest("a")) return;
    drag = { x: e.clientX - t.x, y: e.clientY - t.y };
    svg.setPointerCapture(e.pointerId);
    svg.classList.add("dragging");
  });
  svg.addEventListener("pointermove", (e) => { if (drag) { t = { ...t, x: e.clientX - drag.x, y: e.clientY - drag.y }; apply(); } });
  svg.addEventListener("pointerup", () => { drag = null; svg.classList.remove("dragging"); });
  const fit = () => {
    const r = svg.getBoundingClientRect();
    let maxX = 0, maxY = 0;
    for (const p of pos.values()) { maxX = Math.max(maxX, p.x + W); maxY = Math.max(maxY, p.y + H); }
    if (!r.width || !maxX) return;
    const k = Math.min(1.5, (r.width - 40) / maxX, (r.height - 40) / maxY);
    t = { x: 20, y: 20, k: Math.max(0.05, k) };
    apply();
  };
  const center = () => { const r = svg.getBoundingClientRect(); return [r.width / 2, r.height / 2]; };
  const el = h("div", { class: "graph" }, svg, h("div", { class: "controls" },
    h("button", { type: "button", "aria-label": "Zoom in", onclick: () => zoom(1.25, ...center()) }, "+"),
    h("button", { type: "button", "aria-label": "Zoom out", onclick: () => zoom(0.8, ...center()) }, "−"),
    h("button", { type: "button", onclick: fit }, "Fit")));
  if (!all.length) el.append(h("p", { class: "muted", style: undefined }, "No sessions."));
  apply();
  return {
    el, fit,
    highlight(q) {
      for (const [id, n] of nodes) {
        const x = byId.get(id);
        n.classList.toggle("match", !!q && ((x.name || "").toLowerCase().includes(q) || id.includes(q)));
      }
    },
  };
}

// ---------- one session ----------

async function sessionView(m, key, tab, params, signal) {
  let info;
  try { info = await api(sessionPath(key), { signal }); } catch (e) { if (!signal.aborted) showError(m, e); return; }
  const id = info.id;
  document.title = `burrow: ${sessionName(info)}`;
  document.getElementById("where").textContent = `/ ${sessionName(info)}`;
  const tabs = [["timeline", "Timeline"], ["files", "Files"], ["diff", "Diff"], ["history", "Versions"]];
  const body = h("section", { id: "tab-body" });
  m.replaceChildren(
    h("h1", { id: "session-title" }, sessionName(info)),
    h("div", { class: "meta" },
      h("div", {}, h("span", {}, "Id"), h("code", {}, info.id)),
      h("div", {}, h("span", {}, "Version"), `v${info.version} (${info.versions} made here)`),
      h("div", {}, h("span", {}, "Size"), `${fmtBytes(info.bytes)}, ${info.entries} entries`),
      h("div", {}, h("span", {}, "Created"), timeEl(info.created_at)),
      h("div", {}, h("span", {}, "Last active"), timeEl(info.last_active_at)),
      h("div", {}, h("span", {}, "Forked from"), info.parent ? h("a", { href: `#/s/${enc(info.parent)}` }, shortId(info.parent)) : "—")),
    actions(info),
    h("nav", { class: "tabs", "aria-label": "Session views" }, ...tabs.map(([k, label]) =>
      h("a", { href: `#/s/${enc(id)}/${k}`, "aria-current": k === tab ? "page" : undefined, id: `tab-${k}` }, label))),
    body,
  );
  try {
    if (tab === "files") await filesTab(body, info, params, signal);
    else if (tab === "diff") await diffTab(body, info, params, signal);
    else if (tab === "history") await historyTab(body, info, signal);
    else await timelineTab(body, info, params, signal);
  } catch (e) { if (!signal.aborted) showError(body, e); }
}

function actions(info) {
  const id = info.id;
  const n = h("input", { type: "number", min: 1, max: 100, value: 1, id: "fork-n", "aria-label": "Number of forks" });
  const run = async (what, fn) => {
    try { await fn(); } catch (e) { toast(`${what}: ${e.message}`); }
  };
  return h("div", { class: "row", id: "actions" },
    h("button", { type: "button", id: "fork", onclick: () => run("fork", async () => {
      const r = await api(`${sessionPath(id)}/fork`, { method: "POST", body: { n: Number(n.value) || 1 } });
      toast(`Forked: ${r.ids.map(shortId).join(", ")}`, "info");
      location.hash = r.ids.length === 1 ? `#/s/${enc(r.ids[0])}` : "#/";
    }) }, "Fork"), n,
    info.parent ? h("button", { type: "button", id: "merge", title: "Merge this fork's changes into the session it was forked from (undo there takes it back)", onclick: () => run("merge", async () => {
      const r = await api(`${sessionPath(id)}/merge`, { method: "POST", body: {} });
      const conflicts = r.conflicts.map((c) => `${c.path} (${c.reason})`);
      toast(conflicts.length
        ? `Merged ${r.merged.length} path(s) into ${shortId(r.into)} as v${r.version}; conflicts: ${conflicts.join(", ")}`
        : `Merged ${r.merged.length} path(s) into ${shortId(r.into)} as v${r.version}`, conflicts.length ? undefined : "info");
      location.hash = `#/s/${enc(r.into)}`;
    }) }, "Merge into parent") : null,
    h("button", { type: "button", id: "label", onclick: () => run("label", async () => {
      const label = prompt("Label for the current version");
      if (!label) return;
      await api(`${sessionPath(id)}/label`, { method: "POST", body: { label } });
      toast(`Labelled v${info.version} ${label}`, "info");
      route();
    }) }, "Label"),
    h("button", { type: "button", id: "undo", onclick: () => run("undo", async () => {
      const r = await api(`${sessionPath(id)}/undo`, { method: "POST" });
      toast(`Undone: now at v${r.version}`, "info");
      route();
    }) }, "Undo"),
    h("button", { type: "button", onclick: () => download(`${sessionPath(id)}/export`, `${sessionName(info)}.tar`) }, "Download tar"),
    h("button", { type: "button", class: "danger", id: "delete", onclick: () => run("delete", async () => {
      if (!confirm(`Delete session ${sessionName(info)} and its history? This cannot be undone.`)) return;
      await api(sessionPath(id), { method: "DELETE" });
      toast("Deleted", "info");
      location.hash = "#/";
    }) }, "Delete"));
}

async function checkout(id, version) {
  try {
    const r = await api(`${sessionPath(id)}/checkout`, { method: "POST", body: { version } });
    toast(`Checked out v${version}: now at v${r.version}`, "info");
    route();
  } catch (e) { toast(`checkout: ${e.message}`); }
}

// ---------- timeline ----------

/** What one line says of an event: the tool and its main argument. */
function eventSummary(e) {
  const d = e.data || {};
  if (e.kind === "tool" || e.kind === "run") {
    const input = d.input || {};
    const main = input.command ?? input.cmd ?? input.path ?? input.file_path ?? input.pattern ?? input.url ?? "";
    return `${d.tool || e.kind}${main ? ` ${typeof main === "string" ? main : JSON.stringify(main)}` : ""}`;
  }
  if (e.kind === "net") {
    const port = (d.scheme === "https" && d.port === 443) || (d.scheme === "http" && d.port === 80) ? "" : `:${d.port}`;
    const outcome = d.status !== undefined ? `→ ${d.status}` : `→ ${d.error || "no response"}`;
    return `${d.method} ${d.scheme}://${d.host}${port}${d.path} ${outcome} (${fmtBytes(d.bytes_in)} in)`;
  }
  const rest = Object.entries(d).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ");
  return rest;
}

function outputText(d) {
  const out = d.output;
  if (!out) return d.error || "";
  if (typeof out === "string") return out;
  if (Array.isArray(out.content)) return out.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
  return JSON.stringify(out, null, 2);
}

function eventRow(id, e) {
  const d = e.data || {};
  const isError = d.is_error === true || (d.exit_code !== undefined && d.exit_code !== 0) || d.allowed === false;
  const vb = e.version_before, va = e.version_after;
  const changed = vb !== null && va !== null && vb !== va;
  return h("li", { "data-kind": e.kind, "data-seq": e.seq, class: "event" },
    h("div", { class: "head" },
      h("span", { class: "badge" }, e.kind),
      isError ? h("span", { class: "badge err" }, d.exit_code !== undefined ? `exit ${d.exit_code}` : d.allowed === false ? "denied" : "error") : null,
      h("span", { class: "summary" }, eventSummary(e)),
      h("span", { class: "spacer" }),
      d.duration_us !== undefined ? h("span", { class: "muted" }, `${(d.duration_us / 1000).toFixed(1)} ms`) : null,
      changed ? h("span", {}, h("a", { href: `#/s/${enc(id)}/files?v=${vb}` }, `v${vb}`), " → ",
        h("a", { href: `#/s/${enc(id)}/files?v=${va}` }, `v${va}`), " ",
        h("a", { href: `#/s/${enc(id)}/diff?from=${vb}&to=${va}` }, "diff"))
        : va !== null && va !== undefined ? h("span", { class: "muted" }, `v${va}`) : null,
      timeEl(e.time_at)),
    (e.kind === "tool" || e.kind === "run") ? h("details", {},
      h("summary", {}, "Input and output"),
      h("div", { class: "muted" }, "input"), h("pre", {}, JSON.stringify(d.input ?? {}, null, 2)),
      h("div", { class: "muted" }, d.exit_code !== undefined ? `output (exit code ${d.exit_code})` : `output${d.is_error ? " (is_error)" : ""}`),
      h("pre", {}, outputText(d) || (d.stdout ?? "") + (d.stderr ?? ""))) : null);
}

async function timelineTab(body, info, params, signal) {
  const id = info.id;
  const list = h("ol", { class: "events", id: "timeline", reversed: false });
  const kinds = new Set();
  const hidden = new Set((params.get("hide") || "").split(",").filter(Boolean));
  const filters = h("fieldset", { class: "row", id: "kind-filter" }, h("legend", { class: "muted" }, "Show kinds"));
  const status = h("p", { class: "muted", id: "timeline-status" });
  const more = h("button", { type: "button", id: "more", hidden: true }, "Load more");
  let after = 0;
  const applyFilter = () => {
    for (const li of list.children) li.hidden = hidden.has(li.dataset.kind);
  };
  const addKind = (k) => {
    if (kinds.has(k)) return;
    kinds.add(k);
    const box = h("input", { type: "checkbox", checked: !hidden.has(k), onchange: () => {
      if (box.checked) hidden.delete(k); else hidden.add(k);
      applyFilter();
    } });
    filters.append(h("label", {}, box, ` ${k}`));
  };
  const add = (e) => {
    if (e.seq <= after) return;
    after = e.seq;
    addKind(e.kind);
    const li = eventRow(id, e);
    li.hidden = hidden.has(e.kind);
    list.append(li);
  };
  body.replaceChildren(filters, status, list, more);
  // Pages oldest first; once the end is reached, the live stream carries on from there.
  const page = async () => {
    const r = await api(`${sessionPath(id)}/events?after=${after}&limit=${PAGE}`, { signal });
    r.events.forEach(add);
    return r.events.length === PAGE;
  };
  const live = () => {
    status.textContent = "Live: new calls appear as they happen.";
    stream(`${sessionPath(id)}/events/stream?after=${after}`, (e) => {
      add(e);
      status.textContent = `Live: last event #${e.seq}.`;
    }, signal).catch((e) => { if (!signal.aborted) { status.textContent = `Live updates stopped: ${e.message}`; } });
  };
  more.onclick = async () => {
    more.disabled = true;
    try {
      if (!(await page())) { more.hidden = true; live(); }
    } catch (e) { toast(e.message); }
    more.disabled = false;
  };
  if (await page()) { more.hidden = false; status.textContent = "Older pages first: load more to reach the present."; }
  else live();
  if (!list.children.length) status.textContent = "No events yet. " + status.textContent;
}

// ---------- versions ----------

async function historyTab(body, info, signal) {
  const id = info.id;
  const r = await api(`${sessionPath(id)}/history?limit=1000`, { signal });
  body.replaceChildren(h("div", { class: "table-wrap" }, h("table", { id: "versions" },
    h("thead", {}, h("tr", {}, h("th", {}, "Version"), h("th", {}, "What"), h("th", {}, "When"), h("th", { class: "num" }, "Bytes"), h("th", {}, ""))),
    h("tbody", {}, ...r.versions.map((v) => h("tr", {},
      h("td", {}, `v${v.version}`, ...(v.labels || []).map((l) => [" ", h("span", { class: "badge label" }, l)])),
      h("td", { class: "mono" }, v.message),
      h("td", {}, timeEl(v.time_at)),
      h("td", { class: "num" }, fmtBytes(v.bytes)),
      h("td", {}, h("a", { href: `#/s/${enc(id)}/files?v=${v.version}` }, "files"), " ",
        v.parent ? h("a", { href: `#/s/${enc(id)}/diff?from=${v.parent}&to=${v.version}` }, "diff") : null, " ",
        v.version !== info.version ? h("button", { type: "button", onclick: () => {
          if (confirm(`Move ${sessionName(info)} to v${v.version}? (Recorded as a new version; nothing is lost.)`)) checkout(id, v.version);
        } }, "Check out") : h("span", { class: "badge" }, "current"))))))));
}

// ---------- files ----------

const IMAGE = /\.(png|jpe?g|gif|webp|svg)$/i;

async function filesTab(body, info, params, signal) {
  const id = info.id;
  const version = params.get("v") || String(info.version);
  const path = params.get("p") || "/workspace";
  const link = (p, v = version) => `#/s/${enc(id)}/files?v=${enc(v)}&p=${enc(p)}`;
  const rel = path.replace(/^\/workspace\/?/, "");
  const crumbs = h("nav", { class: "crumbs", "aria-label": "Path" });
  const segs = rel ? rel.split("/") : [];
  crumbs.append(h("a", { href: link("/workspace") }, "/workspace"));
  segs.forEach((seg, i) => crumbs.append("/", h("a", { href: link(`/workspace/${segs.slice(0, i + 1).join("/")}`) }, seg)));
  const hist = await api(`${sessionPath(id)}/history?limit=500`, { signal });
  const pick = h("select", { id: "version-pick", "aria-label": "Version", onchange: () => { location.hash = link(path, pick.value); } },
    ...hist.versions.map((v) => h("option", { value: v.version, selected: String(v.version) === version },
      `v${v.version} ${v.message}${(v.labels || []).length ? ` [${v.labels.join(", ")}]` : ""}`)));
  const head = h("div", { class: "row" }, h("label", {}, "Version ", pick), crumbs,
    h("button", { type: "button", onclick: () => download(`${sessionPath(id)}/export?version=${enc(version)}`, `${sessionName(info)}-v${version}.tar`) }, "Download this version (tar)"));
  body.replaceChildren(head, h("p", { class: "muted" }, "Loading…"));
  let tree = null;
  try {
    tree = await api(`${sessionPath(id)}/tree/${filePath(rel)}?version=${enc(version)}`, { signal });
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 400) throw e; // 400: not a directory
  }
  if (tree) {
    const rows = tree.entries.map((e) => {
      const p = `${path.replace(/\/$/, "")}/${e.name}`;
      return h("tr", { "data-name": e.name },
        h("td", {}, h("a", { href: link(p) }, e.name + (e.kind === "dir" ? "/" : "")), e.kind === "symlink" ? h("span", { class: "muted" }, " (symlink)") : null),
        h("td", { class: "num" }, e.kind === "dir" ? "" : fmtBytes(e.size)),
        h("td", { class: "hide-narrow mono muted" }, (e.mode & 0o777).toString(8)),
        h("td", {}, timeEl(e.mtime_at)));
    });
    body.replaceChildren(head, h("div", { class: "table-wrap" }, h("table", { id: "files" },
      h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", { class: "num" }, "Size"), h("th", { class: "hide-narrow" }, "Mode"), h("th", {}, "Modified"))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 4, class: "muted" }, "Empty directory."))))));
    return;
  }
  // A file.
  const url = `${sessionPath(id)}/files/${filePath(rel)}?version=${enc(version)}`;
  const res = await api(url, { raw: true, signal });
  const blob = await res.blob();
  const name = segs[segs.length - 1] || "file";
  const save = h("button", { type: "button", onclick: () => download(url, name) }, `Download (${fmtBytes(blob.size)})`);
  if (IMAGE.test(name)) {
    const typed = name.toLowerCase().endsWith(".svg") ? new Blob([blob], { type: "image/svg+xml" }) : blob;
    const img = h("img", { class: "preview", alt: name, src: URL.createObjectURL(typed) });
    body.replaceChildren(head, h("div", { class: "row" }, save), img);
    return;
  }
  const bytes = new Uint8Array(await blob.arrayBuffer());
  let text = null;
  if (bytes.length <= 4 * 1024 * 1024 && !bytes.slice(0, 8192).includes(0)) {
    try { text = new TextDecoder("utf-8", { fatal: true }).decode(bytes); } catch { text = null; }
  }
  if (text === null) {
    body.replaceChildren(head, h("p", {}, `Binary file, ${fmtBytes(bytes.length)}.`), save);
    return;
  }
  body.replaceChildren(head, h("div", { class: "row" }, save, h("span", { class: "muted" }, `${text.replace(/\n$/, "").split("\n").length} lines`)), codeView(text, name));
}

/** Text with line numbers and syntax colouring. */
function codeView(text, name) {
  const lines = text.replace(/\n$/, "").split("\n");
  const ln = h("div", { class: "ln", "aria-hidden": "true" }, lines.map((_, i) => `${i + 1}\n`).join(""));
  const src = h("div", { class: "src", id: "file-text" });
  highlight(src, text.replace(/\n$/, ""), name);
  return h("div", { class: "code" }, ln, src);
}

// A small highlighter: comments, strings, numbers and keywords of common languages, by
// file extension. Tokens become spans with text content (never HTML).
const KEYWORDS = {
  js: "async await break case catch class const continue default delete do else export extends false finally for from function if import in instanceof let new null of return static super switch this throw true try typeof undefined var void while yield interface type enum implements",
  py: "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield self",
  rs: "as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while Some None Ok Err",
  go: "break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false",
  sh: "if then else elif fi for while until do done case esac in function return local export readonly set unset shift exit echo cd",
  c: "auto break case char const continue default do double else enum extern float for goto if int long register return short signed sizeof static struct switch typedef union unsigned void volatile while class public private protected new delete namespace template typename using bool true false nullptr include define",
  java: "abstract boolean break byte case catch char class const continue default do double else enum extends final finally float for if implements import instanceof int interface long new package private protected public return short static super switch this throw throws try void while true false null",
  json: "true false null", toml: "true false", yaml: "true false null yes no",
};
const LANG = { js: "js", mjs: "js", cjs: "js", ts: "js", tsx: "js", jsx: "js", py: "py", rs: "rs", go: "go", sh: "sh", bash: "sh",
  zsh: "sh", c: "c", h: "c", cc: "c", cpp: "c", hpp: "c", java: "java", kt: "java", json: "json", toml: "toml", yaml: "yaml", yml: "yaml" };
function highlight(el, text, name) {
  const ext = (name.split(".").pop() || "").toLowerCase();
  const lang = LANG[ext] || (name === "Makefile" || name === "Dockerfile" ? "sh" : null);
  if (!lang || text.length > 512 * 1024) { el.textContent = text; return; }
  const hash = ["py", "sh", "toml", "yaml"].includes(lang);
  const slash = ["js", "rs", "go", "c", "java"].includes(lang);
  const kw = new Set(KEYWORDS[lang].split(" "));
  const parts = [];
  if (slash) parts.push(String.raw`\/\/[^\n]*|\/\*[\s\S]*?\*\/`);
  if (hash) parts.push(String.raw`#[^\n]*`);
  if (lang === "py") parts.push(String.raw`"""[\s\S]*?"""|'''[\s\S]*?'''`);
  parts.push(String.raw`"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'` + (lang === "js" || lang === "go" ? "|`(?:\\\\.|[^`\\\\])*`" : ""));
  parts.push(String.raw`\b\d[\w.]*\b`, String.raw`[A-Za-z_][A-Za-z0-9_]*`);
  const re = new RegExp(parts.join("|"), "g");
  const frag = document.createDocumentFragment();
  let last = 0;
  for (const m of text.matchAll(re)) {
    const tok = m[0];
    let cls = null;
    if (tok.startsWith("//") || tok.startsWith("/*") || (hash && tok.startsWith("#"))) cls = "hl-com";
    else if (/^["'`]/.test(tok)) cls = "hl-str";
    else if (/^\d/.test(tok)) cls = "hl-num";
    else if (kw.has(tok)) cls = "hl-kw";
    if (!cls) continue;
    if (m.index > last) frag.append(text.slice(last, m.index));
    frag.append(h("span", { class: cls }, tok));
    last = m.index + tok.length;
  }
  frag.append(text.slice(last));
  el.replaceChildren(frag);
}

// ---------- diff ----------

async function diffTab(body, info, params, signal) {
  const id = info.id;
  const from = params.get("from") || info.parent || "";
  const to = params.get("to") || id;
  const mode = params.get("view") === "split" ? "split" : "unified";
  const fromIn = h("input", { id: "diff-from", value: from, placeholder: "session, version or label", "aria-label": "From" });
  const toIn = h("input", { id: "diff-to", value: to, "aria-label": "To" });
  const go = (view = mode) => { location.hash = `#/s/${enc(id)}/diff?from=${enc(fromIn.value.trim())}&to=${enc(toIn.value.trim())}&view=${view}`; };
  const form = h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); go(); } },
    h("label", {}, "From ", fromIn), h("label", {}, "To ", toIn), h("button", { type: "submit", class: "primary" }, "Compare"),
    h("button", { type: "button", id: "view-toggle", onclick: () => go(mode === "split" ? "unified" : "split") }, mode === "split" ? "Unified view" : "Side by side"));
  if (!from) {
    body.replaceChildren(form, h("p", { class: "muted" }, "Give what to compare with: another session (a fork), a version number or a label."));
    return;
  }
  body.replaceChildren(form, h("p", { class: "muted" }, "Loading…"));
  const r = await api(`${sessionPath(id)}/diff?against=${enc(from)}&to=${enc(to)}&patch=true`, { signal });
  const files = r.changes;
  const totals = files.reduce((a, c) => [a[0] + (c.added_lines || 0), a[1] + (c.removed_lines || 0)], [0, 0]);
  const list = h("table", { id: "diff-files" }, h("thead", {}, h("tr", {}, h("th", {}, "Path"), h("th", {}, "Change"), h("th", { class: "num" }, "Lines"))),
    h("tbody", {}, ...files.map((c, i) => h("tr", { "data-path": c.path },
      h("td", { class: "mono" }, h("a", { href: `#diff-${i}`, onclick: (e) => { e.preventDefault(); document.getElementById(`diff-${i}`)?.scrollIntoView(); } }, c.path)),
      h("td", {}, h("span", { class: `badge ${c.kind}` }, c.kind), c.entry && c.entry !== "file" ? h("span", { class: "muted" }, ` ${c.entry}`) : null),
      h("td", { class: "num" }, h("span", { class: "good" }, `+${c.added_lines}`), " ", h("span", { class: "bad" }, `−${c.removed_lines}`))))));
  const views = files.filter((c) => c.patch).map((c) => h("section", { id: `diff-${files.indexOf(c)}` },
    h("h2", { class: "mono" }, c.path), patchView(c.patch, mode)));
  body.replaceChildren(form,
    h("p", {}, `v${r.from} → v${r.to}: ${files.length} path${files.length === 1 ? "" : "s"} changed, `, h("span", { class: "good" }, `+${totals[0]}`), " ", h("span", { class: "bad" }, `−${totals[1]}`)),
    files.length ? h("div", { class: "table-wrap" }, list) : h("p", { class: "muted", id: "no-changes" }, "No differences."),
    ...views);
}

/** Parses a unified diff into hunks of [kind, oldNo, newNo, text] lines. */
function parsePatch(patch) {
  const out = [];
  let o = 0, n = 0;
  for (const line of patch.split("\n")) {
    const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (m) { o = +m[1]; n = +m[2]; out.push(["hunk", "", "", line]); continue; }
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ") || line.startsWith("index ")) continue;
    if (line.startsWith("Binary files")) { out.push(["hunk", "", "", line]); continue; }
    if (line.startsWith("+")) out.push(["add", "", n++, line.slice(1)]);
    else if (line.startsWith("-")) out.push(["del", o++, "", line.slice(1)]);
    else if (line.startsWith(" ")) out.push(["ctx", o++, n++, line.slice(1)]);
  }
  return out;
}

function patchView(patch, mode) {
  const rows = parsePatch(patch);
  const tbody = h("tbody");
  if (mode === "split") {
    // Pair each run of removals with the run of additions after it.
    for (let i = 0; i < rows.length;) {
      const [kind, o, n, text] = rows[i];
      if (kind === "hunk") { tbody.append(h("tr", { class: "hunk" }, h("td", { colspan: 4 }, text))); i++; continue; }
      if (kind === "ctx") { tbody.append(h("tr", {}, h("td", { class: "ln" }, o), h("td", {}, text), h("td", { class: "ln" }, n), h("td", {}, text))); i++; continue; }
      const dels = [], adds = [];
      while (i < rows.length && rows[i][0] === "del") dels.push(rows[i++]);
      while (i < rows.length && rows[i][0] === "add") adds.push(rows[i++]);
      for (let j = 0; j < Math.max(dels.length, adds.length); j++) {
        const d = dels[j], a = adds[j];
        tbody.append(h("tr", {},
          h("td", { class: "ln" }, d ? d[1] : ""), h("td", { class: d ? "del" : "" }, d ? d[3] : ""),
          h("td", { class: "ln" }, a ? a[2] : ""), h("td", { class: a ? "add" : "" }, a ? a[3] : "")));
      }
    }
  } else {
    for (const [kind, o, n, text] of rows) {
      if (kind === "hunk") { tbody.append(h("tr", { class: "hunk" }, h("td", { colspan: 3 }, text))); continue; }
      const sign = kind === "add" ? "+" : kind === "del" ? "-" : " ";
      tbody.append(h("tr", { class: kind }, h("td", { class: "ln" }, o), h("td", { class: "ln" }, n), h("td", { class: "text" }, sign + text)));
    }
  }
  return h("div", { class: `diff ${mode}` }, h("table", {}, tbody));
}

// ---------- start ----------

function setTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

function start() {
  setTheme(localStorage.getItem(THEME_KEY));
  document.getElementById("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme === "dark"
      || (!document.documentElement.dataset.theme && matchMedia("(prefers-color-scheme: dark)").matches);
    const next = dark ? "light" : "dark";
    localStorage.setItem(THEME_KEY, next);
    setTheme(next);
  });
  const signout = document.getElementById("signout");
  signout.hidden = !sessionStorage.getItem(TOKEN_KEY);
  signout.addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); signout.hidden = true; route(); });
  document.getElementById("token-form").addEventListener("submit", () => {
    const v = document.getElementById("token-input").value.trim();
    if (v) sessionStorage.setItem(TOKEN_KEY, v);
    signout.hidden = !v;
    route();
  });
  addEventListener("hashchange", route);
  route();
}

start();
