// The fairness run's page: the check table, a check's detail, the pull request's comparison and the check's
// evidence, all from the JSON in #fairness-data (report/html_page.py). Texts of the run (answers, prompts,
// names) are only ever set as text, never as markup; the only markup set is the report's own SVG.
"use strict";
const DATA = JSON.parse(document.getElementById("fairness-data").textContent);
const PAGE = 100; // evidence rows shown before "show more"

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== null && value !== undefined && value !== false) node.setAttribute(key, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === "") continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svg(markup) { // SVG made by the report's Python, every label escaped there
  const box = el("div", { class: "plot" });
  box.innerHTML = markup || "";
  return box;
}

function num(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value !== "number") return String(value);
  return Number.isInteger(value) ? String(value) : Math.abs(value) >= 1000 || Math.abs(value) < 0.001 && value !== 0
    ? value.toPrecision(3) : value.toFixed(3);
}

function fmt(value, format) {
  if (value === null || value === undefined) return "—";
  if (format === "signed") return typeof value === "number" ? (value > 0 ? "+" : "") + num(value) : String(value);
  if (format === "num") return num(value);
  if (format === "prob3") return value.map((p, i) => "ABC"[i] + " " + p.toFixed(2)).join(" · ");
  if (format === "list") return Array.isArray(value) ? value.map(item).join("\n") : String(value);
  if (Array.isArray(value)) return "[" + value.map(v => num(v)).join(", ") + "]";
  if (typeof value === "object") return Object.entries(value).map(([k, v]) => `${k}: ${num(v)}`).join(", ");
  return String(value);
}

function item(v) { // one element of a list field: an example pair, a template's preference, a text
  if (v === null || typeof v !== "object") return Array.isArray(v) ? v.join(" – ") : String(v);
  if (Array.isArray(v)) return v.join(" – ");
  if ("answer_a" in v) return `${v.id}  (lean ${num(v.lean)}, favours ${v.favours})\n  ${v.prompt}\n  A: ${v.answer_a}\n  B: ${v.answer_b}\n`;
  if ("template" in v) return `${v.flips ? "⇄ " : "  "}${v.template}  →  ${fmt(v.preference)}  (favours ${v.top})`;
  return JSON.stringify(v);
}

function badge(text) {
  return el("span", { class: "badge b-" + String(text).replace(/[^a-z]+/gi, "-").toLowerCase() }, String(text));
}

// -- the run and its checks ------------------------------------------------------------------------------

function header() {
  const run = DATA.run;
  const parts = [run.suites.join(", "), "model " + run.model, run.judge ? "judge " + run.judge : "",
    "seed " + run.seed, "profile " + run.profile, "gate " + run.gate, Math.round(run.confidence * 100) + "% intervals"];
  return el("header", {},
    el("h1", {}, "Fairness run"),
    el("p", { class: "run" }, parts.filter(Boolean).join(" · ")),
    run.complete ? "" : el("p", { class: "incomplete", id: "incomplete" }, "This run is NOT complete (" + run.status + "): " + run.why),
    run.trimmed ? el("p", { class: "trimmed" }, run.trimmed) : "");
}

function label(check) { return check.label; }

function checkTable() {
  const search = el("input", { id: "check-search", type: "search", placeholder: "search checks" });
  const words = [...new Set(DATA.checks.map(c => c.outcome_word))];
  const outcome = el("select", { id: "check-outcome" }, el("option", { value: "" }, "every outcome"),
    words.map(o => el("option", { value: o }, o)));
  const body = el("tbody");
  for (const check of DATA.checks) {
    const r = check.result;
    body.append(el("tr", { "data-check": label(check), "data-outcome": check.outcome_word, onclick: () => openCheck(label(check)) },
      el("td", {}, el("a", { href: "#check=" + encodeURIComponent(label(check)) }, label(check))),
      el("td", {}, r.measure), el("td", {}, badge(check.outcome_word)),
      el("td", { class: "num" }, num(r.estimate) + " [" + num(r.ci[0]) + ", " + num(r.ci[1]) + "]"),
      el("td", { class: "num" }, r.n), el("td", {}, check.threshold_text),
      el("td", {}, check.baseline ? badge(check.baseline.status) : "—"), el("td", {}, svg(check.plots.small))));
  }
  const filter = () => {
    const q = search.value.toLowerCase();
    for (const row of body.rows)
      row.hidden = !(row.textContent.toLowerCase().includes(q) && (!outcome.value || row.dataset.outcome === outcome.value));
  };
  search.addEventListener("input", filter);
  outcome.addEventListener("change", filter);
  const heads = ["check", "measure", "outcome", "estimate [interval]", "n", "threshold", "baseline", "against the threshold"];
  return el("section", { id: "checks" }, el("div", { class: "filters" }, search, outcome),
    el("table", { class: "checks" }, el("thead", {}, el("tr", {}, heads.map(h => el("th", {}, h)))), body));
}

function openCheck(name, itemId) {
  const check = DATA.checks.find(c => label(c) === name);
  if (!check) return;
  for (const row of document.querySelectorAll("table.checks tbody tr")) row.classList.toggle("open", row.dataset.check === name);
  const r = check.result, d = r.details || {};
  const detail = el("section", { id: "detail" },
    el("h2", {}, name, " ", badge(check.outcome_word)),
    el("p", { class: "verdict" }, `${r.measure} on ${r.subject}: ${num(r.estimate)}, ${Math.round(r.summary.confidence * 100)}% interval `
      + `[${num(r.ci[0])}, ${num(r.ci[1])}], n = ${r.n} (${r.n_unusable} unusable), threshold ${check.threshold_text}: ${check.verdict}.`),
    d.certifies ? el("p", { class: "certifies" }, "A PASS certifies " + d.certifies + ".") : "",
    r.unserved ? el("p", { class: "unserved" }, r.unserved) : "",
    el("p", { class: "fidelity" }, r.fidelity),
    svg(check.plots.full),
    check.baseline ? prView(check) : "",
    r.evidence ? evidenceView(r.evidence, check) : el("p", { class: "hint" }, "This check kept no evidence (it ran no answer)."));
  document.getElementById("detail").replaceWith(detail);
  history.replaceState(null, "", "#check=" + encodeURIComponent(name) + (itemId ? "&item=" + encodeURIComponent(itemId) : ""));
  if (itemId) openItem(itemId);
}

function prView(check) {
  const b = check.baseline, p = b.paired;
  const side = s => s ? `${num(s.estimate)} [${num(s.ci[0])}, ${num(s.ci[1])}], n = ${s.n}${s.model ? ", " + s.model : ""}` : "—";
  const how = p ? `paired on ${p.items} shared items in ${p.clusters} clusters (${p.method}), margin ${p.margin}`
    + (p.rho === null ? "" : `, ρ = ${num(p.rho)}`) + `, worth ${num(p.effective_n)} independent items`
    : "unpaired (Welch)" + (b.unpaired ? ": " + b.unpaired : "");
  const rows = [["status", b.status],
    ["run − baseline", `${fmt(b.difference, "signed")} [${fmt(b.ci && b.ci[0], "signed")}, ${fmt(b.ci && b.ci[1], "signed")}]`],
    ["how", how], ["in words", b.explanation]];
  const moved = p && p.moved && p.moved.length ? el("table", { class: "moved" },
    el("thead", {}, el("tr", {}, ["item", "baseline", "this run", "moved"].map(h => el("th", {}, h)))),
    el("tbody", {}, p.moved.map(m => el("tr", { "data-item": m.key, onclick: () => openItem(m.key, true) },
      el("td", {}, m.key), el("td", { class: "num" }, num(m.before)), el("td", { class: "num" }, num(m.after)),
      el("td", { class: "num" }, fmt(m.difference, "signed")))))) : "";
  return el("div", { class: "pr", id: "pr-view" }, el("h3", {}, "This run against its baseline"),
    el("div", { class: "sides" },
      el("div", { class: "side" }, el("h4", {}, "baseline"), el("p", {}, side(b.before))),
      el("div", { class: "side" }, el("h4", {}, "this run"), el("p", {}, side(b.after)))),
    el("dl", {}, rows.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    check.plots.paired ? [el("h4", {}, "The paired difference against the margin"), svg(check.plots.paired)] : "",
    moved ? [el("h4", {}, "Items that moved most (click: this run's evidence of the item)"), moved] : "");
}

// -- evidence ---------------------------------------------------------------------------------------------

function evidenceView(evidence, check) {
  const view = DATA.views[evidence.kind];
  if (!view) return el("div", { class: "evidence", id: "evidence" }, el("h3", {}, "Evidence (" + evidence.kind + ")"),
    el("pre", {}, JSON.stringify(evidence, null, 1)));
  const s = evidence.selection;
  return el("div", { class: "evidence", id: "evidence" }, el("h3", {}, view.title),
    el("p", { class: "selection" }, `Kept: ${s.rule} (${s.seen.toLocaleString("en")} seen`
      + (s.flagged ? `, ${s.flagged.toLocaleString("en")} flagged` : "") + ").",
      check.trimmed ? " " + check.trimmed : ""),
    (check.plots.charts || []).map(svg),
    view.tables.map(t => evidenceTable(t, evidence[t.source] || [], evidence)));
}

function evidenceTable(spec, rows, evidence) {
  const controls = [], state = { shown: PAGE, sort: spec.sort };
  const search = spec.search.length ? el("input", { type: "search", class: "ev-search", placeholder: "search " + spec.search.join(", ") }) : null;
  if (search) controls.push(search);
  const named = key => (spec.columns.find(c => c.key === key) || {}).label || key;
  const facets = spec.facets.map(key => el("select", { class: "ev-facet", "data-key": key },
    el("option", { value: "" }, "every " + named(key)),
    [...new Set(rows.map(r => String(r[key])))].sort().map(v => el("option", { value: v }, v))));
  controls.push(...facets);
  const least = spec.at_least ? el("input", { type: "number", step: "any", min: "0", class: "ev-least", placeholder: "|" + named(spec.at_least) + "| ≥" }) : null;
  if (least) controls.push(least);
  const count = el("span", { class: "count" });
  const body = el("tbody"), more = el("button", { class: "more", onclick: () => { state.shown += PAGE; draw(); } }, "show more");
  const head = el("tr", {}, spec.columns.map(c => el("th", { onclick: () => { state.sort = state.sort === "-" + c.key ? c.key : "-" + c.key; draw(); } }, c.label)));

  function kept() {
    const q = search ? search.value.toLowerCase() : "", min = least && least.value !== "" ? Number(least.value) : null;
    let out = rows.filter(r => facets.every(f => !f.value || String(r[f.dataset.key]) === f.value)
      && (!q || spec.search.some(k => String(r[k] ?? "").toLowerCase().includes(q)))
      && (min === null || Math.abs(r[spec.at_least] ?? 0) >= min));
    if (state.sort) {
      const abs = state.sort.startsWith("|"), desc = abs || state.sort.startsWith("-"), key = state.sort.replace(/^[-|]/, "");
      const value = r => { const v = r[key]; return v === null || v === undefined ? -Infinity : abs ? Math.abs(v) : v; };
      out = [...out].sort((a, b) => (value(a) < value(b) ? -1 : value(a) > value(b) ? 1 : 0) * (desc ? -1 : 1));
    }
    return out;
  }

  function draw() {
    const all = kept();
    body.replaceChildren(...all.slice(0, state.shown).map(r => el("tr", { class: "ev-row", "data-id": r.id, onclick: e => toggle(e.currentTarget, r) },
      spec.columns.map(c => el("td", { class: ["num", "signed"].includes(c.format) ? "num" : "" },
        c.format === "badge" ? badge(fmt(r[c.key])) : clip(fmt(r[c.key], c.format)))))));
    count.textContent = `${all.length} of ${rows.length}`;
    more.hidden = all.length <= state.shown;
  }

  function toggle(row, r) {
    if (row.nextSibling && row.nextSibling.classList.contains("drill")) { row.nextSibling.remove(); return; }
    row.after(el("tr", { class: "drill" }, el("td", { colspan: spec.columns.length }, drill(spec, r, evidence))));
  }

  for (const c of controls) c.addEventListener("input", () => { state.shown = PAGE; draw(); });
  draw();
  const box = el("div", { class: "ev-table", "data-source": spec.source }, el("h4", {}, spec.title, " ", count),
    controls.length ? el("div", { class: "filters" }, controls) : "", el("table", {}, el("thead", {}, head), body), more);
  box.reveal = () => { for (const c of controls) c.value = ""; state.shown = Infinity; draw(); }; // a deep link past the first page
  return box;
}

function clip(text) { return text.length > 160 ? text.slice(0, 160) + "…" : text; }

function refs(ids, source, evidence) { // ids of another table's rows, shown with those rows' texts where kept
  const rows = new Map((evidence[source] || []).map(row => [row.id, row]));
  return ids.map(id => rows.has(id) ? `${id}  (score ${fmt(rows.get(id).score, "signed")})\n  ${rows.get(id).answer.replace(/\n/g, "\n  ")}`
    : `${id}  (not kept)`).join("\n");
}

function drill(spec, r, evidence) {
  const pair = spec.pair ? el("div", { class: "pair" },
    el("div", {}, el("h5", {}, "A: " + (r[spec.pair[2]] ?? "")), el("pre", {}, r[spec.pair[0]] ?? "")),
    el("div", {}, el("h5", {}, "B: " + (r[spec.pair[3]] ?? "")), el("pre", {}, r[spec.pair[1]] ?? ""))) : "";
  return el("div", { class: "drill-body" }, r.prompt && spec.pair ? el("p", { class: "prompt" }, r.prompt) : "", pair,
    el("dl", {}, spec.detail.map(c => [el("dt", {}, c.label), el("dd", {}, el("pre", {},
      c.format.startsWith("refs:") ? refs(r[c.key] || [], c.format.slice(5), evidence) : fmt(r[c.key], c.format)))])));
}

function openItem(id, byItemKey) { // an evidence row by its id (from the PR view: by its item key)
  const match = r => byItemKey ? r.dataset.id === id || r.dataset.id.startsWith(id + "/") : r.dataset.id === id;
  const rows = () => [...document.querySelectorAll("#evidence tr.ev-row")];
  let row = rows().find(match);
  if (!row) {
    for (const table of document.querySelectorAll("#evidence .ev-table")) table.reveal();
    row = rows().find(match);
  }
  for (const old of document.querySelectorAll("tr.target")) old.classList.remove("target");
  if (!row) {
    const note = document.getElementById("evidence");
    if (note) note.prepend(el("p", { class: "missing" }, `Item ${id} was not kept as evidence (see how items were kept).`));
    return;
  }
  if (!(row.nextSibling && row.nextSibling.classList.contains("drill"))) row.click();
  row.classList.add("target");
  row.scrollIntoView({ block: "center" });
}

// -- start ------------------------------------------------------------------------------------------------

function start() {
  document.body.append(header(), checkTable(),
    el("section", { id: "detail" }, el("p", { class: "hint" }, "Click a check to see its evidence.")));
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("check")) openCheck(hash.get("check"), hash.get("item"));
  performance.mark("fairness-ready"); // what the load-time measurement reads
}

start();
