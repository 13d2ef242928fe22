// Entity cues: hovering or focusing a mention (or a panel entry) lights up every mention of
// the same entity; the side panel lists the entities met so far.

import { clear, h } from "./dom.js";
import { t } from "./i18n.js";

const HOT = "entity-hot";

function setHot(entity, on) {
  const sel = `[data-entity="${CSS.escape(String(entity))}"], [data-entity-ref="${CSS.escape(String(entity))}"]`;
  for (const el of document.querySelectorAll(sel)) el.classList.toggle(HOT, on);
}

/** Wire hover/focus highlighting once for the whole page (event delegation). */
export function wireEntityHover(root) {
  const target = (e) => e.target instanceof Element && e.target.closest("[data-entity], [data-entity-ref]");
  const key = (el) => el.dataset.entity || el.dataset.entityRef;
  const on = (e) => {
    const el = target(e);
    if (el) setHot(key(el), true);
  };
  const off = (e) => {
    const el = target(e);
    if (!el) return;
    const next = e.relatedTarget instanceof Element && e.relatedTarget.closest("[data-entity], [data-entity-ref]");
    if (next && key(next) === key(el)) return;
    setHot(key(el), false);
  };
  root.addEventListener("mouseover", on);
  root.addEventListener("mouseout", off);
  root.addEventListener("focusin", on);
  root.addEventListener("focusout", off);
}

/** Scroll to the first rendered mention of an entity, focus it and flash it. */
export function revealFirstMention(entity) {
  const el = document.querySelector(`[data-entity="${CSS.escape(String(entity))}"][data-mention-start]`);
  if (!el) return false;
  el.scrollIntoView({ block: "center", behavior: "smooth" });
  el.focus({ preventScroll: true });
  el.classList.remove("flash");
  void el.offsetWidth; // restart the animation
  el.classList.add("flash");
  return true;
}

/** Per mention list: the entities in panel order (first segment, then first mention's
 * start) and each one's mention segments, sorted; built once per document. */
function panelIndex(entities, mentions) {
  const firstStart = new Map();
  const segments = new Map();
  for (const m of mentions) {
    if (!segments.has(m.entity)) segments.set(m.entity, []);
    segments.get(m.entity).push(m.segment);
    const prev = firstStart.get(m.entity);
    if (!prev || m.segment < prev.segment || (m.segment === prev.segment && m.start < prev.start)) {
      firstStart.set(m.entity, m);
    }
  }
  for (const list of segments.values()) list.sort((a, b) => a - b);
  const ordered = [...entities].sort((a, b) => {
    const d = a.first_segment - b.first_segment;
    if (d) return d;
    return ((firstStart.get(a.id) || {}).start || 0) - ((firstStart.get(b.id) || {}).start || 0);
  });
  return { entities, mentions, ordered, firsts: ordered.map((e) => e.first_segment), segments };
}

/** How many of the sorted `values` are <= limit. */
function upTo(values, limit) {
  let low = 0;
  let high = values.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (values[mid] <= limit) low = mid + 1;
    else high = mid;
  }
  return low;
}

const panels = new WeakMap(); // list element -> {index, items: [{id, li, meta, key}]}

function entityItem(e, reveal) {
  const meta = h("span", { class: "entity-meta" });
  const li = h(
    "li",
    { class: "entity-item" },
    h(
      "button",
      {
        type: "button",
        class: "entity-btn",
        dataset: { entityRef: String(e.id) },
        title: t("first_mention_title", { name: e.name }),
        onclick: () => {
          if (reveal) reveal(e);
          revealFirstMention(e.id);
        },
      },
      h("span", { class: "entity-name", dir: "auto" }, e.name),
      e.label && e.label !== "PERSON" ? h("span", { class: "entity-label" }, e.label) : null,
      meta,
    ),
  );
  return { id: e.id, li, meta, key: null };
}

/**
 * Render the panel list: entities whose first_segment <= current, by first appearance, each
 * with its mentions so far. `reveal(entity)`, if given, runs before the first mention is
 * looked for (the annotate page draws its segment if it is not drawn). The items are kept
 * from call to call and only those whose text changes are touched: a book-length document
 * has hundreds of entities by its end.
 */
export function renderEntityPanel(list, { entities, mentions, current, reveal = null }) {
  let panel = panels.get(list);
  if (!panel || panel.index.entities !== entities || panel.index.mentions !== mentions) {
    clear(list);
    panel = { index: panelIndex(entities, mentions), items: [] };
    panels.set(list, panel);
  }
  const { ordered, firsts, segments } = panel.index;
  const seen = upTo(firsts, current);
  while (panel.items.length > seen) panel.items.pop().li.remove();
  while (panel.items.length < seen) {
    const item = entityItem(ordered[panel.items.length], reveal);
    panel.items.push(item);
    list.append(item.li);
  }
  for (let i = 0; i < seen; i++) {
    const e = ordered[i];
    const item = panel.items[i];
    const isNew = e.first_segment === current;
    const n = upTo(segments.get(e.id) || [], current);
    const key = `${isNew}:${n}`;
    if (item.key === key) continue;
    item.key = key;
    item.li.classList.toggle("is-new", isNew);
    item.meta.textContent =
      (isNew ? t("entity_new") : t("entity_first", { n: e.first_segment + 1 })) +
      (n > 1 ? t("entity_mentions", { n }) : "");
  }
  return seen;
}
