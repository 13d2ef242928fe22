"""Predict on SNaC's TSV (id, context, sentence) and write SNaC's output lines.

Like the release's ``snac_evaluate.py``, each row gives two lines: the model input, then
``Predicted: <output>`` where the output follows the SNaC grammar (``true`` or ``false``
with labels and spans). Non-T5 backends have their suggestions written in that grammar.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from model_server.grammar import build_input, format_target
from model_server.interface import DetectionInput, Detector


def read_tsv(path: str | Path) -> list[dict[str, str]]:
    """Rows of a SNaC TSV with columns id, context, sentence."""
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    missing = {"context", "sentence"} - set(rows[0] if rows else {"context", "sentence"})
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    return rows


def predict_lines(detector: Detector, rows: list[dict[str, str]]) -> Iterator[str]:
    """Two output lines per row (input, ``Predicted: ...``)."""
    inputs = [DetectionInput(r.get("context") or "", r.get("sentence") or "") for r in rows]
    if hasattr(detector, "generate") and hasattr(detector, "texts"):
        texts = detector.texts(inputs)
        outputs = [text for text, _ in detector.generate(texts)]
    else:
        texts = [build_input(i.context, i.sentence) for i in inputs]
        outputs = [
            format_target([(s.label, i.sentence[s.start : s.end]) for s in found])
            for i, found in zip(inputs, detector.detect(inputs), strict=True)
        ]
    for text, output in zip(texts, outputs, strict=True):
        yield text.strip()
        yield f"Predicted: {output.strip()}"


def predict_tsv(detector: Detector, tsv_path: str | Path, out: TextIO) -> int:
    """Write predictions for every TSV row to ``out``; returns the number of rows."""
    rows = read_tsv(tsv_path)
    for line in predict_lines(detector, rows):
        out.write(line + "\n")
    return len(rows)
