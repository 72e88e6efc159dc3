"use strict";
// ragsweep report: draws the run's inlined data as SVG. No library, no network.
const D = JSON.parse(document.getElementById("data").textContent);
const app = document.getElementById("app");
const SVG = "http://www.w3.org/2000/svg";
const FAMILY_COLOURS = { bm25: "#1f77b4", dense: "#ff7f0e", hybrid: "#2ca02c" };
const colour = (family) => FAMILY_COLOURS[family] || "#9467bd";

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c.nodeType ? c : String(c));
  return e;
}
function sv(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c.nodeType ? c : document.createTextNode(String(c)));
  return e;
}
const fmt = (v, d = 4) => (v === null || v === undefined ? "–" : Number(v).toFixed(d));
const mean = (t) => (t && t[0] !== null ? (t[1] !== null ? `${fmt(t[0])} (${fmt(t[1], 2)}–${fmt(t[2], 2)})` : fmt(t[0])) : "–");

const metrics = [...new Set(D.columns.map((c) => c.split("@")[0]))];
const [decisionMetric, decisionK] = D.decision.split("@");
const hasReserved = D.rows.some((r) => r.split === "reserved" && r.metrics[D.decision] && r.metrics[D.decision][0] !== null);
const cuts = D.cuts && D.cuts.length ? D.cuts : D.ks.map(String);
const state = { metric: decisionMetric || metrics[0], k: cuts.includes(decisionK) ? decisionK : cuts[0], split: hasReserved ? "reserved" : "tuning" };
// Ranks are read at a k; at a token budget (`1024t`) the per-question grid uses the largest k.
const rankK = () => (String(state.k).endsWith("t") ? D.ks[D.ks.length - 1] : Number(state.k));
const selected = D.selection ? D.selection.cell : null;
const cellById = Object.fromEntries(D.cells.map((c) => [c.id, c]));
const rowOf = (cell, split) => D.rows.find((r) => r.cell === cell && r.split === split);
const column = () => `${state.metric}@${state.k}`;
const value = (cell, split) => { const r = rowOf(cell, split); const t = r && r.metrics[column()]; return t ? t[0] : null; };

function header() {
  const s = D.selection;
  const splits = Object.entries(D.cases_per_split).map(([k, v]) => `${k} ${v}`).join(" · ");
  const parts = [
    el("h1", {}, `${D.experiment}`),
    el("div", { class: "muted" }, `run ${D.run_id} · unit ${D.unit} · corpus ${D.corpus.hash} (${D.corpus.documents} documents, ${D.corpus.public} public) · golden ${D.golden_hash} · cases ${splits}`),
  ];
  if (s) {
    const label = cellById[s.cell] ? cellById[s.cell].label : s.label;
    parts.push(el("p", { id: "selection" },
      el("strong", {}, `Selected on tuning by ${s.metric}: ${s.cell}`), ` (${label}) — tuning ${fmt(s.tuning)}, reserved ${fmt(s.reserved)}`,
      ` (rank ${s.reserved_rank ?? "–"} of ${s.cells}), optimism ${fmt(s.optimism)}, Kendall tau ${fmt(s.kendall_tau)}.`,
      s.tied && s.tied.length ? ` ${s.tied.length} of ${s.cells} eligible cells are tied with the best (${s.best}) on tuning.` : ""));
  }
  if (D.warning) parts.push(el("div", { class: "warning", id: "reserved-warning" }, D.warning));
  for (const w of D.health) parts.push(el("div", { class: "warning" }, `Golden set: ${w}`));
  return el("section", { id: "header" }, parts);
}

function controls(redraw) {
  const select = (name, options, current) => el("select", { id: `pick-${name}`, onchange: (e) => { state[name] = e.target.value; redraw(); } },
    options.map((o) => { const opt = el("option", { value: o }, o); if (String(o) === String(current)) opt.selected = true; return opt; }));
  const splits = hasReserved ? ["tuning", "reserved"] : ["tuning"];
  return el("section", { class: "controls", id: "controls" },
    el("label", {}, "metric ", select("metric", metrics, state.metric)),
    el("label", {}, "k or budget ", select("k", cuts, state.k)),
    el("label", {}, "split ", select("split", splits, state.split)));
}

// A scatter or line plot in a 560 × 360 box; `marks` draws into the plot area.
// A log x axis when the values are positive and span more than a factor 20 (latency, k).
function plot(id, title, xLabel, yLabel, xs, ys, marks, note) {
  const W = 560, H = 360, L = 56, R = 16, T = 14, B = 44;
  const finite = (v) => v.filter((x) => x !== null && Number.isFinite(x));
  const fx = finite(xs);
  const log = fx.length > 1 && Math.min(...fx) > 0 && Math.max(...fx) / Math.min(...fx) > 20;
  const tx = log ? Math.log10 : (x) => x;
  let [x0, x1] = [Math.min(...fx.map(tx)), Math.max(...fx.map(tx))];
  let [y0, y1] = [Math.min(...finite(ys)), Math.max(...finite(ys))];
  if (!Number.isFinite(x0)) [x0, x1] = [0, 1];
  if (!Number.isFinite(y0)) [y0, y1] = [0, 1];
  if (x0 === x1) { x0 -= 0.5 * Math.abs(x0 || 1); x1 += 0.5 * Math.abs(x1 || 1); }
  if (y0 === y1) { y0 -= 0.05; y1 += 0.05; }
  const pad = (a, b) => [a - (b - a) * 0.06, b + (b - a) * 0.06];
  const nonNegative = !log && fx.every((x) => x >= 0);
  [x0, x1] = pad(x0, x1); [y0, y1] = pad(y0, y1);
  if (nonNegative) x0 = Math.max(0, x0);
  const sx = (x) => L + ((tx(x) - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
  const svg = sv("svg", { class: "plot", id, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  const axis = sv("g", { class: "axis" });
  for (let i = 0; i <= 4; i++) {
    const xt = x0 + ((x1 - x0) * i) / 4, x = log ? 10 ** xt : xt, y = y0 + ((y1 - y0) * i) / 4;
    axis.append(sv("line", { class: "grid-line", x1: sx(x), x2: sx(x), y1: T, y2: H - B }), sv("text", { x: sx(x), y: H - B + 16, "text-anchor": "middle" }, tick(x)));
    axis.append(sv("line", { class: "grid-line", x1: L, x2: W - R, y1: sy(y), y2: sy(y) }), sv("text", { x: L - 6, y: sy(y) + 4, "text-anchor": "end" }, tick(y)));
  }
  axis.append(sv("line", { x1: L, x2: W - R, y1: H - B, y2: H - B }), sv("line", { x1: L, x2: L, y1: T, y2: H - B }));
  axis.append(sv("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle" }, log ? `${xLabel} (log scale)` : xLabel));
  axis.append(sv("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", transform: `rotate(-90 14 ${(T + H - B) / 2})` }, yLabel));
  svg.append(axis);
  marks(svg, sx, sy);
  return el("div", {}, el("h2", {}, title), svg, note ? el("div", { class: "muted" }, note) : null);
}
function tick(v) { const a = Math.abs(v); return a >= 100 ? v.toFixed(0) : a >= 1 ? v.toFixed(2) : a >= 0.01 || a === 0 ? v.toFixed(3) : v.toExponential(1); }

function point(cell, x, y, sx, sy, extra) {
  const c = cellById[cell];
  const cls = cell === selected ? "mark selected" : "mark";
  return sv("circle", { class: cls, "data-cell": cell, cx: sx(x), cy: sy(y), r: cell === selected ? 7 : 5, fill: colour(c.family) },
    sv("title", {}, `${cell} ${c.label}\n${extra}`));
}

// Quality against a cost (latency or money): one point per cell, Pareto frontier drawn.
function tradeoff(id, title, xLabel, xOf) {
  const pts = D.cells.map((c) => ({ cell: c.id, x: xOf(c.id), y: value(c.id, state.split) }));
  const missing = pts.filter((p) => p.x === null || p.x === undefined).length;
  const positive = pts.map((p) => p.x).filter((x) => x > 0);
  const floor = positive.length ? Math.min(...positive) : 0;
  const shown = pts.map((p) => ({ ...p, x: p.x ?? floor, y: p.y ?? 0 }));
  return plot(id, title, xLabel, `${column()} (${state.split})`, shown.map((p) => p.x), shown.map((p) => p.y), (svg, sx, sy) => {
    const sorted = [...shown].sort((a, b) => a.x - b.x || b.y - a.y);
    let best = -Infinity; const frontier = [];
    for (const p of sorted) if (p.y > best) { frontier.push(p); best = p.y; }
    svg.append(sv("polyline", { class: "frontier", points: frontier.map((p) => `${sx(p.x)},${sy(p.y)}`).join(" ") }));
    for (const p of shown) svg.append(point(p.cell, p.x, p.y, sx, sy, `${xLabel}: ${fmt(p.x, 3)} · ${column()}: ${fmt(p.y)}`));
  }, missing ? `${missing} cells have no ${xLabel} and sit at the left edge.` : "Dashed: the Pareto frontier (no other cell is both better and cheaper). Ringed: the selected cell.");
}

function curves() {
  const ys = [];
  const series = D.cells.map((c) => ({ cell: c.id, pts: D.ks.map((k) => { const r = rowOf(c.id, state.split); const t = r && r.metrics[`${state.metric}@${k}`]; const v = t ? t[0] : null; ys.push(v); return [k, v]; }) }));
  const families = [...new Set(D.cells.map((c) => c.family))];
  const legend = el("div", { class: "legend" }, families.map((f) => el("span", {}, el("i", { style: `background:${colour(f)}` }), f)));
  const p = plot("metric-at-k", `${state.metric}@k (${state.split}), one line per cell`, "k", state.metric, D.ks, ys, (svg, sx, sy) => {
    for (const s of series) {
      const c = cellById[s.cell];
      const pts = s.pts.filter((q) => q[1] !== null).map(([k, v]) => `${sx(k)},${sy(v)}`).join(" ");
      svg.append(sv("polyline", { class: s.cell === selected ? "mark selected" : "mark", "data-cell": s.cell, points: pts, stroke: colour(c.family) }, sv("title", {}, `${s.cell} ${c.label}`)));
    }
  });
  p.append(legend);
  return p;
}

function tuningReserved() {
  const pts = D.cells.map((c) => ({ cell: c.id, x: value(c.id, "tuning"), y: value(c.id, "reserved") }));
  const vals = pts.flatMap((p) => [p.x, p.y]);
  return plot("tuning-reserved", `${column()}: tuning against reserved`, "tuning", "reserved", vals, vals, (svg, sx, sy) => {
    const f = vals.filter((v) => v !== null);
    const lo = Math.min(...f), hi = Math.max(...f);
    if (Number.isFinite(lo)) svg.append(sv("line", { class: "diagonal", x1: sx(lo), y1: sy(lo), x2: sx(hi), y2: sy(hi) }));
    for (const p of pts) svg.append(point(p.cell, p.x ?? 0, p.y ?? 0, sx, sy, `tuning ${fmt(p.x)} · reserved ${fmt(p.y)}`));
  }, "Below the diagonal: the cell did worse on the cases it was not chosen on.");
}

function grid() {
  const idx = D.cases.map((c, i) => i).filter((i) => D.cases[i].split === state.split);
  const hit = (ci, k) => { const r = D.first[ci][k]; return r === -1 ? null : r > 0 && r <= rankK(); };
  const misses = (k) => D.cells.reduce((n, _, ci) => n + (hit(ci, k) === false ? 1 : 0), 0);
  idx.sort((a, b) => misses(b) - misses(a) || a - b);
  const cw = Math.max(2, Math.min(14, Math.floor(1100 / Math.max(1, idx.length)))), ch = 14, L = 56;
  const W = L + idx.length * cw + 4, H = D.cells.length * ch + 4;
  const detail = el("div", { id: "case-detail", class: "muted" }, "Click a column to see the case.");
  const show = (k) => {
    const c = D.cases[k];
    detail.replaceChildren(el("div", {}, el("strong", {}, c.id), `: ${c.question}`),
      el("div", {}, `exact terms: ${c.terms.length ? c.terms.join(", ") : "none"}${c.tags.length ? " · tags: " + c.tags.join(", ") : ""}`),
      el("table", {}, el("tr", {}, el("th", { class: "text" }, "cell"), el("th", { class: "text" }, "configuration"), el("th", {}, "rank of first relevant")),
        D.cells.map((cell, ci) => el("tr", {}, el("td", { class: "text" }, cell.id), el("td", { class: "text" }, cell.label), el("td", {}, D.first[ci][k] > 0 ? D.first[ci][k] : D.first[ci][k] === 0 ? "not found" : "not scored")))));
  };
  const svg = sv("svg", { class: "plot", id: "case-grid", viewBox: `0 0 ${W} ${H}`, "data-cells": D.cells.length, "data-cases": idx.length, style: `max-height:${Math.max(120, H)}px` });
  D.cells.forEach((cell, ci) => {
    svg.append(sv("text", { x: 2, y: ci * ch + 12 }, cell.id));
    idx.forEach((k, j) => {
      const h = hit(ci, k);
      svg.append(sv("rect", { class: "entry", x: L + j * cw, y: ci * ch + 2, width: cw - (cw > 3 ? 1 : 0), height: ch - 2, fill: h === null ? "#d9dde3" : h ? "#3b9a57" : "#d9534f", "data-case": D.cases[k].id },
        sv("title", {}, `${cell.id} · ${D.cases[k].id}: ${h === null ? "not scored" : h ? "hit" : "miss"} at ${rankK()}`)));
    });
  });
  svg.addEventListener("click", (e) => { const id = e.target.getAttribute && e.target.getAttribute("data-case"); if (id) show(D.cases.findIndex((c) => c.id === id)); });
  return el("section", { id: "grid" }, el("h2", {}, `Per question: hit (green) or miss (red) at k = ${rankK()}, ${state.split} cases, most missed first`), el("div", { class: "scroll" }, svg), detail);
}

function slices() {
  const rows = D.slices.filter((s) => s.split === state.split);
  const names = [...new Set(rows.map((s) => s.slice))];
  if (!names.length) return null;
  const at = (cell, name) => rows.find((s) => s.cell === cell && s.slice === name);
  return el("section", { id: "slices" }, el("h2", {}, `Slices: ${column()} (${state.split}) by exact-term tag, golden tag and the best cell's miss cause, with cases`),
    el("div", { class: "scroll" }, el("table", {}, el("tr", {}, el("th", { class: "text" }, "cell"), names.map((n) => el("th", {}, n))),
      D.cells.map((c) => el("tr", { class: c.id === selected ? "selected" : "" }, el("td", { class: "text" }, c.id),
        names.map((n) => { const s = at(c.id, n); return el("td", {}, s ? `${mean(s.metrics[column()])} · ${s.cases}` : "–"); }))))));
}

function causes() {
  const rows = D.rows.filter((r) => r.split === state.split && r.misses && r.misses["@" + state.k]);
  const names = rows.length ? Object.keys(rows[0].misses["@" + state.k]).filter((n) => rows.some((r) => r.misses["@" + state.k][n] > 0)) : [];
  if (!names.length) return null;
  return el("section", { id: "causes" }, el("h2", {}, `Why cells missed (${state.split}, k = ${state.k}): answerable cases without a relevant item, by first cause (misses.csv has each one with its evidence)`),
    el("div", { class: "scroll" }, el("table", {}, el("tr", {}, el("th", { class: "text" }, "cell"), el("th", {}, "misses"), names.map((n) => el("th", {}, n))),
      rows.map((r) => { const m = r.misses["@" + state.k]; return el("tr", { class: r.cell === selected ? "selected" : "" }, el("td", { class: "text" }, r.cell),
        el("td", {}, String(Object.values(m).reduce((a, b) => a + b, 0))), names.map((n) => el("td", {}, String(m[n])))); }))));
}

function filters() {
  const rows = D.rows.filter((r) => r.split === state.split);
  if (!rows.some((r) => r.filter !== "none")) return null;
  const byBase = {};
  for (const r of rows) { const base = cellById[r.cell].label.replace(/ filter=\S+/, ""); (byBase[base] ||= {})[r.filter] = r; }
  const modes = ["none", "in_query", "post"].filter((m) => rows.some((r) => r.filter === m));
  return el("section", { id: "filters" }, el("h2", {}, `Permission filters side by side (${state.split}): leaks, short lists at ${state.k}, ${column()}`),
    el("div", { class: "scroll" }, el("table", {}, el("tr", {}, el("th", { class: "text" }, "configuration"), modes.map((m) => el("th", {}, `${m}: leaks · short · ${column()}`))),
      Object.entries(byBase).map(([base, m]) => el("tr", {}, el("td", { class: "text" }, base),
        modes.map((mode) => { const r = m[mode]; return el("td", {}, r ? `${r.leaks} · ${r.short["@" + state.k] ?? "–"} · ${mean(r.metrics[column()])}` : "–"); }))))));
}

function matrixTable() {
  if (!D.table.length) return null;
  const [head, ...body] = D.table;
  const tbody = el("tbody");
  let order = { col: -1, desc: false };
  const fill = () => tbody.replaceChildren(...body.map((r) => el("tr", { class: r[0] === selected ? "selected" : "" }, r.map((v, i) => el("td", { class: isNaN(parseFloat(v)) ? "text" : "" }, v)))));
  const sortBy = (i) => {
    order = { col: i, desc: order.col === i ? !order.desc : true };
    const num = (v) => (v === "" ? -Infinity : parseFloat(v));
    body.sort((a, b) => { const x = num(a[i]), y = num(b[i]); const c = Number.isNaN(x) || Number.isNaN(y) ? String(a[i]).localeCompare(String(b[i])) : x - y; return order.desc ? -c : c; });
    fill();
  };
  fill();
  return el("section", { id: "matrix" }, el("h2", {}, "The whole matrix (click a header to sort)"),
    el("div", { class: "scroll" }, el("table", {}, el("thead", {}, el("tr", {}, head.map((h, i) => el("th", { class: body.length && isNaN(parseFloat(body[0][i])) ? "text" : "", onclick: () => sortBy(i) }, h)))), tbody)));
}

const views = el("div", { id: "views" });
function redraw() {
  views.replaceChildren(
    el("section", { id: "plots" }, el("div", { class: "plots" },
      tradeoff("quality-latency", "Quality against latency", "p50 ms", (c) => { const r = rowOf(c, state.split); return r ? r.p50 : null; }),
      tradeoff("quality-cost", "Quality against cost", `$ per 1k queries at ${state.k}`, (c) => { const r = rowOf(c, state.split); return r && r.usd ? r.usd["@" + state.k] : null; }),
      curves(),
      tuningReserved())),
    ...[grid(), causes(), slices(), filters()].filter(Boolean));
}
app.append(header(), controls(redraw), views);
redraw();
if (D.vs) app.append(el("section", { id: "diff" }, el("h2", {}, "Against the other run"), el("pre", {}, D.vs)));
const table = matrixTable();
if (table) app.append(table);
// `report.html#grid` shows one section alone (links, screenshots).
const only = location.hash && document.getElementById(location.hash.slice(1));
if (only) for (const s of document.querySelectorAll("section")) if (!s.contains(only) && !only.contains(s)) s.style.display = "none";
document.body.setAttribute("data-resources", String(performance.getEntriesByType("resource").length));
document.body.setAttribute("data-render-ms", String(Math.round(performance.now())));
document.body.setAttribute("data-rendered", "true");
