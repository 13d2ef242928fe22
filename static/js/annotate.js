// The annotate page: context box + current segment, span selection, taxonomy categories,
// paired spans, durable saving through the outbox, entity cues and detector suggestions.
// All document text is inserted as text nodes; nothing here parses HTML.

import { append, byId, clear, h, setVar } from "./dom.js";
import { renderEntityPanel, wireEntityHover } from "./entities.js";
import { groupedCategories, renderInstructions } from "./instructions.js";
import { converter, snapToSentence, snapToWords } from "./offsets.js";
import { Outbox, requestJson } from "./outbox.js";
import { readSelection, renderSegmentText } from "./textview.js";

const root = byId("annotate");
const API = root.dataset.api;
const DONE_URL = root.dataset.doneUrl;
const TOKEN = root.dataset.token;

const el = {
  progressText: byId("progress-text"),
  progressBar: byId("progress-bar"),
  saveStatus: byId("save-status"),
  banner: byId("banner"),
  instructions: byId("instructions"),
  instructionsBody: byId("instructions-body"),
  contextSection: byId("context-section"),
  context: byId("context"),
  currentLabel: byId("current-label"),
  current: byId("current"),
  currentHeading: byId("current-heading"),
  hints: byId("hints"),
  hintList: byId("hint-list"),
  form: byId("annot-form"),
  spanField: byId("span-field"),
  clearSpan: byId("clear-span"),
  categoryButtons: byId("category-buttons"),
  categoryDefinition: byId("category-definition"),
  pairedRow: byId("paired-row"),
  pairedPrompt: byId("paired-prompt"),
  pairedField: byId("paired-field"),
  pairedSegment: byId("paired-segment"),
  clearPaired: byId("clear-paired"),
  comment: byId("comment-field"),
  addButton: byId("add-button"),
  cancelButton: byId("cancel-button"),
  formHint: byId("form-hint"),
  prev: byId("prev-button"),
  next: byId("next-button"),
  submit: byId("submit-button"),
  navHint: byId("nav-hint"),
  list: byId("annotation-list"),
  listEmpty: byId("annotation-empty"),
  listCount: byId("annotation-count"),
  entityPanel: byId("entity-panel"),
  entityList: byId("entity-list"),
  entityEmpty: byId("entity-empty"),
};

const state = {
  data: null,
  texts: [],
  conv: [],
  current: 0,
  readOnly: false,
  categories: new Map(),
  annotations: [], // {key, id, segment, start, end (code points), text, category, paired, comment, pending}
  idByKey: new Map(),
  form: emptyForm(),
  dismissed: new Set(),
  shown: new Set(),
  submitting: false,
};

function emptyForm() {
  return { raw: null, span: null, category: null, paired: null, suggestion: null };
}

// ---------------------------------------------------------------- small utilities

function uuid() {
  if (window.crypto && typeof window.crypto.randomUUID === "function") return window.crypto.randomUUID();
  const b = window.crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

function loadSet(name) {
  try {
    return new Set(JSON.parse(window.localStorage.getItem(`marginalia.${name}.${TOKEN}`) || "[]"));
  } catch {
    return new Set();
  }
}

function saveSet(name, set) {
  try {
    window.localStorage.setItem(`marginalia.${name}.${TOKEN}`, JSON.stringify([...set]));
  } catch {
    // Not critical: at worst a dismissed hint shows again.
  }
}

const segLabel = (i) => `segment ${i + 1}`;
const quote = (text) => `“${text}”`;

function setHint(target, message, tone = "info") {
  target.textContent = message || "";
  target.dataset.tone = tone;
}

const STATUS_TEXT = {
  saving: "Saving…",
  saved: "Saved",
  offline: "Offline — will retry",
  retrying: "Server problem — will retry",
  error: "Not saved",
};

function showStatus(kind, detail) {
  el.saveStatus.dataset.state = kind;
  el.saveStatus.textContent = kind === "error" && detail ? `Not saved: ${detail}` : STATUS_TEXT[kind];
}

// ---------------------------------------------------------------- durable writes

const outbox = new Outbox(API, TOKEN, {
  status: (kind, detail) => {
    if (!state.submitting || kind !== "saved") showStatus(kind, detail);
  },
  resolveId: (key) => state.idByKey.get(key) ?? null,
  done: (op, result) => {
    if (op.kind === "add" && result && result.id !== undefined) {
      state.idByKey.set(op.client_id, result.id);
      const a = state.annotations.find((x) => x.key === op.client_id);
      if (a) {
        a.id = result.id;
        a.pending = false;
        renderList();
      }
    }
  },
  failed: async (op, err) => {
    if (err.status === 409 && (await submittedMeanwhile())) {
      enterReadOnly("This assignment has already been submitted; it can no longer be changed.");
      return;
    }
    if (op.kind === "add") {
      state.annotations = state.annotations.filter((a) => a.key !== op.client_id);
      renderAll();
      showStatus("error", err.message);
      setHint(el.formHint, `The annotation was not saved: ${err.message}`, "error");
    } else if (op.kind === "remove") {
      showStatus("error", err.message);
    }
  },
});

/** After a 409: was the assignment submitted (e.g. in another tab)? */
async function submittedMeanwhile() {
  try {
    const fresh = await requestJson("GET", API);
    return Boolean(fresh.read_only);
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------- loading

async function load() {
  let data;
  try {
    data = await requestJson("GET", API);
  } catch (err) {
    showBanner(`The document could not be loaded (${err.message}).`, "error", () => {
      window.location.reload();
    });
    showStatus(navigator.onLine ? "error" : "offline", err.message);
    return;
  }
  if (!data.document.segments.length) {
    showBanner("This document has no text to annotate.", "error");
    showStatus("saved");
    return;
  }
  state.data = data;
  state.texts = data.document.segments.map((s) => s.text);
  state.conv = state.texts.map((t) => converter(t));
  state.readOnly = Boolean(data.read_only);
  state.current = clampSegment(data.current_segment || 0);
  for (const c of data.taxonomy.categories) state.categories.set(c.id, c);
  state.dismissed = loadSet("dismissed");
  state.shown = loadSet("shown");
  state.annotations = (data.annotations || []).map((a) => {
    const key = a.client_id || `server:${a.id}`;
    state.idByKey.set(key, a.id);
    return { ...a, key, pending: false };
  });
  if (state.readOnly) outbox.stop();
  else replayOutbox();

  document.title = `${data.study.title || data.study.slug} · Marginalia`;
  renderInstructions(el.instructionsBody, data.taxonomy, { readOnly: state.readOnly });
  el.instructions.open = !state.readOnly && state.current === 0 && state.annotations.length === 0;
  buildCategoryButtons();
  if (state.readOnly) enterReadOnly(readOnlyMessage());
  root.classList.remove("is-loading");
  renderAll({ scrollContext: true });
  outbox.kick(true);
}

function clampSegment(i) {
  return Math.max(0, Math.min(Number(i) || 0, state.texts.length - 1));
}

/** Apply operations saved locally but not yet confirmed, so the view matches intent. */
function replayOutbox() {
  for (const op of outbox.pending()) {
    if (op.kind === "add" && !state.annotations.some((a) => a.key === op.client_id)) {
      state.annotations.push({ ...op.body, key: op.client_id, id: null, pending: true });
    } else if (op.kind === "remove") {
      state.annotations = state.annotations.filter((a) => a.key !== op.client_id);
    } else if (op.kind === "position") {
      state.current = clampSegment(op.segment);
    } else if (op.kind === "event" && op.event === "dismissed") {
      state.dismissed.add(String(op.suggestion));
    }
  }
}

function readOnlyMessage() {
  const d = state.data;
  if (d.status === "submitted") {
    return d.completion_code
      ? `Submitted. Your completion code is ${d.completion_code}. This view is read-only.`
      : "Submitted. This view is read-only.";
  }
  return "Preview: read-only, annotations cannot be added here.";
}

function showBanner(message, tone = "info", retry = null) {
  clear(el.banner);
  el.banner.dataset.tone = tone;
  append(el.banner, h("p", {}, message));
  if (retry) append(el.banner, h("button", { type: "button", class: "btn", onclick: retry }, "Try again"));
  el.banner.hidden = false;
}

function enterReadOnly(message) {
  state.readOnly = true;
  outbox.stop();
  state.form = emptyForm();
  document.body.classList.add("read-only");
  el.form.hidden = true;
  el.hints.hidden = true;
  showBanner(message, "info");
  el.saveStatus.textContent = "";
  if (state.data) renderAll();
}

// ---------------------------------------------------------------- categories and form

function buildCategoryButtons() {
  clear(el.categoryButtons);
  const groups = groupedCategories(state.data.taxonomy);
  const labelled = groups.length > 1 || groups.some((g) => g.group);
  for (const { group, categories } of groups) {
    const buttons = categories.map((c) => {
      const btn = h(
        "button",
        {
          type: "button",
          class: "cat-btn",
          dataset: { category: c.id },
          "aria-pressed": "false",
          title: `${c.label}: ${c.definition || ""}${c.shortcut ? ` (key ${c.shortcut})` : ""}`,
          "aria-keyshortcuts": c.shortcut || null,
          onclick: () => chooseCategory(c.id),
        },
        h("span", { class: "swatch", "aria-hidden": "true" }),
        h("span", { class: "cat-label" }, c.label),
        c.kind === "paired" ? h("span", { class: "cat-tag", title: "Paired: also select the earlier text" }, "paired") : null,
        c.scope === "sentence" ? h("span", { class: "cat-tag", title: "Marks the whole sentence" }, "sentence") : null,
        c.shortcut ? h("kbd", { "aria-hidden": "true" }, c.shortcut) : null,
      );
      setVar(btn, "--cat", c.color);
      return btn;
    });
    append(
      el.categoryButtons,
      h(
        "div",
        { class: "cat-group", role: "group", "aria-label": group ? group.label : "Other" },
        labelled
          ? h("span", { class: "cat-group-label", "aria-hidden": "true" }, group ? group.label : "Other")
          : null,
        h("div", { class: "cat-group-buttons" }, buttons),
      ),
    );
  }
}

function currentCategory() {
  return state.form.category ? state.categories.get(state.form.category) : null;
}

function snapSpan(text, raw, cat) {
  if (cat && cat.scope === "sentence") return snapToSentence(text, raw.start, raw.end);
  return snapToWords(text, raw.start, raw.end);
}

function chooseCategory(id) {
  if (state.readOnly) return;
  const cat = state.categories.get(id);
  if (!cat) return;
  const f = state.form;
  f.category = id;
  if (f.span && f.raw) {
    const text = state.texts[f.span.segment];
    const snapped = snapSpan(text, f.raw, cat);
    if (snapped) f.span = { segment: f.span.segment, ...snapped };
  }
  if (cat.kind !== "paired") f.paired = null;
  if (f.suggestion !== null && f.suggestionCategory !== id) f.suggestion = null;
  if (!f.span) setHint(el.formHint, "Now select the words in the current segment.");
  else if (cat.kind === "paired" && !f.paired) setHint(el.formHint, pairedPrompt(cat));
  else setHint(el.formHint, "");
  renderForm();
  renderText();
}

function pairedPrompt(cat) {
  return cat.paired_prompt || "Now select the earlier text this relates to.";
}

/** A selection was made in the text (mouse or keyboard). */
function onSelection() {
  if (state.readOnly || !state.data) return;
  const sel = readSelection(el.textArea);
  if (!sel) return;
  if (sel.error) {
    setHint(el.formHint, sel.error, "warn");
    return;
  }
  const f = state.form;
  const cat = currentCategory();
  const text = state.texts[sel.segment];
  if (cat && cat.kind === "paired" && f.span && !f.paired) {
    const snapped = snapToWords(text, sel.start, sel.end);
    if (!snapped) return;
    const before =
      sel.segment < f.span.segment || (sel.segment === f.span.segment && snapped.end <= f.span.start);
    if (!before) {
      setHint(el.formHint, "The earlier text must come before the marked span (in the context box, or earlier in this segment).", "warn");
      window.getSelection().removeAllRanges();
      return;
    }
    f.paired = { segment: sel.segment, ...snapped };
    setHint(el.formHint, "");
  } else {
    if (sel.segment !== state.current) {
      setHint(
        el.formHint,
        "Mark errors in the current segment. Earlier text is only selected for a paired category, after marking the span.",
        "warn",
      );
      window.getSelection().removeAllRanges();
      return;
    }
    const snapped = snapSpan(text, sel, cat);
    if (!snapped) return;
    f.raw = { start: sel.start, end: sel.end };
    f.span = { segment: sel.segment, ...snapped };
    f.paired = null;
    f.suggestion = null;
    if (!cat) setHint(el.formHint, "Now choose a category (click it or press its key).");
    else if (cat.kind === "paired") setHint(el.formHint, pairedPrompt(cat));
    else setHint(el.formHint, "");
  }
  window.getSelection().removeAllRanges();
  renderForm();
  renderText();
}

function spanText(span) {
  return state.texts[span.segment].slice(span.start, span.end);
}

function toWire(span) {
  const conv = state.conv[span.segment];
  return {
    segment: span.segment,
    start: conv.toCp(span.start),
    end: conv.toCp(span.end),
    text: spanText(span),
  };
}

function formReady() {
  const f = state.form;
  const cat = currentCategory();
  return Boolean(f.span && cat && (cat.kind !== "paired" || f.paired));
}

function addAnnotation() {
  if (state.readOnly) return;
  const f = state.form;
  const cat = currentCategory();
  if (!f.span) return setHint(el.formHint, "Select the words with the error first.", "warn");
  if (!cat) return setHint(el.formHint, "Choose a category first.", "warn");
  if (cat.kind === "paired" && !f.paired) return setHint(el.formHint, pairedPrompt(cat), "warn");
  const clientId = uuid();
  const body = {
    ...toWire(f.span),
    category: cat.id,
    paired: cat.kind === "paired" ? toWire(f.paired) : null,
    comment: el.comment.value.trim(),
    client_id: clientId,
  };
  if (f.suggestion !== null) body.suggestion_id = f.suggestion;
  state.annotations.push({ ...body, key: clientId, id: null, pending: true });
  outbox.push({ kind: "add", client_id: clientId, body });
  if (f.suggestion !== null) {
    outbox.push({ kind: "event", suggestion: f.suggestion, event: "accepted", client_id: clientId });
  }
  resetForm();
  setHint(el.formHint, `Added: ${cat.label} — ${quote(body.text)}`, "ok");
  renderAll();
}

function removeAnnotation(key) {
  if (state.readOnly) return;
  const a = state.annotations.find((x) => x.key === key);
  state.annotations = state.annotations.filter((x) => x.key !== key);
  outbox.push({ kind: "remove", client_id: key });
  if (a) setHint(el.formHint, `Removed: ${quote(a.text)}`, "ok");
  renderAll();
}

function resetForm() {
  state.form = emptyForm();
  el.comment.value = "";
}

function cancelForm() {
  resetForm();
  setHint(el.formHint, "");
  renderForm();
  renderText();
}

// ---------------------------------------------------------------- suggestions

function visibleSuggestions() {
  const list = (state.data && state.data.suggestions) || [];
  return list.filter(
    (s) =>
      s.segment === state.current &&
      !state.dismissed.has(String(s.id)) &&
      state.categories.has(s.category) &&
      !state.annotations.some(
        (a) => a.segment === s.segment && a.category === s.category && a.start < s.end && s.start < a.end,
      ),
  );
}

function useSuggestion(s) {
  if (state.readOnly) return;
  const conv = state.conv[s.segment];
  const span = { segment: s.segment, start: conv.toUtf16(s.start), end: conv.toUtf16(s.end) };
  state.form = { raw: { start: span.start, end: span.end }, span, category: s.category, paired: null, suggestion: s.id, suggestionCategory: s.category };
  const cat = state.categories.get(s.category);
  setHint(
    el.formHint,
    cat.kind === "paired" ? pairedPrompt(cat) : "Check the suggestion, add a comment if you like, then press Add.",
  );
  renderForm();
  renderText();
  el.addButton.focus({ preventScroll: true });
}

function dismissSuggestion(s) {
  state.dismissed.add(String(s.id));
  saveSet("dismissed", state.dismissed);
  outbox.push({ kind: "event", suggestion: s.id, event: "dismissed" });
  if (state.form.suggestion === s.id) resetForm();
  renderAll();
}

function logShown(list) {
  let changed = false;
  for (const s of list) {
    if (state.shown.has(String(s.id))) continue;
    state.shown.add(String(s.id));
    changed = true;
    outbox.push({ kind: "event", suggestion: s.id, event: "shown" });
  }
  if (changed) saveSet("shown", state.shown);
}

function renderHints(list) {
  clear(el.hintList);
  el.hints.hidden = state.readOnly || list.length === 0;
  for (const s of list) {
    const cat = state.categories.get(s.category);
    const item = h(
      "li",
      { class: "hint-item", dataset: { suggestionItem: String(s.id) } },
      setVar(h("span", { class: "swatch", "aria-hidden": "true" }), "--cat", cat.color),
      h("span", { class: "hint-cat" }, cat.label),
      h("q", { class: "hint-text" }, s.text),
      h("button", { type: "button", class: "btn btn-small", onclick: () => useSuggestion(s) }, "Use"),
      h(
        "button",
        { type: "button", class: "btn btn-small btn-quiet", "aria-label": `Dismiss the suggestion ${quote(s.text)}`, onclick: () => dismissSuggestion(s) },
        "Dismiss",
      ),
    );
    el.hintList.append(item);
  }
  if (!state.readOnly) logShown(list);
}

// ---------------------------------------------------------------- rendering

function rangesFor(segment, { current }) {
  const conv = state.conv[segment];
  const ranges = [];
  const u = (cp) => conv.toUtf16(cp);
  for (const m of state.data.mentions || []) {
    if (m.segment !== segment) continue;
    const ent = entityById.get(m.entity);
    ranges.push({
      type: "mention",
      start: u(m.start),
      end: u(m.end),
      entity: m.entity,
      title: ent ? `${ent.name} — first in segment ${ent.first_segment + 1}` : null,
    });
  }
  for (const a of state.annotations) {
    const cat = state.categories.get(a.category);
    const color = cat ? cat.color : "#888888";
    if (a.segment === segment) {
      ranges.push({ type: "annotation", start: u(a.start), end: u(a.end), key: a.key, color, focus: current });
    }
    if (a.paired && a.paired.segment === segment) {
      ranges.push({ type: "paired", start: u(a.paired.start), end: u(a.paired.end), key: a.key, color });
    }
  }
  const f = state.form;
  if (f.span && f.span.segment === segment) ranges.push({ type: "pending", start: f.span.start, end: f.span.end });
  if (f.paired && f.paired.segment === segment) {
    ranges.push({ type: "pending-paired", start: f.paired.start, end: f.paired.end });
  }
  if (current && !state.readOnly) {
    for (const s of visibleSuggestions()) {
      const cat = state.categories.get(s.category);
      ranges.push({
        type: "suggestion",
        id: s.id,
        start: u(s.start),
        end: u(s.end),
        color: cat.color,
        label: cat.id,
        title: `Suggested: ${cat.label} — click to use`,
      });
    }
  }
  return ranges;
}

let entityById = new Map();
let contextPinned = true;

/** Show the end of the context (the text just before the current segment). */
function pinContextToBottom() {
  el.context.scrollTop = el.context.scrollHeight;
  markContextOverflow();
}

function renderText({ scrollContext = false } = {}) {
  entityById = new Map((state.data.entities || []).map((e) => [e.id, e]));
  const keepScroll = el.context.scrollTop;
  clear(el.context);
  for (let i = 0; i < state.current; i++) {
    el.context.append(
      h(
        "div",
        { class: "ctx-seg", dataset: { block: String(i) } },
        h("span", { class: "seg-num", "aria-label": segLabel(i) }, String(i + 1)),
        h("p", { class: "ctx-text" }, renderSegmentText(state.texts[i], i, rangesFor(i, { current: false }))),
      ),
    );
  }
  el.contextSection.hidden = state.current === 0;
  if (scrollContext) pinContextToBottom();
  else el.context.scrollTop = keepScroll;

  clear(el.current);
  el.current.append(
    h("p", { class: "cur-text" }, renderSegmentText(state.texts[state.current], state.current, rangesFor(state.current, { current: true }))),
  );
  const f = state.form;
  const cat = currentCategory();
  root.classList.toggle("awaiting-paired", Boolean(cat && cat.kind === "paired" && f.span && !f.paired));
  renderHints(state.readOnly ? [] : visibleSuggestions());
}

function renderForm() {
  const f = state.form;
  const cat = currentCategory();
  el.spanField.value = f.span ? spanText(f.span) : "";
  el.clearSpan.disabled = !f.span;
  for (const btn of el.categoryButtons.querySelectorAll(".cat-btn")) {
    btn.setAttribute("aria-pressed", btn.dataset.category === f.category ? "true" : "false");
  }
  el.categoryDefinition.textContent = cat ? `${cat.label}: ${cat.definition || ""}` : "";
  el.categoryDefinition.title = el.categoryDefinition.textContent;
  const paired = Boolean(cat && cat.kind === "paired");
  el.pairedRow.hidden = !paired;
  if (paired) {
    el.pairedPrompt.textContent = f.paired ? "" : pairedPrompt(cat);
    el.pairedPrompt.hidden = Boolean(f.paired);
    el.pairedField.value = f.paired ? spanText(f.paired) : "";
    el.pairedSegment.textContent = f.paired ? ` · ${segLabel(f.paired.segment)}` : "";
    el.clearPaired.disabled = !f.paired;
  }
  el.addButton.disabled = !formReady();
}

function renderProgress() {
  const n = state.texts.length;
  el.progressText.textContent = `Segment ${state.current + 1} of ${n}`;
  el.progressBar.max = n;
  el.progressBar.value = state.current + 1;
  el.currentLabel.textContent = state.readOnly
    ? `Segment ${state.current + 1} of ${n}`
    : `Segment ${state.current + 1} of ${n} — mark errors here`;
}

function renderNav() {
  const last = state.current >= state.texts.length - 1;
  el.prev.disabled = state.current === 0 || state.submitting;
  el.next.hidden = last;
  el.next.disabled = state.submitting;
  el.next.textContent = state.readOnly ? "Next segment" : "No more errors — next segment";
  el.submit.hidden = !last || state.readOnly;
  el.submit.disabled = state.submitting;
}

function renderList() {
  clear(el.list);
  const items = [...state.annotations].sort(
    (a, b) => a.segment - b.segment || a.start - b.start || a.end - b.end,
  );
  el.listEmpty.hidden = items.length > 0;
  el.listCount.textContent = items.length ? `(${items.length})` : "";
  for (const a of items) {
    const cat = state.categories.get(a.category) || { label: a.category, color: "#888888" };
    const li = h(
      "li",
      {
        class: `annot-item${a.segment === state.current ? " is-current" : ""}${a.pending ? " is-pending" : ""}`,
        dataset: { key: a.key, category: a.category },
      },
      setVar(h("span", { class: "swatch", "aria-hidden": "true" }), "--cat", cat.color),
      h(
        "div",
        { class: "annot-body" },
        h(
          "div",
          { class: "annot-head" },
          h("span", { class: "annot-cat" }, cat.label),
          a.segment === state.current
            ? h("span", { class: "annot-seg" }, `${segLabel(a.segment)} (this one)`)
            : h(
                "button",
                {
                  type: "button",
                  class: "annot-seg link-btn",
                  title: `Go to ${segLabel(a.segment)}`,
                  onclick: () => goTo(a.segment),
                },
                segLabel(a.segment),
              ),
          a.pending ? h("span", { class: "annot-pending" }, "saving…") : null,
        ),
        h("q", { class: "annot-span" }, a.text),
        a.paired
          ? h(
              "div",
              { class: "annot-paired" },
              h("span", { class: "annot-paired-label" }, `earlier (${segLabel(a.paired.segment)}): `),
              h("q", {}, a.paired.text),
            )
          : null,
        a.comment ? h("div", { class: "annot-comment" }, h("span", { class: "annot-paired-label" }, "Comment: "), a.comment) : null,
      ),
      state.readOnly
        ? null
        : h(
            "button",
            {
              type: "button",
              class: "btn btn-small btn-quiet remove-btn",
              "aria-label": `Remove ${cat.label}: ${a.text}`,
              onclick: () => removeAnnotation(a.key),
            },
            "Remove",
          ),
    );
    li.addEventListener("mouseenter", () => hotAnnotation(a.key, true));
    li.addEventListener("mouseleave", () => hotAnnotation(a.key, false));
    el.list.append(li);
  }
}

function hotAnnotation(key, on) {
  const k = CSS.escape(key);
  for (const node of document.querySelectorAll(`[data-annotations~="${k}"], [data-paired~="${k}"]`)) {
    node.classList.toggle("hl-hot", on);
  }
}

function renderEntities() {
  const n = renderEntityPanel(el.entityList, {
    entities: state.data.entities || [],
    mentions: state.data.mentions || [],
    current: state.current,
  });
  el.entityEmpty.hidden = n > 0;
  const none = (state.data.entities || []).length === 0;
  el.entityPanel.hidden = none;
  root.classList.toggle("no-entities", none);
  const labels = new Set((state.data.entities || []).map((e) => e.label));
  byId("entity-heading").textContent =
    labels.size === 0 || (labels.size === 1 && labels.has("PERSON")) ? "Characters so far" : "Entities so far";
}

function renderAll(opts = {}) {
  renderProgress();
  renderText(opts);
  renderForm();
  renderNav();
  renderList();
  renderEntities();
}

// ---------------------------------------------------------------- navigation and submit

function unfinishedForm() {
  if (state.readOnly || !state.form.span) return false;
  setHint(el.navHint, "You have a selection that is not added yet: press Add, or Cancel it first.", "warn");
  el.addButton.disabled ? el.cancelButton.focus() : el.addButton.focus();
  return true;
}

function goTo(segment) {
  const target = clampSegment(segment);
  if (target === state.current || unfinishedForm()) return;
  setHint(el.navHint, "");
  setHint(el.formHint, "");
  state.current = target;
  el.instructions.open = false;
  if (!state.readOnly) outbox.push({ kind: "position", segment: target });
  renderAll({ scrollContext: true });
  el.currentHeading.focus({ preventScroll: true });
  el.current.scrollIntoView({ block: "nearest" });
}

async function submit() {
  if (state.readOnly || state.submitting || unfinishedForm()) return;
  state.submitting = true;
  renderNav();
  setHint(el.navHint, "Submitting…");
  let delay = 500;
  for (;;) {
    try {
      await outbox.drain();
      const answer = await requestJson("POST", `${API}/submit`);
      outbox.stop();
      for (const name of ["dismissed", "shown"]) {
        try {
          window.localStorage.removeItem(`marginalia.${name}.${TOKEN}`);
        } catch {
          // ignore
        }
      }
      showStatus("saved");
      window.location.assign((answer && answer.redirect_url) || DONE_URL);
      return;
    } catch (err) {
      const transient = !err.status || err.status >= 500 || err.status === 429;
      if (!transient) {
        state.submitting = false;
        renderNav();
        setHint(el.navHint, `Could not submit: ${err.message}`, "error");
        return;
      }
      showStatus("offline", err.message);
      setHint(el.navHint, "Offline — submitting again shortly…", "warn");
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }
}

// ---------------------------------------------------------------- events

el.textArea = byId("text-area");

document.addEventListener("mouseup", () => {
  setTimeout(() => {
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed) return;
    if (el.textArea.contains(sel.anchorNode) || el.textArea.contains(sel.focusNode)) onSelection();
  }, 0);
});
// Chromium starts no text selection on a drag that begins inside a focusable element, and
// mentions and suggestions are focusable (keyboard cues). Make the pressed one unfocusable
// for the duration of the press so a drag over a name selects it like any other text.
el.textArea.addEventListener(
  "pointerdown",
  (e) => {
    const target = e.target instanceof Element ? e.target.closest(".seg-text [tabindex]") : null;
    if (!target) return;
    const tabindex = target.getAttribute("tabindex");
    target.removeAttribute("tabindex");
    const restore = () => target.setAttribute("tabindex", tabindex);
    document.addEventListener("pointerup", restore, { once: true });
    document.addEventListener("pointercancel", restore, { once: true });
  },
  true,
);
// Touch screens select with a long press and handles, and send no mouseup: read the
// selection once it has stayed still for a moment.
let lastPointer = "mouse";
let touchTimer = null;
document.addEventListener("pointerdown", (e) => {
  lastPointer = e.pointerType;
});
document.addEventListener("selectionchange", () => {
  if (lastPointer !== "touch") return;
  clearTimeout(touchTimer);
  touchTimer = setTimeout(() => {
    const sel = window.getSelection();
    if (sel && !sel.isCollapsed && el.textArea.contains(sel.anchorNode)) onSelection();
  }, 700);
});
el.textArea.addEventListener("keyup", (e) => {
  if (e.shiftKey) onSelection();
});

el.textArea.addEventListener("click", (e) => {
  const target = e.target instanceof Element ? e.target.closest("[data-suggestion]") : null;
  if (!target || !window.getSelection().isCollapsed) return;
  const s = visibleSuggestions().find((x) => String(x.id) === target.dataset.suggestion);
  if (s) useSuggestion(s);
});
el.textArea.addEventListener("keydown", (e) => {
  if (e.key !== "Enter" && e.key !== " ") return;
  const target = e.target instanceof Element ? e.target.closest("[data-suggestion]") : null;
  if (!target) return;
  const s = visibleSuggestions().find((x) => String(x.id) === target.dataset.suggestion);
  if (s) {
    e.preventDefault();
    useSuggestion(s);
  }
});

el.form.addEventListener("submit", (e) => {
  e.preventDefault();
  addAnnotation();
});
el.cancelButton.addEventListener("click", cancelForm);
el.clearSpan.addEventListener("click", () => {
  state.form.span = null;
  state.form.raw = null;
  state.form.paired = null;
  state.form.suggestion = null;
  renderForm();
  renderText();
});
el.clearPaired.addEventListener("click", () => {
  state.form.paired = null;
  const cat = currentCategory();
  if (cat) setHint(el.formHint, pairedPrompt(cat));
  renderForm();
  renderText();
});
function markContextOverflow() {
  const box = el.context;
  contextPinned = box.scrollHeight - box.scrollTop - box.clientHeight < 4;
  box.classList.toggle("more-above", box.scrollTop > 2);
}
el.context.addEventListener("scroll", markContextOverflow);
window.addEventListener("resize", () => {
  if (contextPinned) el.context.scrollTop = el.context.scrollHeight;
  markContextOverflow();
});
el.prev.addEventListener("click", () => goTo(state.current - 1));
el.next.addEventListener("click", () => goTo(state.current + 1));
el.submit.addEventListener("click", submit);

function typingInField(target) {
  return (
    target instanceof Element &&
    (target.closest("input, textarea, select, [contenteditable='true']") !== null)
  );
}

document.addEventListener("keydown", (e) => {
  if (!state.data || state.readOnly) return;
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    addAnnotation();
    return;
  }
  if (e.key === "Escape") {
    if (state.form.span || state.form.category) {
      e.preventDefault();
      cancelForm();
    }
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey || typingInField(e.target)) return;
  const key = e.key.length === 1 ? e.key.toLowerCase() : null;
  if (!key) return;
  for (const c of state.categories.values()) {
    if (c.shortcut && c.shortcut.toLowerCase() === key) {
      e.preventDefault();
      chooseCategory(c.id);
      return;
    }
  }
});

wireEntityHover(document.body);
showStatus("saving");
el.saveStatus.textContent = "Loading…";
load();
