"""The annotate page scripts' own text, in English, by key: ``t("key", {name: value})`` in
``static/js/i18n.js`` fills ``{name}``. ``N_`` marks each text for the catalogue (``pybabel
extract``); :func:`app.web.i18n.script_messages` translates the table for a page."""

from __future__ import annotations

from app.documents.language import N_

SCRIPT_MESSAGES: dict[str, str] = {
    # the save status (state.js)
    "loading": N_("Loading…"),
    "status_saving": N_("Saving…"),
    "status_saved": N_("Saved"),
    "status_offline": N_("Offline — will retry"),
    "status_retrying": N_("Server problem — will retry"),
    "status_error": N_("Not saved"),
    "status_error_detail": N_("Not saved: {detail}"),
    "segment_n": N_("segment {n}"),
    "segments_n_m": N_("segments {n}–{m}"),
    "segment_word": N_("Segment"),
    "quote": N_("“{text}”"),
    "paired_prompt": N_("Now select the earlier text this relates to."),
    # loading, read-only, refusals (controller.js)
    "not_saved_annotation": N_("The annotation was not saved: {message}"),
    "not_added": N_("Not added: {message}."),
    "submitted_elsewhere": N_(
        "This assignment has already been submitted; it can no longer be changed."
    ),
    "load_failed": N_("The document could not be loaded ({message})."),
    "no_text": N_("This document has no text to annotate."),
    "read_only_code": N_("Submitted. Your completion code is {code}. This view is read-only."),
    "read_only_submitted": N_("Submitted. This view is read-only."),
    "read_only_preview": N_("Preview: read-only, annotations cannot be added here."),
    "read_only_screened_out": N_("This practice text is finished and can no longer be changed."),
    "read_only_rejected": N_("A researcher has closed this work: it can no longer be changed."),
    "read_only_abandoned": N_(
        "This work was paused too long and its place given to someone else: it can no "
        "longer be changed."
    ),
    "not_saved_edit": N_("The change was not saved: {message}"),
    "try_again": N_("Try again"),
    "characters_so_far": N_("Characters so far"),
    "entities_so_far": N_("Entities so far"),
    # selections (selection.js, textview.js)
    "single_segment": N_("Select text within a single segment."),
    "earlier_before_span": N_("The earlier text must come before the marked span."),
    "earlier_before_span_where": N_(
        "The earlier text must come before the marked span (in the context box, or earlier "
        "in this segment)."
    ),
    "mark_current_segment": N_(
        "Mark errors in the current segment. Earlier text is only selected for a paired "
        "category, after marking the span."
    ),
    "choose_category": N_("Now choose a category (click it or press its key)."),
    "span_taken_ready": N_("Ready: press Add (Ctrl+Enter) to add the annotation."),
    "paired_taken": N_("Earlier text taken: press Add (Ctrl+Enter) to add the annotation."),
    "linked_taken": N_("Linked text taken: press Add (Ctrl+Enter) to add the annotation."),
    # the form (form.js)
    "key_suffix": N_(" (key {key})"),
    "tag_paired": N_("paired"),
    "tag_paired_title": N_("Paired: also select the earlier text"),
    "tag_link": N_("link"),
    "tag_link_title": N_("May link to another span, anywhere"),
    "tag_sentence": N_("sentence"),
    "tag_sentence_title": N_("Marks the whole sentence"),
    "group_other": N_("Other"),
    "select_words_now": N_("Now select the words in the current segment."),
    "category_chosen": N_("Category: {label}. Press Add (Ctrl+Enter) to add the annotation."),
    "select_first": N_("Select the words with the error first."),
    "choose_first": N_("Choose a category first."),
    "choose_attribute": N_("Choose {label} first."),
    "earlier_span_label": N_("3. Earlier span"),
    "linked_span_label": N_("3. Linked span (optional)"),
    "optional": N_("(optional)"),
    "already_marked": N_("Already marked: {label} — {text}. Choose another span or category."),
    "added": N_("Added: {label} — {text}"),
    "definition_less": N_("Less"),
    "definition_full": N_("Full definition"),
    # the list (list.js)
    "this_segment": N_("{segment} (this one)"),
    "go_to": N_("Go to {segment}"),
    "saving_item": N_("saving…"),
    "earlier_in": N_("earlier ({segment}): "),
    "linked_in": N_("linked ({segment}): "),
    "attribute_value": N_("{label}: {value}"),
    "comment_label": N_("Comment: "),
    "remove": N_("Remove"),
    "remove_label": N_("Remove {label}: {text}"),
    "removed": N_("Removed: {text}"),
    # changing an annotation's category or comment in place (list.js)
    "edit": N_("Edit"),
    "edit_label": N_("Edit {label}: {text}"),
    "edit_category": N_("Category"),
    "edit_comment": N_("Comment"),
    "edit_save": N_("Save"),
    "edit_cancel": N_("Cancel"),
    "changed": N_("Changed: {text}"),
    # hints (hints.js, segments.js)
    "check_suggestion": N_("Check the suggestion, add a comment if you like, then press Add."),
    "use": N_("Use"),
    "use_label": N_("Use the suggestion {text}"),
    "dismiss": N_("Dismiss"),
    "dismiss_label": N_("Dismiss the suggestion {text}"),
    "suggested_title": N_(
        "Suggested: {label} — press Use in the list below (or Enter here) to apply it"
    ),
    "mention_title": N_("{name} — first in segment {n}"),
    # moving and submitting (nav.js)
    "progress": N_("Segment {n} of {total}"),
    "progress_mark": N_("Segment {n} of {total} — mark errors here"),
    "next_segment": N_("Next segment"),
    "next_no_errors": N_("No more errors — next segment"),
    "unfinished": N_("You have a selection that is not added yet: press Add, or Cancel it first."),
    "submitting": N_("Submitting…"),
    "submit_failed": N_("Could not submit: {message}"),
    "submit_offline": N_("Offline — submitting again shortly…"),
    "jump_prompt": N_("Read an earlier segment…"),
    "jump_current": N_("{n} (current)"),
    "context_earlier": N_("Show earlier segments ({first}–{last})"),
    # practice feedback (practice.js)
    "practice_checking": N_("Checking your marks against the reference…"),
    "practice_compare": N_("Compare your marks with the reference below, then go on."),
    "practice_failed": N_("Your marks could not be checked: {message}"),
    "practice_group": N_("{title} ({n})"),
    "practice_found_one": N_("You found {found} of the {gold} error the reference marks here."),
    "practice_found_many": N_("You found {found} of the {gold} errors the reference marks here."),
    "practice_none": N_("The reference marks no error here."),
    "practice_heading": N_("Practice feedback — {segment}"),
    "practice_found": N_("Found"),
    "practice_missed": N_("Missed"),
    "practice_wrong": N_("Marked, but not in the reference"),
    "practice_reference": N_("The reference marks this as {label}."),
    "practice_final": N_(
        "Your marks on this segment are final now. A match needs the same category and most "
        "of the same words."
    ),
    # the instructions panel (instructions.js)
    "note_paired": N_("paired: select the span, then the earlier text it relates to"),
    "note_sentence": N_("marks the whole sentence"),
    "note_relation": N_("may also link to another span, anywhere in the text"),
    "note_attribute": N_("{label}: {values}"),
    "note_attribute_required": N_("{label} (required): {values}"),
    "shortcut_title": N_("Keyboard shortcut"),
    "example_label": N_("Example: "),
    "step_select": N_(
        "Select the words with the error in the current segment: drag with the mouse, or "
        "move into the text with Tab and use the arrow keys (Shift selects more, Enter takes "
        "the selection)."
    ),
    "step_category": N_("Choose a category (click it or press its key)."),
    "step_paired": N_("For a paired category, select the earlier text it relates to."),
    "step_add": N_("Add a comment if it helps, then press Add (or Ctrl+Enter)."),
    "step_next": N_("When the segment has no more errors, go to the next segment."),
    "error_categories": N_("Error categories"),
    # the characters panel (entities.js)
    "first_mention_title": N_("Show the first mention of {name}"),
    "entity_new": N_("new in this segment"),
    "entity_first": N_("first in segment {n}"),
    "entity_mentions": N_(" · {n} mentions"),
    # the keyboard cursor (keyboard.js)
    "kb_selected": N_("Selected: {text}"),
    "kb_marked": N_("{text} — marked: {labels}"),
    "kb_start": N_("Start of the text"),
    "kb_end": N_("End of the text on screen"),
    "kb_span_taken": N_("Span: {text}"),
    "kb_paired_taken": N_("Earlier text: {text}"),
    "kb_nothing_here": N_("No annotation here."),
    "kb_several_here": N_("Several annotations here: remove one in the list of annotations."),
    "kb_read_only": N_("This view is read-only."),
    "kb_find_start": N_("Find: type the first letters of a word (Escape stops)"),
    "kb_found": N_("{prefix}: {word}, {segment}"),
    "kb_found_wrapped": N_("{prefix}: {word}, {segment} (from the start again)"),
    "kb_find_none": N_("No word on screen starts with {prefix}"),
}
