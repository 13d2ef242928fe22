// The annotate page's controller: the outbox that saves every change and what happens when
// the server confirms or refuses one, loading the assignment (and replaying unsent writes),
// read-only mode and the banner, and redrawing the whole page.

import { append, byId, clear, h } from "../dom.js";
import { renderEntityPanel } from "../entities.js";
import { t } from "../i18n.js";
import { renderInstructions, renderSources } from "../instructions.js";
import { converters } from "../offsets.js";
import { Outbox, requestJson } from "../outbox.js";
import { buildCategoryButtons, renderForm } from "./form.js";
import { flashAnnotation, renderList } from "./list.js";
import { renderNav, renderProgress } from "./nav.js";
import { renderText } from "./segments.js";
import {
  API,
  TOKEN,
  afterPaint,
  clampSegment,
  el,
  emptyForm,
  loadSet,
  page,
  root,
  setHint,
  showStatus,
  state,
} from "./state.js";

export const outbox = new Outbox(API, TOKEN, {
  status: (kind, detail) => {
    if (!state.submitting || kind !== "saved") showStatus(kind, detail);
  },
  resolveId: (key) => state.idByKey.get(key) ?? null,
  done: (op, result) => {
    if ((op.kind === "add" || op.kind === "edit") && result && result.id !== undefined) {
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
    if (op.kind === "add" && err.status === 409 && err.data && err.data.existing_id !== undefined) {
      refusedDuplicate(op, err);
      return;
    }
    if (err.status === 409 && (await submittedMeanwhile())) {
      enterReadOnly(t("submitted_elsewhere"));
      return;
    }
    if (op.kind === "add") {
      state.annotations = state.annotations.filter((a) => a.key !== op.client_id);
      renderAll();
      showStatus("error", err.message);
      setHint(el.formHint, t("not_saved_annotation", { message: err.message }), "error");
    } else if (op.kind === "remove") {
      showStatus("error", err.message);
    } else if (op.kind === "edit") {
      const a = state.annotations.find((x) => x.key === op.client_id);
      if (a) Object.assign(a, { ...op.previous, pending: false }); // the edit was refused: as before
      renderAll();
      showStatus("error", err.message);
      setHint(el.formHint, t("not_saved_edit", { message: err.message }), "error");
    }
  },
});

/** The server already holds this exact annotation (e.g. added in another tab): drop ours. */
function refusedDuplicate(op, err) {
  state.annotations = state.annotations.filter((a) => a.key !== op.client_id);
  const twin = state.annotations.find((a) => a.id === err.data.existing_id);
  renderAll();
  showStatus("saved");
  setHint(el.formHint, t("not_added", { message: err.message }), "warn");
  if (twin) flashAnnotation(twin.key);
}

/** After a 409: was the assignment submitted (e.g. in another tab)? */
async function submittedMeanwhile() {
  try {
    const fresh = await requestJson("GET", API);
    return Boolean(fresh.read_only);
  } catch {
    return false;
  }
}

export async function load() {
  let data;
  try {
    data = await requestJson("GET", API);
  } catch (err) {
    showBanner(t("load_failed", { message: err.message }), "error", () => {
      window.location.reload();
    });
    showStatus(navigator.onLine ? "error" : "offline", err.message);
    return;
  }
  if (!data.document.segments.length) {
    showBanner(t("no_text"), "error");
    showStatus("saved");
    return;
  }
  state.data = data;
  state.texts = data.document.segments.map((s) => s.text);
  state.conv = converters(state.texts); // each segment's table made when first needed
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
  renderSources(el.sources, el.sourcesBody, data.document.sources || []);
  el.instructions.open = !state.readOnly && state.current === 0 && state.annotations.length === 0;
  buildCategoryButtons();
  if (state.readOnly) enterReadOnly(readOnlyMessage());
  root.classList.remove("is-loading");
  renderAll({ scrollContext: true });
  outbox.kick(true);
}

/** Apply operations saved locally but not yet confirmed, so the view matches intent. */
function replayOutbox() {
  for (const op of outbox.pending()) {
    if (op.kind === "add" && !state.annotations.some((a) => a.key === op.client_id)) {
      state.annotations.push({ ...op.body, key: op.client_id, id: null, pending: true });
    } else if (op.kind === "remove") {
      state.annotations = state.annotations.filter((a) => a.key !== op.client_id);
    } else if (op.kind === "edit") {
      const a = state.annotations.find((x) => x.key === op.from);
      if (a) {
        const { category, categories, attributes, comment } = op.body;
        const shown = attributes && Object.keys(attributes).length ? attributes : undefined;
        Object.assign(a, { key: op.client_id, category, categories, attributes: shown, comment, pending: true });
      }
    } else if (op.kind === "position") {
      state.current = clampSegment(op.segment);
      for (const id of (op.events && op.events.dismissed) || []) state.dismissed.add(String(id));
    } else if (op.kind === "event" && op.event === "dismissed") {
      state.dismissed.add(String(op.suggestion));
    } else if (op.kind === "events" && op.event === "dismissed") {
      for (const id of op.suggestions) state.dismissed.add(String(id));
    }
  }
}

function readOnlyMessage() {
  const d = state.data;
  if (d.status === "submitted") {
    return d.completion_code
      ? t("read_only_code", { code: d.completion_code })
      : t("read_only_submitted");
  }
  const closed = { screened_out: "read_only_screened_out", rejected: "read_only_rejected", abandoned: "read_only_abandoned" };
  return t(closed[d.status] || "read_only_preview");
}

function showBanner(message, tone = "info", retry = null) {
  clear(el.banner);
  el.banner.dataset.tone = tone;
  append(el.banner, h("p", {}, message));
  if (retry) append(el.banner, h("button", { type: "button", class: "btn", onclick: retry }, t("try_again")));
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

let entitiesFor = null; // [data, current] the entity panel was drawn for

function renderEntities() {
  // the panel depends on the current segment only: drawn again on a move, not on every add;
  // its first drawing (hundreds of names deep in a book) waits until the text is painted
  if (entitiesFor && entitiesFor[0] === state.data && entitiesFor[1] === state.current) return;
  if (entitiesFor === null) {
    entitiesFor = [null, -1];
    afterPaint(renderEntities);
    return;
  }
  entitiesFor = [state.data, state.current];
  const n = renderEntityPanel(el.entityList, {
    entities: state.data.entities || [],
    mentions: state.data.mentions || [],
    current: state.current,
    // an entity's first mention may lie in a context segment not drawn yet
    reveal: (e) => page.showSegment(e.first_segment),
  });
  el.entityEmpty.hidden = n > 0;
  const none = (state.data.entities || []).length === 0;
  el.entityPanel.hidden = none;
  root.classList.toggle("no-entities", none);
  const labels = new Set((state.data.entities || []).map((e) => e.label));
  byId("entity-heading").textContent =
    labels.size === 0 || (labels.size === 1 && labels.has("PERSON")) ? t("characters_so_far") : t("entities_so_far");
}

export function renderAll(opts = {}) {
  renderProgress();
  renderText(opts);
  renderForm();
  renderNav();
  renderList();
  renderEntities();
  page.renderPractice();
}
