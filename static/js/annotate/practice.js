// The training phase's feedback panel, on practice documents only (the assignment payload
// carries `practice`). Leaving a segment forward (Next, its keys, Submit) first checks it:
// the page sends every unsent mark, asks the server for the segment's feedback (which
// freezes the segment's marks there) and shows what the worker found, missed and marked
// wrongly against the reference; the next press moves on. Text nodes only.

import { append, h } from "../dom.js";
import { t } from "../i18n.js";
import { requestJson } from "../outbox.js";
import { API, el, page, quote, segLabel, setHint, state, textAttrs } from "./state.js";

const panel = document.getElementById("practice-panel");
let checking = false;

function practice() {
  return state.data && state.data.practice ? state.data.practice : null;
}

function feedbackFor(segment) {
  const p = practice();
  return p ? p.checked[String(segment)] || null : null;
}

/**
 * Before leaving ``segment`` forward: true while its feedback is being fetched or was just
 * shown for the first time (the caller stays), false when the move may go on.
 */
export function holdForFeedback(segment) {
  const p = practice();
  if (!p || state.readOnly) return false;
  if (checking) return true;
  if (feedbackFor(segment)) return false;
  checking = true;
  setHint(el.navHint, t("practice_checking"));
  check(segment).finally(() => {
    checking = false;
  });
  return true;
}

async function check(segment) {
  try {
    await page.outbox.drain();
    const feedback = await requestJson("POST", `${API}/practice/${segment}`, {});
    practice().checked[String(segment)] = feedback;
    setHint(el.navHint, t("practice_compare"), "info");
    renderPractice();
    panel.scrollIntoView({ block: "nearest" });
  } catch (err) {
    if (err.status === 404) {
      // no longer a practice document (the study's pass mark was removed): move on freely
      state.data.practice = null;
      setHint(el.navHint, "");
      return;
    }
    setHint(el.navHint, t("practice_failed", { message: err.message }), "error");
  }
}

const CONTEXT_CHARS = 40;

/** The span inside its words around it, the span itself marked: "…met <mark>Anna</mark> at…". */
function inContext(entry) {
  const text = state.texts[entry.segment];
  if (text === undefined || entry.start === null || entry.end === null) {
    return h("span", { class: "practice-span", ...textAttrs() }, quote(entry.text));
  }
  const chars = Array.from(text); // offsets are code points
  let from = Math.max(0, entry.start - CONTEXT_CHARS);
  let to = Math.min(chars.length, entry.end + CONTEXT_CHARS);
  // whole words only: start after a space, stop before one
  while (from > 0 && from < entry.start && !/\s/.test(chars[from - 1])) from += 1;
  while (to < chars.length && to > entry.end && !/\s/.test(chars[to])) to -= 1;
  const before = chars.slice(from, entry.start).join("");
  const after = chars.slice(entry.end, to).join("");
  return h(
    "span",
    { class: "practice-span", ...textAttrs() },
    from > 0 ? `…${before.trimStart()}` : before,
    h("mark", { class: "practice-mark" }, chars.slice(entry.start, entry.end).join("")),
    to < chars.length ? `${after.trimEnd()}…` : after,
  );
}

function item(entry, note) {
  return h(
    "li",
    { class: "practice-item" },
    h("strong", { class: "practice-label" }, entry.label),
    ": ",
    inContext(entry),
    note ? h("span", { class: "practice-note" }, note) : null,
  );
}

function group(kind, title, entries, note) {
  if (!entries.length) return null;
  return h(
    "section",
    { class: `practice-group practice-${kind}`, dataset: { kind } },
    h("h3", { class: "practice-title" }, t("practice_group", { title, n: entries.length })),
    h("ul", { class: "practice-list" }, entries.map((e) => item(e, note(e)))),
  );
}

/** Show the current segment's feedback, if it was checked; hide the panel otherwise. */
export function renderPractice() {
  if (!panel) return;
  const feedback = practice() ? feedbackFor(state.current) : null;
  panel.hidden = !feedback;
  panel.replaceChildren();
  if (!feedback) return;
  const { found, missed, wrong, gold } = feedback;
  const summary = gold
    ? t(gold === 1 ? "practice_found_one" : "practice_found_many", { found: found.length, gold })
    : t("practice_none");
  append(panel, [
    h("h2", { class: "section-label" }, t("practice_heading", { segment: segLabel(feedback.segment) })),
    h("p", { class: "practice-summary" }, summary),
    group("found", t("practice_found"), found, () => null),
    group("missed", t("practice_missed"), missed, (e) => e.definition || null),
    group("wrong", t("practice_wrong"), wrong, (e) =>
      e.reference ? t("practice_reference", { label: e.reference }) : null,
    ),
    h(
      "p",
      { class: "hint" },
      t("practice_final"),
    ),
  ]);
}
