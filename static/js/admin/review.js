// The review page: a document segment by segment with every worker's spans as underline
// lanes (colour per category), the adjudicated layer as a tint, vote counts per candidate,
// the focused candidate's paired spans outlined, and the decisions (accept, reject, edit,
// add, done) sent as JSON with the version seen (a 409 names who changed it first).
// Document text, ids and comments are untrusted: text nodes only (dom.js), never HTML.

import { h, clear, byId } from "../dom.js";
import { attributeFields, attributesText, field, keepEdited, readAttributes } from "./review-fields.js";
import { selectionOffsets } from "./review-selection.js";

const root = byId("review");
const csrf = document.querySelector('meta[name="csrf-token"]').content;
const ui = {
  segments: byId("review-segments"),
  panel: byId("review-panel"),
  status: byId("review-status"),
  summary: byId("review-summary"),
  message: byId("review-message"),
  lanes: byId("lane-filter"),
};
const LANE_PX = 3; // each lane: a 2 px line under the text and a 1 px gap
let state = null;
let focus = 0;
let editing = null; // {kind: "candidate"|"added"|"new", key|row, values}
const hidden = new Set();
const categories = {};

for (const swatch of document.querySelectorAll(".swatch[data-color]")) {
  swatch.style.setProperty("background", swatch.dataset.color);
  categories[swatch.dataset.category] = swatch.dataset.color;
}
const colour = (category) => categories[category] || "#888888";
const pairedCategories = new Set([...document.querySelectorAll(".swatch[data-kind='paired']")].map((x) => x.dataset.category));
// a relation's other span may come anywhere and is optional (app/annotation/pairing.py)
const relationCategories = new Set([...document.querySelectorAll(".swatch[data-kind='relation']")].map((x) => x.dataset.category));
const takesPair = (category) => pairedCategories.has(category) || relationCategories.has(category);

async function call(url, body) {
  const answer = await fetch(url, {
    method: body === undefined ? "GET" : "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrf, Accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const data = await answer.json().catch(() => ({ error: `HTTP ${answer.status}` }));
  if (!answer.ok) throw Object.assign(new Error(data.error || `HTTP ${answer.status}`), { status: answer.status });
  return data;
}

const withDocument = (url) => `${url}${url.includes("?") ? "&" : "?"}document=${encodeURIComponent(root.dataset.document)}`;

function say(text, kind = "error") {
  ui.message.hidden = !text;
  ui.message.className = `flash flash-${kind === "error" ? "warn" : "ok"}`;
  ui.message.textContent = text || "";
}

async function send(url, body, done) {
  try {
    state = await call(withDocument(url), body);
    editing = null;
    say(done, "ok");
  } catch (error) {
    say(error.message);
    if (error.status === 409) state = await call(root.dataset.stateUrl);
  }
  render();
}

// --- drawing -----------------------------------------------------------------------------

function laneNames() {
  const names = [...state.workers];
  if (state.suggestions.length) names.push("detector");
  return names;
}

function rangesOf(segment) {
  const lanes = laneNames();
  const ranges = [];
  for (const m of state.marks) {
    if (m.segment === segment && !hidden.has(m.worker)) {
      ranges.push({ lane: lanes.indexOf(m.worker), start: m.start, end: m.end, color: colour(m.category), mark: m.id });
    }
  }
  if (!hidden.has("detector")) {
    for (const s of state.suggestions) {
      if (s.segment === segment) ranges.push({ lane: lanes.indexOf("detector"), start: s.start, end: s.end, color: colour(s.category) });
    }
  }
  for (const row of acceptedRows()) {
    if (row.segment === segment) ranges.push({ layer: true, start: row.start, end: row.end, color: colour(row.category) });
  }
  const current = state.candidates[focus];
  if (current) {
    for (const id of current.marks) {
      const m = markById(id);
      const p = m && m.paired;
      if (p && p.segment === segment) ranges.push({ paired: true, start: p.start, end: p.end_segment !== undefined && p.end_segment !== segment ? Infinity : p.end });
      else if (p && p.end_segment !== undefined && p.segment < segment && segment <= p.end_segment) ranges.push({ paired: true, start: 0, end: segment === p.end_segment ? p.end : Infinity });
    }
    if (current.segment === segment) ranges.push({ focus: true, start: current.proposal.start, end: current.proposal.end });
  }
  return ranges;
}

function acceptedRows() {
  const rows = state.candidates.map((c) => c.decision).filter(Boolean);
  return [...rows, ...state.added].filter((row) => row.decision === "accepted");
}

function markById(id) {
  return state.marks.find((m) => m.id === id);
}

function shadow(covering, laneCount) {
  const parts = [];
  for (let lane = 0; lane < laneCount; lane += 1) {
    const hit = covering.find((r) => r.lane === lane);
    parts.push(`0 ${lane * LANE_PX + 1}px 0 0 #fff`);
    parts.push(`0 ${lane * LANE_PX + LANE_PX}px 0 0 ${hit ? hit.color : "#fff"}`);
  }
  return parts.join(", ");
}

function drawSegment(text, segment) {
  const chars = Array.from(text);
  const ranges = rangesOf(segment).map((r) => ({ ...r, end: Math.min(r.end, chars.length) }));
  const cuts = new Set([0, chars.length]);
  for (const r of ranges) cuts.add(r.start).add(r.end);
  const points = [...cuts].sort((a, b) => a - b);
  const badges = new Map();
  for (const c of state.candidates) {
    if (c.segment !== segment) continue;
    const list = badges.get(c.proposal.end) || [];
    list.push(c);
    badges.set(c.proposal.end, list);
  }
  const laneCount = laneNames().length;
  const out = [];
  for (let i = 0; i + 1 < points.length; i += 1) {
    const [a, b] = [points[i], points[i + 1]];
    const covering = ranges.filter((r) => r.start <= a && b <= r.end);
    const piece = h("span", { class: "piece", dataset: { start: String(a) } }, chars.slice(a, b).join(""));
    if (covering.some((r) => r.lane !== undefined)) piece.style.setProperty("box-shadow", shadow(covering, laneCount));
    const layer = covering.find((r) => r.layer);
    if (layer) {
      piece.classList.add("in-layer");
      piece.style.setProperty("--layer", layer.color);
    }
    if (covering.some((r) => r.paired)) piece.classList.add("paired-focus");
    if (covering.some((r) => r.focus)) piece.classList.add("focus");
    out.push(piece);
    for (const c of badges.get(b) || []) {
      const index = state.candidates.indexOf(c);
      out.push(
        h("button", {
          type: "button",
          class: `votes${c.unanimous ? "" : " disagree"}${c.decision ? ` decided-${c.decision.decision}` : ""}${index === focus ? " current" : ""}`,
          title: `${c.category}: ${c.votes} of ${c.workers} workers`,
          "aria-label": `${c.votes}/${c.workers}: candidate ${index + 1}, ${c.category}, ${c.votes} of ${c.workers} workers`,
          onclick: () => moveTo(index),
        }, `${c.votes}/${c.workers}`),
      );
    }
  }
  return out;
}

function renderLanes() {
  if (ui.lanes.dataset.drawn) return;
  ui.lanes.dataset.drawn = "1";
  laneNames().forEach((name, lane) => {
    const box = h("input", { type: "checkbox", checked: true, onchange: (event) => {
      if (event.target.checked) hidden.delete(name);
      else hidden.add(name);
      render();
    } });
    const sample = h("span", { class: "lane-sample", "aria-hidden": "true" });
    sample.style.setProperty("box-shadow", shadow([{ lane, color: "#1d232b" }], laneNames().length));
    ui.lanes.append(h("label", { class: "lane", title: `underline ${lane + 1} from the top` }, box, sample, name === "detector" ? "detector (suggestions)" : name));
  });
}

function renderSummary() {
  const st = state.status;
  ui.status.textContent = st.status.replace("_", " ");
  ui.status.className = `status status-${st.status}`;
  ui.status.title = st.updated_by ? `by ${st.updated_by} at ${st.updated_at}` : "";
  const decided = state.candidates.filter((c) => c.decision).length;
  const disagreements = state.candidates.filter((c) => !c.unanimous).length;
  ui.summary.textContent = `${state.workers.length} workers · ${state.candidates.length} candidates · ${disagreements} disagreements · ${decided} decided · ${state.added.filter((r) => r.decision === "accepted").length} added · ${acceptedRows().length} in the adjudicated layer`;
}

function render() {
  renderLanes();
  renderSummary();
  const sections = state.segments.map((text, segment) =>
    h("section", { class: "review-segment", dataset: { segment: String(segment) } },
      h("h2", { class: "segment-number" }, `Segment ${segment + 1}`),
      h("p", { class: "review-text", style: null }, drawSegment(text, segment))),
  );
  clear(ui.segments).append(...sections);
  const laneCount = laneNames().length;
  for (const p of ui.segments.querySelectorAll(".review-text")) p.style.setProperty("--lanes", String(laneCount));
  renderPanel();
}

// --- the panel: the focused candidate, the edit form, added errors --------------------------

function describe(m) {
  const paired = m.paired ? ` ← paired: “${m.paired.text}” (segment ${m.paired.segment + 1})` : "";
  return [h("strong", {}, `${m.worker}: `), `“${m.text}”`, paired, attributesText(m.attributes), m.comment ? h("span", { class: "comment" }, h("br"), `Comment: ${m.comment}`) : ""];
}

function decisionLine(row) {
  if (!row) return h("p", { class: "decision undecided" }, "Undecided");
  const what = row.decision === "accepted" ? (row.origin === "edited" ? "Accepted (edited)" : row.origin === "auto" ? "Auto-accepted" : "Accepted") : "Rejected";
  const moved = row.origin === "edited" ? [h("br"), `as ${row.category} “${row.text}”`] : [];
  const note = row.comment ? [h("br"), h("span", { class: "comment", id: "decision-comment" }, `Comment: ${row.comment}`)] : [];
  return h("p", { class: `decision ${row.decision}` }, `${what} by ${row.decided_by} · version ${row.version}`, moved, attributesText(row.attributes), note);
}

function renderPanel() {
  clear(ui.panel);
  const c = state.candidates[focus];
  if (!c) ui.panel.append(h("p", { class: "empty" }, "No candidates: no worker marked anything here."));
  else {
    ui.panel.append(
      h("h2", {}, `Candidate ${focus + 1} of ${state.candidates.length}`),
      h("p", { class: "cand-meta" }, h("span", { class: "cat-chip", dataset: { cat: c.category } }, c.category), ` ${c.votes} of ${c.workers} workers · segment ${c.segment + 1} · `, c.unanimous ? "unanimous" : h("strong", {}, "disagreement")),
      h("blockquote", { class: "proposal" }, c.proposal.text),
      decisionLine(c.decision),
      h("ul", { class: "marks" }, c.marks.map((id) => h("li", {}, describe(markById(id))))),
      h("div", { class: "decide" },
        h("button", { type: "button", class: "primary", id: "accept", onclick: () => decide("accept") }, "Accept ", h("kbd", {}, "a")),
        h("button", { type: "button", id: "reject", onclick: () => decide("reject") }, "Reject ", h("kbd", {}, "r")),
        h("button", { type: "button", id: "edit", onclick: () => startEdit() }, "Edit ", h("kbd", {}, "e"))),
    );
    for (const chip of ui.panel.querySelectorAll(".cat-chip")) chip.style.setProperty("--chip", colour(chip.dataset.cat));
  }
  if (editing) ui.panel.append(editForm());
  if (state.added.length) {
    ui.panel.append(h("h3", {}, "Added by reviewers"), h("ul", { class: "marks" }, state.added.map((row) =>
      h("li", { class: row.decision, title: row.stale ? "decided on a candidate that later marks regrouped" : null },
        `${row.category} “${row.text}” (segment ${row.segment + 1}${row.stale ? ", earlier decision" : ""}) `, row.comment ? h("span", { class: "comment" }, `${row.comment} `) : "",
        row.decision === "accepted" ? h("button", { type: "button", class: "small", onclick: () => send(root.dataset.changeUrl.replace(/0$/, row.id), { decision: "reject", version: row.version }, "Withdrawn.") }, "Withdraw") : "withdrawn"))));
  }
}

function valuesOf(source) {
  return { segment: source.segment, start: source.start, end: source.end, category: source.category, paired: source.paired ? { ...source.paired } : null, comment: source.comment || "", attributes: { ...(source.attributes || {}) } };
}

function startEdit(kind = "candidate", values = null) {
  const c = state.candidates[focus];
  if (kind === "candidate" && !c) return;
  const base = values || valuesOf(c.decision && c.decision.decision === "accepted" ? c.decision : c.proposal);
  editing = { kind, key: c && c.key, values: base };
  render();
  const first = ui.panel.querySelector("#edit-category");
  if (first) first.focus();
}

let picked = null; // the latest selection in the document: {segment, start, end} in code points

function notePick() {
  const found = selectionOffsets(ui.segments);
  if (found.outside) return;
  picked = found.none || found.across ? null : found;
  if (found.across) say("Select text inside one segment: a span cannot cross a segment break.");
  const label = document.getElementById("edit-picked");
  if (label) label.textContent = pickedText();
}

function pickedText() {
  if (!picked) return "Nothing selected: select the text in the document.";
  return `Selected: “${slice(picked.segment, picked.start, picked.end)}” (segment ${picked.segment + 1})`;
}

function needPick() {
  if (picked) return true;
  say("Select the error's text in the document first: nothing is selected.");
  return false;
}

ui.segments.addEventListener("mouseup", notePick);
ui.segments.addEventListener("keyup", notePick);
ui.segments.addEventListener("touchend", notePick);

function useSelection(which) {
  if (!needPick()) return;
  const v = editing.values;
  if (which === "paired") v.paired = { segment: picked.segment, start: picked.start, end: picked.end, text: slice(picked.segment, picked.start, picked.end) };
  else Object.assign(v, { segment: picked.segment, start: picked.start, end: picked.end });
  keepEdited(v);
  say(which === "paired" ? "The earlier span is the selected text." : "The span is the selected text.", "ok");
  renderPanel();
}

function editForm() {
  const v = editing.values;
  const paired = takesPair(v.category) || v.paired;
  const select = h("select", { id: "edit-category", onchange: () => {
    keepEdited(v);
    if (takesPair(v.category) !== Boolean(paired)) renderPanel();
    else clear(byId("edit-attributes")).append(...attributeFields(state.attributes[v.category], v.attributes));
  } }, Object.keys(categories).map((id) => h("option", { value: id, selected: id === v.category }, id)));
  const preview = h("blockquote", { class: "proposal", id: "edit-preview" });
  const form = h("form", { class: "edit-form stack", id: "edit-form", onsubmit: (event) => { event.preventDefault(); saveEdit(); } },
    h("h3", {}, editing.kind === "new" ? "Add an error" : "Edit"),
    preview,
    h("p", { class: "field-hint", id: "edit-picked", "aria-live": "polite" }, pickedText()),
    h("div", { class: "decide" },
      h("button", { type: "button", id: "edit-use-selection", onclick: () => useSelection("span") }, "Use the selected text"),
      paired ? h("button", { type: "button", id: "edit-use-paired", onclick: () => useSelection("paired") }, relationCategories.has(v.category) ? "…as the linked span" : "…as the earlier span") : null),
    h("label", { for: "edit-category" }, "Category", select),
    h("div", { class: "edit-grid", id: "edit-attributes" }, attributeFields(state.attributes[v.category], v.attributes)),
    h("label", { for: "edit-comment" }, "Comment", h("textarea", { id: "edit-comment", rows: "3", maxlength: "5000" }, v.comment || "")),
    h("details", { class: "offsets" }, h("summary", {}, "Offsets (code points, for fine tuning)"),
      h("div", { class: "edit-grid" }, field("Segment", "edit-segment", v.segment + 1, { min: "1" }), field("Start", "edit-start", v.start), field("End", "edit-end", v.end)),
      h("div", { class: "edit-grid" }, field("Paired segment", "edit-psegment", v.paired ? v.paired.segment + 1 : "", { min: "1" }), field("Paired start", "edit-pstart", v.paired ? v.paired.start : ""), field("Paired end", "edit-pend", v.paired ? v.paired.end : ""))),
    h("div", { class: "decide" }, h("button", { type: "submit", class: "primary", id: "save-edit" }, "Save ", h("kbd", {}, "Enter")), h("button", { type: "button", onclick: () => { editing = null; render(); } }, "Cancel ", h("kbd", {}, "Esc"))),
  );
  const update = () => {
    const body = readForm(form);
    preview.textContent = body ? (body.text ? `“${body.text}”` : "(empty: select the error's text)") : "(out of range)";
    if (body && body.paired) preview.append(h("br"), `earlier span: “${body.paired.text}”`);
  };
  form.addEventListener("input", update);
  queueMicrotask(update);
  return form;
}

function slice(segment, start, end) {
  const text = state.segments[segment];
  return text === undefined ? undefined : Array.from(text).slice(start, end).join("");
}

function readForm(form) {
  const num = (id) => (form.querySelector(`#${id}`).value === "" ? null : Number(form.querySelector(`#${id}`).value));
  const segment = num("edit-segment") - 1;
  const body = { segment, start: num("edit-start"), end: num("edit-end"), category: form.querySelector("#edit-category").value, comment: form.querySelector("#edit-comment").value };
  body.text = slice(segment, body.start, body.end);
  if (body.text === undefined) return null;
  body.attributes = readAttributes(form);
  const ps = num("edit-psegment");
  const old = editing.values.paired;
  if (ps !== null && num("edit-pstart") !== null && num("edit-pend") !== null) {
    const paired = { segment: ps - 1, start: num("edit-pstart"), end: num("edit-pend") };
    if (old && old.end_segment !== undefined && old.segment === paired.segment && old.start === paired.start && old.end === paired.end) body.paired = old;
    else body.paired = { ...paired, text: slice(paired.segment, paired.start, paired.end) };
  } else body.paired = null;
  return body;
}

function saveEdit() {
  const body = readForm(byId("edit-form"));
  if (!body) return say("The edit's offsets are out of range.");
  if (!body.text || body.end <= body.start) return say("The span is empty: select the error's text in the document, then “Use the selected text”.");
  if (body.paired && !body.paired.text) return say("The earlier span is empty: select it, then “…as the earlier span”.");
  if (editing.kind === "new") return send(root.dataset.addUrl, { edit: body }, "Added.");
  const c = state.candidates.find((x) => x.key === editing.key);
  return send(root.dataset.decideUrl.replace("KEY", encodeURIComponent(c.key)), { decision: "accept", version: c.decision ? c.decision.version : 0, edit: body }, "Accepted as edited.");
}

function decide(decision) {
  const c = state.candidates[focus];
  if (!c) return;
  const url = root.dataset.decideUrl.replace("KEY", encodeURIComponent(c.key));
  send(url, { decision, version: c.decision ? c.decision.version : 0 }, decision === "accept" ? "Accepted." : "Rejected.").then(() => moveTo(focus));
}

function addFromSelection() {
  if (!needPick()) return;
  const category = state.candidates[focus] ? state.candidates[focus].category : Object.keys(categories)[0];
  startEdit("new", { segment: picked.segment, start: picked.start, end: picked.end, category, paired: null, comment: "", attributes: {} });
}

// --- auto-accept this document: the count first, then the researcher's yes (a posterior: the server's)
function autoAccept() {
  const n = Number(byId("auto-min-workers").value);
  if (!Number.isInteger(n) || n < 1) return say("The number of workers must be a whole number, at least 1.");
  const raw = byId("auto-min-posterior").value.trim(), p = raw === "" ? null : Number(raw);
  if (p !== null && !(p >= 0 && p <= 1)) return say("The minimum posterior must be a number from 0 to 1.");
  const count = state.candidates.filter((c) => !c.decision && c.votes >= n && (p === null || (c.posterior !== null && c.posterior >= p))).length;
  const rule = `marked by at least ${n} workers${p === null ? "" : ` and held by the consensus (MACE posterior at least ${p})`}`;
  if (!count) return say(`No undecided candidate of this document is ${rule}.`, "ok");
  if (!window.confirm(`Accept ${count} candidate${count === 1 ? "" : "s"} of this document (${root.dataset.document}) ${rule}, as proposed? Only this document changes.`)) return undefined;
  const body = p === null ? { min_workers: n, expected: count } : { min_workers: n, expected: count, min_posterior: p };
  return send(root.dataset.autoUrl, body, `Auto-accepted ${count} candidate${count === 1 ? "" : "s"}.`);
}

function moveTo(index) {
  if (!state.candidates.length) return;
  focus = Math.max(0, Math.min(state.candidates.length - 1, index));
  editing = null;
  render();
  const target = ui.segments.querySelector(".votes.current") || ui.segments.querySelector(".focus");
  if (target) target.scrollIntoView({ block: "center" });
}

function nextDisagreement(step) {
  const n = state.candidates.length;
  for (let i = 1; i <= n; i += 1) {
    const index = (focus + step * i + n) % n;
    if (!state.candidates[index].unanimous) return moveTo(index);
  }
  return say("No disagreements in this document.", "ok");
}

function setStatus(status) {
  send(root.dataset.statusUrl, { status, version: state.status.version }, `Marked ${status.replace("_", " ")}.`);
}

document.addEventListener("keydown", (event) => {
  if (!state) return;
  const inField = event.target.closest && event.target.closest("input, select, textarea");
  if (event.key === "Escape" && editing) { editing = null; render(); return; }
  if (event.key === "Enter" && editing && byId("edit-form").contains(event.target) && !event.target.closest("textarea, button, summary")) {
    event.preventDefault();
    saveEdit();
    return;
  }
  if (inField || event.ctrlKey || event.metaKey || event.altKey) return;
  const actions = {
    j: () => moveTo(focus + 1),
    k: () => moveTo(focus - 1),
    d: () => nextDisagreement(1),
    u: () => nextDisagreement(-1),
    a: () => decide("accept"),
    r: () => decide("reject"),
    e: () => startEdit(),
    "+": () => addFromSelection(),
    D: () => setStatus("done"),
  };
  const action = actions[event.key];
  if (action) { event.preventDefault(); action(); }
});

byId("mark-done").addEventListener("click", () => setStatus("done"));
byId("add-error").addEventListener("click", () => addFromSelection());
byId("auto-accept-document").addEventListener("submit", (event) => { event.preventDefault(); autoAccept(); });
byId("mark-in-review").addEventListener("click", () => setStatus("in_review"));

call(root.dataset.stateUrl).then((data) => {
  state = data;
  root.dataset.ready = "1";
  render();
}, (error) => say(error.message));
