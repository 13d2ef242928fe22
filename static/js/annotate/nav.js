// Moving through the document and finishing it: progress, Previous/Next (each move is saved
// as the worker's position, the moves of half a minute in one update), and Submit, which
// waits for the outbox to drain, retries while offline and then leaves for the done page.

import { t } from "../i18n.js";
import { requestJson } from "../outbox.js";
import {
  API,
  DONE_URL,
  TOKEN,
  afterPaint,
  clampSegment,
  el,
  page,
  setHint,
  showStatus,
  state,
  typingInField,
} from "./state.js";

/** Keys that move between segments: n / p, unless a category claims them; ] / [ always. */
const NEXT_KEYS = ["n", "]"];
const PREV_KEYS = ["p", "["];

export function renderProgress() {
  const n = state.texts.length;
  el.progressText.textContent = t("progress", { n: state.current + 1, total: n });
  el.progressBar.max = n;
  el.progressBar.value = state.current + 1;
  el.currentLabel.textContent = state.readOnly
    ? t("progress", { n: state.current + 1, total: n })
    : t("progress_mark", { n: state.current + 1, total: n });
}

export function renderNav() {
  const last = state.current >= state.texts.length - 1;
  el.prev.disabled = state.current === 0 || state.submitting;
  el.next.hidden = last;
  el.next.disabled = state.submitting;
  el.next.textContent = state.readOnly ? t("next_segment") : t("next_no_errors");
  el.submit.hidden = !last || state.readOnly;
  el.submit.disabled = state.submitting;
  renderJump();
}

function unfinishedForm() {
  if (state.readOnly || !state.form.span) return false;
  setHint(el.navHint, t("unfinished"), "warn");
  el.addButton.disabled ? el.cancelButton.focus() : el.addButton.focus();
  return true;
}

export function goTo(segment) {
  const target = clampSegment(segment);
  if (target === state.current || unfinishedForm()) return;
  if (target > state.current && page.holdForFeedback(state.current)) return; // practice
  setHint(el.navHint, "");
  setHint(el.formHint, "");
  const active = page.takeActive(); // the time belongs to the segment being left
  state.current = target;
  el.instructions.open = false;
  // Deferred: the moves of the next half minute join this update (outbox.js), which goes
  // sooner when the tab is hidden or the worker submits.
  if (!state.readOnly) page.outbox.push({ kind: "position", segment: target, active, defer: true });
  const typing = document.activeElement === el.textArea && el.textArea.classList.contains("kb-active");
  page.renderAll({ scrollContext: true });
  if (typing) page.keyboardMoved();
  else el.currentHeading.focus({ preventScroll: true });
}

async function submit() {
  if (state.readOnly || state.submitting || unfinishedForm()) return;
  if (page.holdForFeedback(state.current)) return; // practice: the last segment's feedback
  state.submitting = true;
  renderNav();
  setHint(el.navHint, t("submitting"));
  const active = page.takeActive(); // the last segment's time goes before the submit
  if (Object.keys(active).length) page.outbox.push({ kind: "position", segment: state.current, active });
  let delay = 500;
  for (;;) {
    try {
      await page.outbox.drain();
      const answer = await requestJson("POST", `${API}/submit`);
      page.outbox.stop();
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
        setHint(el.navHint, t("submit_failed", { message: err.message }), "error");
        return;
      }
      showStatus("offline", err.message);
      setHint(el.navHint, t("submit_offline"), "warn");
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }
}

function claimedByCategory(key) {
  for (const c of state.categories.values()) if (c.shortcut && c.shortcut.toLowerCase() === key) return true;
  return false;
}

function segmentKey(e) {
  if (!state.data || e.ctrlKey || e.metaKey || e.altKey || typingInField(e.target)) return;
  const key = e.key.length === 1 ? e.key.toLowerCase() : null;
  if (!key || claimedByCategory(key)) return;
  const step = NEXT_KEYS.includes(key) ? 1 : PREV_KEYS.includes(key) ? -1 : 0;
  if (!step || state.submitting) return;
  e.preventDefault();
  goTo(state.current + step);
}

/** Previous, Next and Submit, their keys, and the "jump to an earlier segment" menu. */
export function wireNav() {
  el.prev.addEventListener("click", () => goTo(state.current - 1));
  el.next.addEventListener("click", () => goTo(state.current + 1));
  el.submit.addEventListener("click", submit);
  document.addEventListener("keydown", segmentKey);
  el.segmentJump.addEventListener("change", () => {
    const i = Number(el.segmentJump.value);
    el.segmentJump.value = "";
    const target = i === state.current ? el.currentHeading : page.showSegment(i);
    if (target) target.scrollIntoView({ block: "start" });
  });
}

/** The jump menu lists the earlier segments and the current one: kept from move to move,
 * only the options that change touched (a long document has thousands). */
const JUMP_AT_ONCE = 100; // more options than this wait until the text is painted
let jumpWaiting = false;

export function renderJump() {
  // deep in a book the menu holds a segment per option: thousands of elements, filled
  // after the first paint, not before it
  const missing = state.current + 2 - el.segmentJump.options.length;
  if (jumpWaiting) return;
  if (missing > JUMP_AT_ONCE) {
    jumpWaiting = true;
    el.segmentJump.hidden = state.current === 0;
    afterPaint(() => {
      jumpWaiting = false;
      fillJump();
    });
    return;
  }
  fillJump();
}

function fillJump() {
  const menu = el.segmentJump;
  if (menu.options.length === 0) menu.append(new Option(t("jump_prompt"), ""));
  const wanted = state.current + 2; // the prompt, then segments 0 .. current
  while (menu.options.length > wanted) menu.remove(menu.options.length - 1);
  for (let i = menu.options.length - 1; i <= state.current; i++) menu.append(new Option(String(i + 1), String(i)));
  for (const option of menu.querySelectorAll("option[data-current]")) {
    delete option.dataset.current;
    option.textContent = String(Number(option.value) + 1);
  }
  const now = menu.options[state.current + 1];
  now.dataset.current = "1";
  now.textContent = t("jump_current", { n: state.current + 1 });
  menu.hidden = state.current === 0;
}
