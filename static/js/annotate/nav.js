// Moving through the document and finishing it: progress, Previous/Next (each move is saved
// as the worker's position), and Submit, which waits for the outbox to drain, retries while
// offline and then leaves for the done page.

import { requestJson } from "../outbox.js";
import { API, DONE_URL, TOKEN, clampSegment, el, page, setHint, showStatus, state } from "./state.js";

export function renderProgress() {
  const n = state.texts.length;
  el.progressText.textContent = `Segment ${state.current + 1} of ${n}`;
  el.progressBar.max = n;
  el.progressBar.value = state.current + 1;
  el.currentLabel.textContent = state.readOnly
    ? `Segment ${state.current + 1} of ${n}`
    : `Segment ${state.current + 1} of ${n} — mark errors here`;
}

export function renderNav() {
  const last = state.current >= state.texts.length - 1;
  el.prev.disabled = state.current === 0 || state.submitting;
  el.next.hidden = last;
  el.next.disabled = state.submitting;
  el.next.textContent = state.readOnly ? "Next segment" : "No more errors — next segment";
  el.submit.hidden = !last || state.readOnly;
  el.submit.disabled = state.submitting;
}

function unfinishedForm() {
  if (state.readOnly || !state.form.span) return false;
  setHint(el.navHint, "You have a selection that is not added yet: press Add, or Cancel it first.", "warn");
  el.addButton.disabled ? el.cancelButton.focus() : el.addButton.focus();
  return true;
}

export function goTo(segment) {
  const target = clampSegment(segment);
  if (target === state.current || unfinishedForm()) return;
  setHint(el.navHint, "");
  setHint(el.formHint, "");
  state.current = target;
  el.instructions.open = false;
  if (!state.readOnly) page.outbox.push({ kind: "position", segment: target });
  page.renderAll({ scrollContext: true });
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

/** Previous, Next and Submit. */
export function wireNav() {
  el.prev.addEventListener("click", () => goTo(state.current - 1));
  el.next.addEventListener("click", () => goTo(state.current + 1));
  el.submit.addEventListener("click", submit);
}
