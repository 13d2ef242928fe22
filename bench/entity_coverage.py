"""Coverage of SNaC CharE spans by stored PERSON mentions, and mentions per entity.

A CharE span ("a character appears without introduction") is covered when its first
occurrence in its segment overlaps a PERSON mention that ``app.entities.find_entities``
would store. Runs directly on the functions (no database).

    .venv/bin/python bench/entity_coverage.py [--split dev|train] [--data DIR] [--misses]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.entities import find_entities, load_pipeline  # noqa: E402

# Panel entries of SNaC dev that are not people, judged by reading the summaries (places, organisations, objects):
# a place, a country, two rugby teams, the sun and the moon. ("the Albatross" is not here:
# the SNaC annotators marked it as a character.)
NON_PERSON_DEV = {
    "tripod7": {"Old Hill"},
    "tripod22": {"England", "Springbok", "Wallaby"},
    "book_6b50": {"Sun", "Moon"},
}
DEFAULT_DATA = Path(os.environ.get("MARGINALIA_SHARED_DATA", ROOT / ".." / "shared" / "data"))


def load_snac(path: Path) -> tuple[list[str], list[list[str]], list[list[list[dict]]]]:
    """Document ids, segment texts and per-segment error lists of a SNaC file."""
    data = json.loads(path.read_text())
    ids, texts, errors = [], [], []
    for doc_id, body in data.items():
        order = sorted(body, key=int)
        ids.append(doc_id)
        texts.append([body[k]["text"] for k in order])
        errors.append([body[k]["errors"] for k in order])
    return ids, texts, errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=["dev", "train"])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--model", default=os.environ.get("SPACY_MODEL"))
    parser.add_argument("--misses", action="store_true", help="list the uncovered spans")
    parser.add_argument("--no-baseline", action="store_true", help="skip the NER-only figure")
    args = parser.parse_args()

    path = args.data / "snac" / f"{args.split}.json"
    if not path.exists():
        print(f"SNaC data not found at {path}", file=sys.stderr)
        return 1
    nlp = load_pipeline(args.model)
    if nlp is None:
        print("no spaCy model could be loaded", file=sys.stderr)
        return 1
    ids, texts, errors = load_snac(path)
    started = time.perf_counter()
    results = find_entities(texts, nlp, labels=("PERSON",), progress=False)
    elapsed = time.perf_counter() - started

    total = covered = 0
    misses: list[str] = []
    per_entity: list[int] = []
    for doc_id, segments, errs, result in zip(ids, texts, errors, results, strict=True):
        counts = Counter(m.entity for m in result.mentions if m.label == "PERSON")
        per_entity.extend(counts.values())
        for index, (text, seg_errors) in enumerate(zip(segments, errs, strict=True)):
            mentions = [m for m in result.mentions if m.segment == index and m.label == "PERSON"]
            for error in seg_errors:
                if error["error_type"] != "CharE":
                    continue
                total += 1
                start = text.find(error["span"])
                end = start + len(error["span"])
                if start >= 0 and any(m.start < end and start < m.end for m in mentions):
                    covered += 1
                else:
                    misses.append(f"{doc_id} #{index}: {error['span'][:60]!r}")

    n_docs = len(texts)
    n_segments = sum(len(s) for s in texts)
    print(
        f"SNaC {args.split}: {n_docs} documents, {n_segments} segments "
        f"(NER + grouping {elapsed:.1f} s, model {nlp.meta.get('name')} "
        f"{nlp.meta.get('version')}, pipes {nlp.pipe_names})"
    )
    print(
        f"CharE coverage: {covered}/{total} = {covered / total:.3f} of CharE spans overlap a "
        f"PERSON mention (goal >= 0.90)"
    )
    print(
        f"PERSON entities: {len(per_entity)}; mentions per entity: mean "
        f"{statistics.mean(per_entity):.2f}, median {statistics.median(per_entity):g}, "
        f"max {max(per_entity)}; single-mention entities "
        f"{sum(1 for c in per_entity if c == 1) / len(per_entity):.0%}"
    )
    if args.split == "dev":
        listed = [
            e.name
            for doc_id, result in zip(ids, results, strict=True)
            for e in result.entities
            if e.label == "PERSON" and e.name in NON_PERSON_DEV.get(doc_id, ())
        ]
        total_known = sum(len(v) for v in NON_PERSON_DEV.values())
        print(
            f"non-person entries in the panel: {len(listed)} of the {total_known} hand-judged "
            f"ones ({', '.join(sorted(listed)) or 'none'}); panel entries in all: "
            f"{sum(1 for r in results for e in r.entities if e.label == 'PERSON')}"
        )
    if not args.no_baseline:
        # For comparison: the model's own PERSON entities, without the reader-style rules.
        raw = raw_total = 0
        for segments, errs in zip(texts, errors, strict=True):
            for doc, text, seg_errors in zip(nlp.pipe(segments), segments, errs, strict=True):
                people = [(e.start_char, e.end_char) for e in doc.ents if e.label_ == "PERSON"]
                for error in seg_errors:
                    if error["error_type"] != "CharE":
                        continue
                    raw_total += 1
                    start = text.find(error["span"])
                    end = start + len(error["span"])
                    raw += any(s < end and start < e for s, e in people)
        print(
            f"baseline (the model's PERSON entities alone): {raw}/{raw_total} = "
            f"{raw / raw_total:.3f}"
        )
    if args.misses:
        print("\nUncovered CharE spans:")
        for line in misses:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
