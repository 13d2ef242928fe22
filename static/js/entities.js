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

/**
 * Render the panel list: entities whose first_segment <= current, by first appearance.
 * counts: Map entity id -> mentions so far.
 */
export function renderEntityPanel(list, { entities, mentions, current }) {
  clear(list);
  const firstStart = new Map();
  const counts = new Map();
  for (const m of mentions) {
    if (m.segment > current) continue;
    counts.set(m.entity, (counts.get(m.entity) || 0) + 1);
    const prev = firstStart.get(m.entity);
    if (!prev || m.segment < prev.segment || (m.segment === prev.segment && m.start < prev.start)) {
      firstStart.set(m.entity, m);
    }
  }
  const seen = entities
    .filter((e) => e.first_segment <= current)
    .sort((a, b) => {
      const d = a.first_segment - b.first_segment;
      if (d) return d;
      return ((firstStart.get(a.id) || {}).start || 0) - ((firstStart.get(b.id) || {}).start || 0);
    });
  for (const e of seen) {
    const isNew = e.first_segment === current;
    const n = counts.get(e.id) || 0;
    list.append(
      h(
        "li",
        { class: isNew ? "entity-item is-new" : "entity-item" },
        h(
          "button",
          {
            type: "button",
            class: "entity-btn",
            dataset: { entityRef: String(e.id) },
            title: t("first_mention_title", { name: e.name }),
            onclick: () => revealFirstMention(e.id),
          },
          h("span", { class: "entity-name", dir: "auto" }, e.name),
          e.label && e.label !== "PERSON" ? h("span", { class: "entity-label" }, e.label) : null,
          h(
            "span",
            { class: "entity-meta" },
            isNew ? t("entity_new") : t("entity_first", { n: e.first_segment + 1 }),
            n > 1 ? t("entity_mentions", { n }) : "",
          ),
        ),
      ),
    );
  }
  return seen.length;
}
