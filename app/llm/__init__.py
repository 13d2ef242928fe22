"""LLM annotators of a study: a model behind any OpenAI-compatible chat endpoint annotates
the study's documents as a worker of its own (worker ID ``llm:<name>``), blind beside the
humans, and is calibrated against gold and against them, with what it cost.

``annotators.py`` (the researcher's settings: endpoint, model, temperature, preset, limits,
prices), ``runs.py`` (the queue: a run, one job per document, on the worker),
``annotate.py`` (one document: prompts, answers, marks), ``answers.py`` (answers cached in
the database), ``store.py`` (the marks stored through the add action, like a human's),
``calibration.py`` + ``agreeing.py`` + ``costs.py`` (the calibration view's figures),
``ranks.py`` (systems ranked from the model's and the humans' marks)."""

ALL = "all"  # the figures' row of every category together
