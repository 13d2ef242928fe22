"""The rules every feature reads and none owns: which work counts (work.py), how marked spans
are matched and scored (spans.py, matching.py, scoring.py) and the stored figures' reader
(stored_figures.py). They sit below the features so that the worker's actions
(app/annotation/), the report (app/quality/), the exports and the LLM annotators all call the
one definition without importing each other."""
