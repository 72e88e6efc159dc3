"use strict";
// ragsweep report: draws the run's inlined data as SVG. No library, no network.
const D = JSON.parse(document.getElementById("data").textContent);
const app = document.getElementById("app");
const SVG = "http://www.w3.org/2000/svg";
// Tableau 10: distinct at a glance, readable in print.
const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const SHAPES = { bm25: "circle", dense: "square", hybrid: "triangle" };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) e.append(c.nodeType ? c : String(c));
  return e;
}
function sv(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c.nodeType ? c : document.createTextNode(String(c)));
  return e;
}
// Fixed decimals without "-0.000".
const fmt = (v, d = 4) => { if (v === null || v === undefined) return "–"; const s = Number(v).toFixed(d); return /^-0\.?0*$/.test(s) ? s.slice(1) : s; };
const signed = (v, d = 4) => { const s = fmt(v, d); return s === "–" || s.startsWith("-") || Number(s) === 0 ? s : "+" + s; };
const mean = (t) => (t && t[0] !== null ? (t[1] !== null ? `${fmt(t[0])} (${fmt(t[1], 2)}–${fmt(t[2], 2)})` : fmt(t[0])) : "–");
const plural = (n, w) => `${n} ${w}${n === 1 ? "" : "s"}`;

const metrics = [...new Set(D.columns.map((c) => c.split("@")[0]))];
const [decisionMetric, decisionCut] = D.decision.split("@");
const hasSplit = (split) => D.rows.some((r) => r.split === split && r.metrics[D.decision] && r.metrics[D.decision][0] !== null);
const hasReserved = hasSplit("reserved"), hasTuning = hasSplit("tuning");
const cuts = D.cuts && D.cuts.length ? D.cuts : D.ks.map(String);
const isBudget = (cut) => String(cut).endsWith("t");
const state = { metric: decisionMetric || metrics[0], k: cuts.includes(decisionCut) ? decisionCut : cuts[0], split: hasReserved ? "reserved" : "tuning", grid: "disagree" };
const selected = D.selection ? D.selection.cell : null;
const cellById = Object.fromEntries(D.cells.map((c) => [c.id, c]));
const rowOf = (cell, split) => D.rows.find((r) => r.cell === cell && r.split === split);
const column = () => `${state.metric}@${state.k}`;
const value = (cell, split, col = column()) => { const r = rowOf(cell, split); const t = r && r.metrics[col]; return t ? t[0] : null; };
const shortOf = (cell) => (cellById[cell] ? cellById[cell].short : cell);

// Colour by the varying parameter with the most values (the retriever family has the shape).
const colourKey = (() => {
  const keys = D.varying.filter((k) => k !== "retriever");
  const distinct = (k) => new Set(D.cells.map((c) => c.config[k]).filter((v) => v !== "")).size;
  keys.sort((a, b) => distinct(b) - distinct(a));
  return keys[0] || (D.varying.includes("retriever") ? "retriever" : null);
})();
const colourValues = colourKey ? [...new Set(D.cells.map((c) => c.config[colourKey] || "–"))] : ["all cells"];
const colourOf = (cell) => PALETTE[colourValues.indexOf(colourKey ? cellById[cell].config[colourKey] || "–" : "all cells") % PALETTE.length];
const families = [...new Set(D.cells.map((c) => c.family))];

function header() {
  const s = D.selection;
  const splits = Object.entries(D.cases_per_split).map(([k, v]) => `${k} ${v}`).join(" · ");
  const parts = [
    el("h1", {}, `${D.experiment}`),
    el("div", { class: "muted" }, `run ${D.run_id} · unit ${D.unit} · corpus ${D.corpus.hash} (${D.corpus.documents} documents, ${D.corpus.public} public) · golden ${D.golden_hash} · cases ${splits}`),
  ];
  if (s) {
    parts.push(el("p", { id: "selection" },
      el("strong", {}, `Selected on tuning by ${s.metric}: ${s.cell}`), ` (${shortOf(s.cell)}) — tuning ${fmt(s.tuning)}, reserved ${fmt(s.reserved)}`,
      ` (rank ${s.reserved_rank ?? "–"} of ${s.cells}), optimism ${fmt(s.optimism)}, Kendall tau ${fmt(s.kendall_tau)}.`,
      s.equivalent ? ` Against the best (${s.best}) on tuning: ${s.equivalent.length - 1} equivalent within ±${s.margin}, ${s.undecided.length} undecided (not significantly worse is not equal).` : "",
      el("div", { class: "muted" }, "Optimism: tuning minus reserved score of the selected cell (how much choosing on tuning flattered it); rank: its place among the eligible cells on reserved."),
      (s.excluded || []).length ? el("div", { class: "muted" }, `Not eligible: ${s.excluded.map(([c, why]) => `${c} (${why})`).join("; ")}`) : null,
      s.rule ? el("div", { class: "muted" }, s.rule) : null,
      el("div", { class: "muted" }, `full configuration: ${cellById[s.cell] ? cellById[s.cell].label : s.label}`)));
  }
  if (D.no_selection) {
    const n = D.no_selection;
    parts.push(el("p", { id: "selection" },
      el("strong", {}, `No selection: no cell is eligible on ${n.metric}.`),
      ` ${n.rules.map(([rule, best]) => `${rule} (${best})`).join("; ")}.`,
      n.excluded.length ? el("div", { class: "muted" }, `Not eligible: ${n.excluded.map(([c, why]) => `${c} (${why})`).join("; ")}`) : null));
  }
  // One closed line per group, most decisive first: the decision stays on the first screen.
  const groups = D.warnings.map((g) => [g.about, g.warnings]).concat([["the golden set", D.health]]).filter(([, ws]) => ws.length);
  if (groups.length) {
    const total = groups.reduce((n, [, ws]) => n + ws.length, 0);
    parts.push(el("div", { id: "warnings", class: "warning" },
      el("div", {}, `${total} warning${total === 1 ? "" : "s"}: `, groups.map(([name, ws]) => `${ws.length} about ${name}`).join(" · ")),
      groups.map(([name, ws]) => el("details", { class: "warning-group" },
        el("summary", {}, `About ${name} (${ws.length})`),
        el("ul", {}, ws.map((w) => el("li", {}, w)))))));
  }
  return el("section", { id: "header" }, parts);
}

function controls(redraw) {
  const select = (name, options, current) => el("select", { id: `pick-${name}`, onchange: (e) => { state[name] = e.target.value; redraw(); } },
    options.map((o) => { const opt = el("option", { value: o }, o); if (String(o) === String(current)) opt.selected = true; return opt; }));
  const splits = [hasTuning && "tuning", hasReserved && "reserved"].filter(Boolean);
  return el("section", { class: "controls", id: "controls" },
    el("label", {}, "metric ", select("metric", metrics, state.metric)),
    el("label", {}, "k or budget ", select("k", cuts, state.k)),
    el("label", {}, "split ", select("split", splits.length ? splits : ["tuning"], state.split)));
}

// ---- axes: round ticks (1-2-5 steps), decades on log axes, given ticks for k ----
function niceStep(span, n) {
  const raw = span / n, p = 10 ** Math.floor(Math.log10(raw)), f = raw / p;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}
const decimalsOf = (step) => Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
function tickText(v) {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1000) return `${+(v / 1000).toPrecision(3)}k`;
  return String(+v.toPrecision(3));
}
// An axis from its values: {ticks: [{v, text}], log, map(v) → 0..1}; `opts.ticks` (the grid's k or
// budgets) are drawn as given, written exactly.
function axis(values, opts = {}) {
  const f = values.filter((v) => v !== null && v !== undefined && Number.isFinite(v));
  let lo = f.length ? Math.min(...f) : 0, hi = f.length ? Math.max(...f) : 1;
  const log = opts.log !== undefined ? opts.log : f.length > 1 && lo > 0 && hi / lo > 20;
  if (log) {
    const a = Math.floor(Math.log10(lo) + 1e-9), b = Math.ceil(Math.log10(hi) - 1e-9);
    const [l, h] = [a, Math.max(b, a + 1)];
    let ticks = [];
    for (let e = l; e <= h; e++) for (const m of h - l <= 2 ? [1, 2, 5] : [1]) { const v = m * 10 ** e; if (v >= 10 ** l && v <= 10 ** h) ticks.push(v); }
    if (opts.ticks) ticks = opts.ticks;
    const lg = (v) => Math.log10(v);
    const [d0, d1] = opts.ticks ? [lg(Math.min(...ticks)) - 0.08, lg(Math.max(...ticks)) + 0.08] : [l, h];
    return { log, ticks: ticks.map((v) => ({ v, text: opts.ticks ? String(v) : tickText(v) })), map: (v) => (lg(Math.max(v, 10 ** d0)) - d0) / (d1 - d0) };
  }
  if (opts.ticks) {
    const t = opts.ticks, pad = (Math.max(...t) - Math.min(...t)) * 0.05 || 0.5;
    const [d0, d1] = [Math.min(...t) - pad, Math.max(...t) + pad];
    return { log, ticks: t.map((v) => ({ v, text: String(v) })), map: (v) => (v - d0) / (d1 - d0) };
  }
  if (lo === hi) { lo -= opts.bounded ? 0.05 : Math.abs(lo) * 0.5 || 0.5; hi += opts.bounded ? 0.05 : Math.abs(hi) * 0.5 || 0.5; }
  let step = niceStep(hi - lo, 5);
  lo = Math.floor(lo / step + 1e-9) * step; hi = Math.ceil(hi / step - 1e-9) * step;
  if (opts.bounded) { lo = Math.max(0, lo); hi = Math.min(1, hi); }
  step = niceStep(hi - lo, 5);
  const d = decimalsOf(step), ticks = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-6; v += step) ticks.push({ v: +v.toFixed(d + 2), text: (+v.toFixed(d)).toFixed(d) });
  return { log, ticks, map: (v) => (Math.min(Math.max(v, lo), hi) - lo) / (hi - lo || 1) };
}

// A plot in a 600 × 380 box: `marks(svg, sx, sy)` draws into the plot area.
function plot(id, title, x, y, marks, opts = {}) {
  const W = 600, H = 380, L = 60, R = opts.right || 20, T = 14, B = 46;
  const sx = (v) => L + x.axis.map(v) * (W - L - R);
  const sy = (v) => H - B - y.axis.map(v) * (H - T - B);
  const svg = sv("svg", { class: "plot", id, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  const g = sv("g", { class: "axis" });
  for (const t of x.axis.ticks) g.append(sv("line", { class: "grid-line", x1: sx(t.v), x2: sx(t.v), y1: T, y2: H - B }), sv("text", { class: "tick x", x: sx(t.v), y: H - B + 15, "text-anchor": "middle" }, t.text));
  for (const t of y.axis.ticks) g.append(sv("line", { class: "grid-line", x1: L, x2: W - R, y1: sy(t.v), y2: sy(t.v) }), sv("text", { class: "tick y", x: L - 6, y: sy(t.v) + 4, "text-anchor": "end" }, t.text));
  g.append(sv("line", { x1: L, x2: W - R, y1: H - B, y2: H - B }), sv("line", { x1: L, x2: L, y1: T, y2: H - B }));
  g.append(sv("text", { class: "axis-title", x: (L + W - R) / 2, y: H - 10, "text-anchor": "middle" }, x.axis.log ? `${x.title} (log scale)` : x.title));
  g.append(sv("text", { class: "axis-title", x: 14, y: (T + H - B) / 2, "text-anchor": "middle", transform: `rotate(-90 14 ${(T + H - B) / 2})` }, y.title));
  svg.append(g);
  marks(svg, sx, sy);
  return el("div", { class: "panel" }, el("h2", {}, title), svg, opts.legend || null, opts.note ? el("div", { class: "muted" }, opts.note) : null);
}
// A panel that would show nothing says why instead.
const emptyPanel = (id, title, why) => el("div", { class: "panel empty", id }, el("h2", {}, title), el("p", { class: "muted" }, why));

function mark(cell, x, y, extra) {
  const shape = SHAPES[cellById[cell].family] || "diamond";
  const r = cell === selected ? 7 : 5, fill = colourOf(cell), cls = cell === selected ? "mark selected" : "mark";
  const tip = sv("title", {}, `${cell} ${shortOf(cell)}\n${extra}`);
  const a = { class: cls, "data-cell": cell, fill };
  if (shape === "circle") return sv("circle", { ...a, cx: x, cy: y, r }, tip);
  if (shape === "square") return sv("rect", { ...a, x: x - r, y: y - r, width: 2 * r, height: 2 * r }, tip);
  const pts = shape === "triangle" ? [[0, -r * 1.2], [r * 1.1, r * 0.8], [-r * 1.1, r * 0.8]] : [[0, -r * 1.2], [r * 1.2, 0], [0, r * 1.2], [-r * 1.2, 0]];
  return sv("polygon", { ...a, points: pts.map(([dx, dy]) => `${x + dx},${y + dy}`).join(" ") }, tip);
}

// Direct labels, most important first; a label that would overlap a placed one is left out.
function labels(svg, items) {
  const placed = [];
  const overlaps = (b) => placed.some((p) => b.x < p.x + p.w && b.x + b.w > p.x && b.y < p.y + p.h && b.y + b.h > p.y);
  for (const it of items) {
    const w = it.text.length * 6.2 + 4, h = 13;
    for (const [dx, dy, anchor] of [[9, -4, "start"], [9, 12, "start"], [-9, -4, "end"], [-9, 12, "end"], [0, -12, "middle"]]) {
      const x0 = anchor === "start" ? it.x + dx : anchor === "end" ? it.x + dx - w : it.x - w / 2;
      const box = { x: x0, y: it.y + dy - 10, w, h };
      if (x0 >= 2 && x0 + w <= 598 && !overlaps(box)) {
        placed.push(box);
        svg.append(sv("text", { class: `label${it.cell === selected ? " selected" : ""}`, "data-label": it.cell, x: it.x + dx, y: it.y + dy, "text-anchor": anchor }, it.text));
        break;
      }
    }
  }
}

// Labels for the points of a scatter plot (each cell once, in the order given); the selected
// cell's label carries its varying parameters.
function labelPoints(svg, points, sx, sy) {
  const unique = [...new Map(points.filter(Boolean).map((p) => [p.cell, p])).values()];
  labels(svg, unique.map((p) => ({ cell: p.cell, x: sx(p.x), y: sy(p.y), text: p.cell === selected ? `${p.cell} ${shortOf(p.cell)}` : p.cell })));
}

function legend(extra) {
  const items = [];
  if (colourKey && colourValues.length > 1) for (const v of colourValues) items.push(el("span", {}, el("i", { style: `background:${PALETTE[colourValues.indexOf(v) % PALETTE.length]}` }), `${colourKey}=${v}`));
  if (families.length > 1) for (const f of families) items.push(el("span", {}, el("b", { class: `shape ${SHAPES[f] || "diamond"}` }), f));
  items.push(el("span", {}, el("b", { class: "shape ring" }), `selected (${selected || "none"})`));
  return el("div", { class: "legend" }, items, extra || null);
}

// Quality against a cost: one mark per cell, the Pareto frontier, labels on what matters.
function tradeoff(id, title, xTitle, xOf) {
  const pts = D.cells.map((c) => ({ cell: c.id, x: xOf(c.id), y: value(c.id, state.split) })).filter((p) => p.x !== null && p.x !== undefined && p.y !== null);
  const x = { title: xTitle, axis: axis(pts.map((p) => p.x)) };
  const y = { title: `${column()} (${state.split})`, axis: axis(pts.map((p) => p.y), { bounded: true }) };
  const sorted = [...pts].sort((a, b) => a.x - b.x || b.y - a.y);
  let best = -Infinity; const frontier = [];
  for (const p of sorted) if (p.y > best) { frontier.push(p); best = p.y; }
  const top = [...pts].sort((a, b) => b.y - a.y).slice(0, 3);
  return plot(id, title, x, y, (svg, sx, sy) => {
    svg.append(sv("polyline", { class: "frontier", points: frontier.map((p) => `${sx(p.x)},${sy(p.y)}`).join(" ") }));
    for (const p of pts) svg.append(mark(p.cell, sx(p.x), sy(p.y), `${xTitle}: ${fmt(p.x, 3)} · ${column()}: ${fmt(p.y)}`));
    labelPoints(svg, [pts.find((p) => p.cell === selected), ...frontier, ...top], sx, sy);
  }, { legend: legend(), note: `Dashed: the Pareto frontier (no other cell is both better and cheaper). Labelled: the selected cell, the frontier and the top 3. ${D.cells.length - pts.length ? plural(D.cells.length - pts.length, "cell") + " without a value are not drawn." : ""}` });
}

// metric against k (or budget): at most 8 highlighted lines (the top cells and the selected one), the rest grey.
function curves() {
  const byBudget = isBudget(state.k);
  const xs = cuts.filter((c) => isBudget(c) === byBudget);
  const num = (c) => Number(String(c).replace("t", ""));
  const series = D.cells.map((c) => ({ cell: c.id, pts: xs.map((cut) => [num(cut), value(c.id, state.split, `${state.metric}@${cut}`)]).filter((p) => p[1] !== null) }));
  const score = (s) => value(s.cell, state.split) ?? -1;
  const ranked = [...series].sort((a, b) => score(b) - score(a));
  let top = ranked.slice(0, 8).map((s) => s.cell);
  if (selected && !top.includes(selected)) top = [...top.slice(0, 7), selected];
  const xTitle = byBudget ? "context budget (tokens)" : "k (results)";
  const x = { title: xTitle, axis: axis(xs.map(num), { ticks: xs.map(num), log: xs.length > 1 && num(xs[xs.length - 1]) / num(xs[0]) > 20 }) };
  const y = { title: `${state.metric} (${state.split})`, axis: axis(series.flatMap((s) => s.pts.map((p) => p[1])), { bounded: true }) };
  const colourLine = (cell) => PALETTE[top.indexOf(cell) % PALETTE.length];
  const id = "metric-at-k";
  const p = plot(id, `${state.metric} at each ${byBudget ? "budget" : "k"} (${state.split})`, x, y, (svg, sx, sy) => {
    for (const s of series.filter((s) => !top.includes(s.cell))) svg.append(sv("polyline", { class: "mark other", "data-cell": s.cell, points: s.pts.map(([k, v]) => `${sx(k)},${sy(v)}`).join(" ") }, sv("title", {}, `${s.cell} ${shortOf(s.cell)}`)));
    const ends = [];
    for (const s of series.filter((s) => top.includes(s.cell))) {
      svg.append(sv("polyline", { class: s.cell === selected ? "mark selected" : "mark", "data-cell": s.cell, points: s.pts.map(([k, v]) => `${sx(k)},${sy(v)}`).join(" "), style: `stroke:${colourLine(s.cell)}` }, sv("title", {}, `${s.cell} ${shortOf(s.cell)}`)));
      const last = s.pts[s.pts.length - 1];
      if (last) ends.push({ cell: s.cell, y: sy(last[1]), x: sx(last[0]) });
    }
    ends.sort((a, b) => a.y - b.y);
    for (let i = 1; i < ends.length; i++) ends[i].y = Math.max(ends[i].y, ends[i - 1].y + 12);
    for (const e of ends) svg.append(sv("text", { class: `label${e.cell === selected ? " selected" : ""}`, "data-label": e.cell, x: e.x + 6, y: e.y + 4, fill: colourLine(e.cell) }, e.cell));
  }, { right: 48, legend: el("div", { class: "legend" }, top.map((c) => el("span", {}, el("i", { style: `background:${colourLine(c)}` }), `${c} ${shortOf(c)}${c === selected ? " (selected)" : ""}`)), D.cells.length > top.length ? el("span", {}, el("i", { style: "background:#c8ccd2" }), `${plural(D.cells.length - top.length, "other cell")}`) : null) });
  return p;
}

function tuningReserved() {
  const title = `${column()}: tuning against reserved`;
  if (!hasTuning || !hasReserved) return emptyPanel("tuning-reserved", title, `Not drawn: the golden set has no ${hasTuning ? "reserved" : "tuning"} cases, so there is nothing to set against each other.`);
  const pts = D.cells.map((c) => ({ cell: c.id, x: value(c.id, "tuning"), y: value(c.id, "reserved") })).filter((p) => p.x !== null && p.y !== null);
  const both = axis(pts.flatMap((p) => [p.x, p.y]), { bounded: true });
  const top = [...pts].sort((a, b) => b.y - a.y).slice(0, 3);
  return plot("tuning-reserved", title, { title: "tuning", axis: both }, { title: "reserved", axis: both }, (svg, sx, sy) => {
    const t = both.ticks, lo = t[0].v, hi = t[t.length - 1].v;
    svg.append(sv("line", { class: "diagonal", x1: sx(lo), y1: sy(lo), x2: sx(hi), y2: sy(hi) }));
    for (const p of pts) svg.append(mark(p.cell, sx(p.x), sy(p.y), `tuning ${fmt(p.x)} · reserved ${fmt(p.y)}`));
    labelPoints(svg, [pts.find((p) => p.cell === selected), ...top], sx, sy);
  }, { legend: legend(), note: "Below the diagonal: the cell did worse on the cases it was not chosen on. Labelled: the selected cell and the top 3 on reserved." });
}

// ---- the per-question grid ----
const GRID_COLOURS = { hit: "#3b9a57", miss: "#d9534f", unanswerable: "#c9ced6", withheld: "#9ec9e8", leaked: "#7b3fa0" };
function gridStatus(ci, k) {
  const r = D.first[ci][k];
  if (r === -1) return "unanswerable";
  if (r === -2) return "withheld";
  if (r === -3) return "leaked";
  if (isBudget(state.k) && D.budget_hits[state.k]) { const h = D.budget_hits[state.k][ci][k]; return h === 1 ? "hit" : h === 0 ? "miss" : "unanswerable"; }
  return r > 0 && r <= Number(state.k) ? "hit" : "miss";
}
function grid() {
  const cellOrder = D.cells.map((c, i) => i).sort((a, b) => (value(D.cells[b].id, state.split) ?? -1) - (value(D.cells[a].id, state.split) ?? -1));
  const all = D.cases.map((c, i) => i).filter((i) => D.cases[i].split === state.split);
  // Per case: cells that hit it and cells that scored it, counted once.
  const hitCount = new Map(), scoredCount = new Map();
  for (const k of all) {
    const status = D.cells.map((_, ci) => gridStatus(ci, k));
    hitCount.set(k, status.filter((s) => s === "hit").length);
    scoredCount.set(k, status.filter((s) => s === "hit" || s === "miss").length);
  }
  const hits = (k) => hitCount.get(k), scored = (k) => scoredCount.get(k);
  const groups = { hit: [], missed: [], disagree: [], other: [] };
  for (const k of all) { const h = hits(k), s = scored(k); (s === 0 ? groups.other : h === s ? groups.hit : h === 0 ? groups.missed : groups.disagree).push(k); }
  const mode = state.grid === "disagree" && !groups.disagree.length ? "all" : state.grid;
  const shown = (mode === "all" ? all : mode === "missed" ? groups.missed : groups.disagree).slice().sort((a, b) => hits(a) - hits(b) || D.cases[a].id.localeCompare(D.cases[b].id));
  const cutText = isBudget(state.k) ? `budget ${state.k}` : `k = ${state.k}`;
  const counts = `${all.length} ${state.split} questions: ${groups.hit.length} every cell hit; ${groups.missed.length} every cell missed; ${groups.disagree.length} disagree${groups.other.length ? `; ${groups.other.length} not scored (unanswerable or restricted)` : ""} — ${mode === "all" ? (mode !== state.grid ? "none disagree, all" : "all") : mode === "missed" ? "every-cell-missed" : "disagreeing"} shown (${shown.length})`;
  const toggle = (mode, text) => el("button", { class: state.grid === mode ? "on" : "", "data-mode": mode, onclick: () => { state.grid = mode; document.getElementById("grid").replaceWith(grid()); } }, text);
  const rowLabel = (ci) => `${D.cells[ci].id} ${D.cells[ci].short}`;
  const L = Math.min(380, 12 + Math.max(...cellOrder.map((ci) => rowLabel(ci).length)) * 6.3), cw = Math.max(6, Math.min(16, Math.floor(900 / Math.max(1, shown.length)))), ch = 15;
  // Few columns: each carries its case id above it.
  const named = shown.length <= 60, T = named ? Math.min(120, 8 + Math.max(0, ...shown.map((k) => D.cases[k].id.length)) * 6.3) : 0;
  const W = L + shown.length * cw + 4, H = T + cellOrder.length * ch + 4;
  const detail = el("div", { id: "case-detail", class: "muted" }, "Click a column to see the question and its rank in every cell.");
  const show = (k) => {
    const c = D.cases[k];
    const rank = (ci) => { const r = D.first[ci][k]; return r > 0 ? r : r === 0 ? "not found" : r === -1 ? "unanswerable" : r === -2 ? "restricted (withheld)" : "restricted (leaked)"; };
    detail.replaceChildren(el("div", {}, el("strong", {}, c.id), `: ${c.question}`),
      el("div", {}, `exact terms: ${c.terms.length ? c.terms.join(", ") : "none"}${c.tags.length ? " · tags: " + c.tags.join(", ") : ""}`),
      el("table", {}, el("tr", {}, el("th", { class: "text" }, "cell"), el("th", { class: "text" }, "configuration"), el("th", {}, "rank of first relevant")),
        cellOrder.map((ci) => el("tr", { class: D.cells[ci].id === selected ? "selected" : "" }, el("td", { class: "text" }, D.cells[ci].id), el("td", { class: "text" }, D.cells[ci].short), el("td", {}, rank(ci))))));
  };
  const svg = sv("svg", { class: "grid", id: "case-grid", width: W, height: H, viewBox: `0 0 ${W} ${H}`, "data-cells": D.cells.length, "data-cases": shown.length, "data-column-px": cw, "data-disagree": groups.disagree.length });
  if (named) shown.forEach((k, j) => { const x = L + j * cw + cw / 2 + 3; svg.append(sv("text", { class: "case-id", x, y: T - 4, transform: `rotate(-60 ${x} ${T - 4})` }, D.cases[k].id)); });
  cellOrder.forEach((ci, row) => {
    svg.append(sv("text", { x: 2, y: T + row * ch + 12, class: D.cells[ci].id === selected ? "selected" : "" }, rowLabel(ci)));
    // One path per colour per row: thousands of questions stay a few hundred elements.
    const paths = {};
    shown.forEach((k, j) => { const s = gridStatus(ci, k); paths[s] = (paths[s] || "") + `M${L + j * cw},${T + row * ch + 2}h${cw - 1}v${ch - 2}h${1 - cw}z`; });
    for (const [s, d] of Object.entries(paths)) svg.append(sv("path", { class: `entry ${s}`, d, fill: GRID_COLOURS[s] }));
  });
  const tip = sv("title", {}, "");
  svg.append(tip);
  const at = (e) => { const p = svg.createSVGPoint(); p.x = e.clientX; p.y = e.clientY; const q = p.matrixTransform(svg.getScreenCTM().inverse()); const j = Math.floor((q.x - L) / cw), row = Math.floor((q.y - T) / ch); return j >= 0 && j < shown.length && row >= 0 && row < cellOrder.length ? [shown[j], cellOrder[row]] : null; };
  svg.addEventListener("mousemove", (e) => { const a = at(e); tip.textContent = a ? `${D.cells[a[1]].id} · ${D.cases[a[0]].id}: ${gridStatus(a[1], a[0])} at ${cutText} · judge these: ${(D.cases[a[0]].unjudged || []).length}` : ""; });
  svg.addEventListener("click", (e) => { const a = at(e); if (a) show(a[0]); });
  const key = el("div", { class: "legend" }, Object.entries(GRID_COLOURS).map(([s, c]) => el("span", {}, el("i", { style: `background:${c}` }), { hit: "hit", miss: "miss", unanswerable: "unanswerable (not scored)", withheld: "restricted answer withheld (correct)", leaked: "restricted answer returned (leak)" }[s])));
  return el("section", { id: "grid" }, el("h2", {}, `Per question at ${cutText}, ${state.split} cases; rows best first, columns by how many cells hit`),
    el("div", { id: "grid-counts" }, counts),
    el("div", { class: "toggles" }, toggle("disagree", "cells disagree"), toggle("missed", "every cell missed"), toggle("all", "all questions")),
    key, el("div", { class: "scroll-x" }, svg), detail);
}

function slices() {
  const rows = D.slices.filter((s) => s.split === state.split);
  const names = [...new Set(rows.map((s) => s.slice))];
  if (!names.length) return null;
  const at = (cell, name) => rows.find((s) => s.cell === cell && s.slice === name);
  return el("section", { id: "slices" }, el("h2", {}, `Slices: ${column()} (${state.split}) by exact-term tag, golden tag and the best cell's miss cause, with cases`),
    el("div", { class: "scroll" }, el("table", {}, el("thead", {}, el("tr", {}, el("th", { class: "text" }, "cell"), el("th", { class: "text" }, "configuration"), names.map((n) => el("th", {}, n)))),
      D.cells.map((c) => el("tr", { class: c.id === selected ? "selected" : "" }, el("td", { class: "text" }, c.id), el("td", { class: "text" }, c.short),
        names.map((n) => { const s = at(c.id, n); return el("td", {}, s ? `${mean(s.metrics[column()])} · ${s.cases}` : "–"); }))))));
}

function causes() {
  const rows = D.rows.filter((r) => r.split === state.split && r.misses && r.misses["@" + state.k]);
  const names = rows.length ? Object.keys(rows[0].misses["@" + state.k]).filter((n) => rows.some((r) => r.misses["@" + state.k][n] > 0)) : [];
  if (!names.length) return null;
  return el("section", { id: "causes" }, el("h2", {}, `Why cells missed (${state.split}, k = ${state.k}): answerable cases without a relevant item, by first cause (misses.csv has each one with its evidence)`),
    el("div", { class: "scroll" }, el("table", {}, el("thead", {}, el("tr", {}, el("th", { class: "text" }, "cell"), el("th", { class: "text" }, "configuration"), el("th", {}, "misses"), names.map((n) => el("th", {}, n)))),
      rows.map((r) => { const m = r.misses["@" + state.k]; return el("tr", { class: r.cell === selected ? "selected" : "" }, el("td", { class: "text" }, r.cell), el("td", { class: "text" }, shortOf(r.cell)),
        el("td", {}, String(Object.values(m).reduce((a, b) => a + b, 0))), names.map((n) => el("td", {}, String(m[n])))); }))));
}

// ---- where the labels are thin: what the cells returned that nobody judged (SPEC §9) ----
function thinLabels() {
  const thin = D.cases.filter((c) => c.split === state.split && c.unjudged && c.unjudged.length).sort((a, b) => b.unjudged.length - a.unjudged.length);
  if (!thin.length) return null;
  const units = (c) => c.unjudged.slice(0, 5).map((u) => `${u.id} (${u.cells.join(", ")})`).join("; ") + (c.unjudged.length > 5 ? `; … ${c.unjudged.length - 5} more` : "");
  return el("section", { id: "labels" }, el("h2", {}, `Where labels are thin (${state.split}): units the cells ranked in their top ${D.pool_k} that nobody judged, most-returned first — judge them with ragsweep judge, then ragsweep rescore`),
    el("div", { class: "scroll" }, el("table", {}, el("thead", {}, el("tr", {}, el("th", { class: "text" }, "case"), el("th", { class: "text" }, "question"), el("th", {}, "judge these"), el("th", { class: "text" }, "units (cells that returned them)"))),
      thin.slice(0, 100).map((c) => el("tr", {}, el("td", { class: "text" }, c.id), el("td", { class: "text" }, c.question), el("td", {}, String(c.unjudged.length)), el("td", { class: "text" }, units(c)))))),
    thin.length > 100 ? el("div", { class: "muted" }, `… and ${thin.length - 100} more cases`) : null);
}

function filters() {
  const rows = D.rows.filter((r) => r.split === state.split);
  if (!rows.some((r) => r.filter !== "none")) return null;
  const byBase = {};
  for (const r of rows) { const base = shortOf(r.cell).replace(/ ?filter=\S+/, "") || "(one configuration)"; (byBase[base] ||= {})[r.filter] = r; }
  const modes = ["none", "in_query", "post"].filter((m) => rows.some((r) => r.filter === m));
  return el("section", { id: "filters" }, el("h2", {}, `Permission filters side by side (${state.split}): leaks, short lists at ${state.k}, ${column()}`),
    el("div", { class: "scroll" }, el("table", {}, el("thead", {}, el("tr", {}, el("th", { class: "text" }, "configuration"), modes.map((m) => el("th", {}, `${m}: leaks · short · ${column()}`)))),
      Object.entries(byBase).map(([base, m]) => el("tr", {}, el("td", { class: "text" }, base),
        modes.map((mode) => { const r = m[mode]; return el("td", {}, r ? `${r.leaks} · ${r.short["@" + state.k] ?? "–"} · ${mean(r.metrics[column()])}` : "–"); }))))));
}

// ---- the matrix: one row per cell, tuning and reserved side by side ----
function matrixTable() {
  const cut = state.k;
  const splits = [hasTuning && "tuning", hasReserved && "reserved"].filter(Boolean);
  const ordered = [state.metric, ...metrics.filter((m) => m !== state.metric)];
  const cols = [{ name: "cell", text: true, get: (c) => c.id }];
  for (const k of D.varying) cols.push({ name: k, text: true, get: (c) => c.config[k] });
  for (const m of ordered) for (const s of splits) cols.push({ name: `${m}@${cut} ${s}`, get: (c) => value(c.id, s, `${m}@${cut}`), ci: (c) => { const r = rowOf(c.id, s); return r && r.metrics[`${m}@${cut}`]; } });
  const main = splits.includes("tuning") ? "tuning" : splits[0];
  const r = (c) => rowOf(c.id, main) || {};
  cols.push({ name: `p50 ms (${main})`, get: (c) => r(c).p50 ?? null }, { name: `p95 ms (${main})`, get: (c) => r(c).p95 ?? null });
  if (D.priced) cols.push({ name: `$ per 1k queries @${cut}`, get: (c) => (r(c).usd ? r(c).usd["@" + cut] : null) });
  cols.push({ name: "leaks", get: (c) => splits.reduce((n, s) => n + ((rowOf(c.id, s) || {}).leaks || 0), 0) });
  cols.push({ name: `short lists @${cut}`, get: (c) => splits.reduce((n, s) => n + (((rowOf(c.id, s) || {}).short || {})["@" + cut] || 0), 0) });
  if (D.rows.some((x) => Object.keys(x.under_return || {}).length)) {
    // Filter parity against the oracle (cells with an approximate or engine source; "–" for the others).
    const parity = (c, key) => (r(c)[key] || {})["@" + cut] ?? null;
    cols.push({ name: `under-return @${cut} (${main})`, get: (c) => parity(c, "under_return") });
    cols.push({ name: `recall vs oracle @${cut} (${main})`, get: (c) => parity(c, "recall_vs_oracle") });
  }
  const ineligible = new Set(((D.selection || {}).excluded || []).map(([c]) => c));
  cols.push({ name: "vs best", text: true, get: (c) => r(c).vs_best || (ineligible.has(c.id) ? "ineligible" : "") });
  cols.push({ name: "configuration", text: true, get: (c) => c.label });
  const show = (col, c) => { const v = col.get(c); if (col.ci) { const t = col.ci(c); return t ? mean(t) : "–"; } return typeof v === "number" ? (Number.isInteger(v) ? String(v) : fmt(v, v >= 100 ? 0 : v >= 1 ? 2 : 4)) : v ?? "–"; };
  let order = { col: cols.findIndex((c) => c.name === `${state.metric}@${cut} ${main}`), desc: true };
  const filters = cols.map(() => "");
  const match = (f, col, c) => {
    if (!f) return true;
    const v = col.get(c), m = f.match(/^\s*([<>]=?)\s*(-?[\d.]+)\s*$/);
    if (m && typeof v === "number") { const n = Number(m[2]); return m[1] === ">" ? v > n : m[1] === ">=" ? v >= n : m[1] === "<" ? v < n : v <= n; }
    return String(show(col, c)).toLowerCase().includes(f.toLowerCase());
  };
  const visible = () => {
    const rows = D.cells.filter((c) => cols.every((col, i) => match(filters[i], col, c)));
    const col = cols[order.col];
    if (col) rows.sort((a, b) => { const x = col.get(a), y = col.get(b); const c = typeof x === "number" && typeof y === "number" ? x - y : x === null ? -1 : y === null ? 1 : String(x).localeCompare(String(y), undefined, { numeric: true }); return order.desc ? -c : c; });
    return rows;
  };
  const tbody = el("tbody");
  const count = el("span", { class: "muted" });
  const fill = () => { const rows = visible(); count.textContent = ` ${rows.length} of ${plural(D.cells.length, "cell")} shown`; tbody.replaceChildren(...rows.map((c) => el("tr", { class: c.id === selected ? "selected" : "", "data-cell": c.id }, cols.map((col) => el("td", { class: col.text ? "text" : "" }, show(col, c)))))); };
  const head = el("tr", {}, cols.map((col, i) => el("th", { class: col.text ? "text" : "", onclick: () => { order = { col: i, desc: order.col === i ? !order.desc : !col.text }; fill(); } }, col.name)));
  const filterRow = el("tr", { class: "filters" }, cols.map((col, i) => el("th", {}, el("input", { type: "search", placeholder: col.text ? "filter" : "> 0.5", "aria-label": `filter ${col.name}`, oninput: (e) => { filters[i] = e.target.value; fill(); } }))));
  const csv = () => {
    const q = (v) => { const s = String(v ?? ""); return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s; };
    const lines = [cols.map((c) => q(c.name)).join(","), ...visible().map((c) => cols.map((col) => q(col.get(c))).join(","))];
    const a = el("a", { href: URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "text/csv" })), download: `${D.experiment}-${cut}-shown.csv` });
    document.body.append(a); a.click(); a.remove();
  };
  fill();
  return el("section", { id: "matrix" }, el("h2", {}, `The matrix at ${cut}: one row per cell, tuning and reserved side by side (click a header to sort; type in a filter, e.g. "pt" or "> 0.8")`),
    el("div", {}, el("button", { id: "matrix-csv", onclick: csv }, "Download what is shown (CSV)"), count, el("span", { class: "muted" }, " · matrix.csv beside this page has every column")),
    el("div", { class: "scroll" }, el("table", { id: "matrix-table" }, el("thead", {}, head, filterRow), tbody)));
}

// ---- against another run: every cell matched by configuration ----
function versus() {
  if (!D.vs) return null;
  const v = D.vs;
  const detail = el("div", { id: "vs-detail", class: "muted" }, "Click a row to see the questions it fixed and broke.");
  const list = (title, items) => el("div", {}, el("strong", {}, `${title}: ${items.length}`), el("ul", {}, items.map(([id, q, a, b]) => el("li", {}, `${id} (rank ${a ?? "–"} → ${b ?? "–"}): ${q}`))));
  const head = el("thead", {}, el("tr", {}, ["cell", "configuration", "other run's cell", "other run", "this run", "change (95% interval)", "p", "fixed", "broke", "cases"].map((h, i) => el("th", { class: i < 3 ? "text" : "" }, h))));
  const row = (c) => el("tr", { class: c.cell === selected ? "selected" : "", "data-cell": c.cell, onclick: () => detail.replaceChildren(el("div", {}, el("strong", {}, `${c.cell} ${c.label}`)), list("fixed (miss → hit)", c.fixed), list("broke (hit → miss)", c.broke)) },
    el("td", { class: "text" }, c.cell), el("td", { class: "text" }, c.label), el("td", { class: "text" }, c.other), el("td", {}, fmt(c.a)), el("td", {}, fmt(c.b)),
    el("td", { class: c.change < 0 ? "worse" : c.change > 0 ? "better" : "" }, `${signed(c.change)} (${fmt(c.lo, 3)} … ${fmt(c.hi, 3)})${c.not_comparable ? " not comparable" : ""}`),
    el("td", {}, fmt(c.p, 4)), el("td", {}, String(c.fixed.length)), el("td", {}, String(c.broke.length)), el("td", {}, String(c.n)));
  const unmatched = v.unmatched.length ? el("p", { class: "muted" }, "No counterpart in the other run: " + v.unmatched.map((u) => `${u.cell} (${u.label})`).join(", ")) : null;
  return el("section", { id: "diff" }, el("h2", {}, `Against ${v.other}: ${v.metric} on ${v.split}, cells matched by configuration`),
    v.banner ? el("div", { class: "warning" }, v.banner) : null,
    el("div", { class: "scroll" }, el("table", { id: "vs-table" }, head, el("tbody", {}, v.cells.map(row)))), unmatched, detail);
}

const views = el("div", { id: "views" });
function redraw() {
  const priced = D.priced;
  views.replaceChildren(
    el("section", { id: "plots" }, el("div", { class: "plots" },
      tradeoff("quality-latency", "Quality against latency", "p50 latency per query (ms)", (c) => { const r = rowOf(c, state.split); return r ? r.p50 : null; }),
      priced ? tradeoff("quality-cost", "Quality against cost", `$ per 1,000 queries at ${state.k}`, (c) => { const r = rowOf(c, state.split); return r && r.usd ? r.usd["@" + state.k] : null; })
        : emptyPanel("quality-cost", "Quality against cost", "Not drawn: no prices are declared ([cost] embedding_usd_per_1m_tokens, llm_usd_per_1m_input_tokens), so every cell costs 0. The context each cell sends is in the matrix (ctx_tokens)."),
      curves(),
      tuningReserved())),
    ...[grid(), causes(), thinLabels(), slices(), filters(), matrixTable()].filter(Boolean));
}
app.append(header(), controls(redraw));
const vs = versus();
if (vs) app.append(vs);
app.append(views);
redraw();
// `report.html#grid` shows one section alone (links, screenshots).
const only = location.hash && document.getElementById(location.hash.slice(1));
if (only) for (const s of document.querySelectorAll("section")) if (!s.contains(only) && !only.contains(s)) s.style.display = "none";
document.body.setAttribute("data-resources", String(performance.getEntriesByType("resource").length));
// How far down the page the decision and the first plot end (tests read it at a window size).
const bottomOf = (e) => (e ? String(Math.round(e.getBoundingClientRect().bottom + window.scrollY)) : "none");
document.body.setAttribute("data-selection-bottom", bottomOf(document.getElementById("selection")));
document.body.setAttribute("data-first-plot-bottom", bottomOf(document.querySelector("svg.plot")));
document.body.setAttribute("data-render-ms", String(Math.round(performance.now())));
document.body.setAttribute("data-rendered", "true");
