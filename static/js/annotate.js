// The annotate page: context box + current segment, span selection, taxonomy categories,
// paired spans, durable saving through the outbox, entity cues and detector suggestions.
// All document text is inserted as text nodes; nothing here parses HTML.
//
// This is the entry module: it binds the parts in static/js/annotate/ together, wires their
// events and loads the assignment. One job each:
//   state.js      configuration, DOM handles, the state object, shared helpers, `page`
//   controller.js the outbox and its outcomes, loading, read-only mode, redrawing everything
//   selection.js  text selections -> the form's span and paired span
//   form.js       category buttons and keys, the form, Add / Cancel
//   hints.js      detector suggestions: shown, used, dismissed
//   segments.js   the context and the current segment, drawn from layered ranges
//   list.js       the list of annotations, jump to one, remove one
//   nav.js        progress, Previous / Next (buttons and keys), jump to a segment, Submit
//   practice.js   practice documents: a segment's feedback before moving on
//   keyboard.js   marking without a mouse: a cursor moved by word and sentence, announced

import { wireEntityHover } from "./entities.js";
import { t } from "./i18n.js";
import { load, outbox, renderAll } from "./annotate/controller.js";
import { renderForm, resetForm, wireForm } from "./annotate/form.js";
import { renderHints, visibleSuggestions, wireHints } from "./annotate/hints.js";
import { keyboardMoved, keyboardRange, wireKeyboard } from "./annotate/keyboard.js";
import { flashAnnotation, removeAnnotation } from "./annotate/list.js";
import { goTo, wireNav } from "./annotate/nav.js";
import { holdForFeedback, renderPractice } from "./annotate/practice.js";
import { renderText, showSegment } from "./annotate/segments.js";
import { wireSelection } from "./annotate/selection.js";
import { takeActive, wireTimer } from "./annotate/timer.js";
import { el, page, showStatus } from "./annotate/state.js";

// Bind what the parts call across (see `page` in annotate/state.js) before anything runs.
Object.assign(page, {
  outbox,
  renderAll,
  renderText,
  showSegment,
  renderForm,
  resetForm,
  renderHints,
  visibleSuggestions,
  goTo,
  flashAnnotation,
  takeActive,
  holdForFeedback,
  renderPractice,
  removeAnnotation,
  keyboardMoved,
  keyboardRange,
});
for (const [name, value] of Object.entries(page)) {
  if (!value) throw new Error(`annotate: page.${name} is not bound`);
}

wireSelection();
wireKeyboard();
wireHints();
wireForm();
wireNav();
wireTimer();
wireEntityHover(document.body);
showStatus("saving");
el.saveStatus.textContent = t("loading");
load();
