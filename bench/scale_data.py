"""Big-study benchmark data: a synthetic Thresh file of a crowd study of a given size, a
2,000-segment document (bench/long_document.py) and a Postgres cluster kept under
bench/out/scale/ between runs (for the scale benchmark, withdrawn with the maintained
figures until they are merged with main's figure jobs).

The Thresh file (deterministic for a size): SNaC summaries (their first ten segments, one
paragraph each) as documents, each done by three workers drawn at random from a pool sized
so that a worker does about 25 documents (20 workers at 10k annotations, 2,000 at 1M, as a
Prolific study that size would have). Each worker marks about 20 spans a document: each of
the document's 12 "real" errors with probability 0.6 (so workers agree on some) and their
own few; a sixth of them paired (InconE, RepE: the earlier range in an earlier segment).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("MARGINALIA_SHARED_DATA", REPO.parent / "shared" / "data"))
SCALE_OUT = REPO / "bench" / "out" / "scale"
SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
PER_DOCUMENT = 60  # 3 workers x ~20 marks
SEGMENTS = 10
SINGLE = ("CharE", "RefE", "SceneE", "GramE")
PAIRED = ("InconE", "RepE")


def summaries() -> list[list[str]]:
    """SNaC's summaries as lists of segments (a fixed story without the shared data)."""
    found = []
    for name in ("train.json", "dev.json"):
        path = SHARED / "snac" / name
        if path.exists():
            for segments in json.loads(path.read_text()).values():
                texts = [" ".join(segments[k]["text"].split()) for k in sorted(segments, key=int)]
                texts = [t for t in texts if t][:SEGMENTS]
                if len(texts) >= 4:
                    found.append(texts)
    if not found:
        sentence = "Anna walks to the harbour, where her brother Pedro waits with a letter."
        found = [[f"{sentence} ({n})" for n in range(SEGMENTS)]]
    return found


def _word_ranges(text: str) -> list[tuple[int, int]]:
    ranges, at = [], 0
    for word in text.split(" "):
        ranges.append((at, at + len(word)))
        at += len(word) + 1
    return ranges


def _span(rng: random.Random, words: list[tuple[int, int]]) -> tuple[int, int]:
    first = rng.randrange(len(words))
    last = min(len(words) - 1, first + rng.randrange(3))
    return words[first][0], words[last][1]


def _error(rng: random.Random, starts: list[int], words: list[list[tuple[int, int]]]) -> dict:
    """One error: a category and its output_idx ranges in the whole target."""
    segment = rng.randrange(len(words))
    start, end = _span(rng, words[segment])
    if segment > 0 and rng.random() < 1 / 6:
        earlier = rng.randrange(segment)
        p_start, p_end = _span(rng, words[earlier])
        return {
            "category": rng.choice(PAIRED),
            "output_idx": [
                [starts[earlier] + p_start, starts[earlier] + p_end],
                [starts[segment] + start, starts[segment] + end],
            ],
        }
    return {
        "category": rng.choice(SINGLE),
        "output_idx": [[starts[segment] + start, starts[segment] + end]],
    }


def thresh_entries(annotations: int, seed: int = 34):
    """The entries of the study's Thresh file, one at a time (about ``annotations`` marks)."""
    rng = random.Random(seed)
    texts = summaries()
    documents = max(1, annotations // PER_DOCUMENT)
    pool = max(20, documents * 3 // 25)
    for d in range(documents):
        segments = texts[d % len(texts)]
        starts, at = [], 0
        for text in segments:
            starts.append(at)
            at += len(text) + 2
        words = [_word_ranges(t) for t in segments]
        real = [_error(rng, starts, words) for _ in range(12)]
        edits: dict[tuple, dict[str, Any]] = {}
        for worker in rng.sample(range(pool), 3):
            name = f"prolific-{worker:05d}"
            mine = [e for e in real if rng.random() < 0.6]
            mine += [_error(rng, starts, words) for _ in range(20 - len(mine))]
            for error in mine:
                key = (json.dumps(error["output_idx"]), error["category"])
                edit = edits.setdefault(key, {**error, "annotators": []})
                if name not in edit["annotators"]:
                    edit["annotators"].append(name)
        yield {
            "id": f"doc-{d:06d}",
            "source": "",
            "target": "\n\n".join(segments),
            "edits": [{"id": n, **e} for n, e in enumerate(edits.values())],
        }


def panel_entries(documents: int, raters: int = 10, marks: int = 20, *, per_rater: bool = False):
    """A panel study's Thresh entries: every document done by the same ``raters`` raters,
    each marking ``marks`` spans (the big-study check's shape: 1,000 documents x 10 raters x
    20 marks). ``per_rater``: one entry per rater and document (``metadata.rater``, as
    Thresh's MQM data has them; merged into one document on import), else one entry per
    document whose edits name their ``annotators``."""
    rng = random.Random(7)
    texts = summaries()
    names = [f"rater-{r:02d}" for r in range(raters)]
    for d in range(documents):
        segments = texts[d % len(texts)]
        starts, at = [], 0
        for text in segments:
            starts.append(at)
            at += len(text) + 2
        words = [_word_ranges(t) for t in segments]
        real = [_error(rng, starts, words) for _ in range(12)]
        target = "\n\n".join(segments)
        merged: dict[tuple, dict[str, Any]] = {}
        for name in names:
            mine: dict[tuple, dict[str, Any]] = {}
            while len(mine) < marks:
                error = rng.choice(real) if rng.random() < 0.5 else _error(rng, starts, words)
                mine.setdefault((json.dumps(error["output_idx"]), error["category"]), error)
            if per_rater:
                edits = [{"id": n, **e} for n, e in enumerate(mine.values())]
                entry = {"id": f"doc-{d:06d}-{name}", "source": f"item {d}", "target": target}
                yield {**entry, "metadata": {"rater": name}, "edits": edits}
                continue
            for key, error in mine.items():
                merged.setdefault(key, {**error, "annotators": []})["annotators"].append(name)
        if not per_rater:
            edits = [{"id": n, **e} for n, e in enumerate(merged.values())]
            yield {"id": f"doc-{d:06d}", "source": "", "target": target, "edits": edits}


def write_thresh(path: Path, annotations: int = 0, *, entries: Any = None) -> dict[str, int]:
    """Write the file (streamed, one entry at a time): ``thresh_entries(annotations)`` or
    the given ``entries``; its counts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    marks = documents = 0
    with path.open("w", encoding="utf-8") as out:
        out.write("[\n")
        for n, entry in enumerate(entries or thresh_entries(annotations)):
            out.write((",\n" if n else "") + json.dumps(entry, ensure_ascii=False))
            documents += 1
            marks += sum(len(e.get("annotators") or [1]) for e in entry["edits"])
        out.write("\n]\n")
    return {"entries": documents, "annotations": marks, "bytes": path.stat().st_size}


def long_document(segments: int = 2000) -> list[str]:
    """A book-length document: SNaC's segments one after another (~29 words each)."""
    pool = [s for texts in summaries() for s in texts]
    return [pool[i % len(pool)] for i in range(segments)]


# --- a Postgres cluster kept between runs --------------------------------------------------


class Cluster:
    """Postgres under bench/out/scale/pg (initdb once; started and stopped per run)."""

    def __init__(self, root: Path = SCALE_OUT / "pg"):
        from tests import pg_cluster

        self.root = root
        self.data = root / "data"
        self.bin = pg_cluster._bin_dir()
        if self.bin is None:
            raise SystemExit("no PostgreSQL server binaries (apt-get install postgresql)")
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self.port = pg_cluster._free_port()

    def _run(self, *command: str) -> None:
        subprocess.run([*self.as_user, *command], check=True, capture_output=True)

    def start(self) -> Cluster:
        if not self.data.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            if self.as_user:
                shutil.chown(self.root, "postgres", "postgres")
            self._run(f"{self.bin}/initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust")
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=100 -c shared_buffers=256MB -c work_mem=16MB"
        )
        log = str(self.root / "log")
        self._run(
            f"{self.bin}/pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start"
        )
        return self

    def stop(self) -> None:
        self._run(f"{self.bin}/pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, database: str) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/{database}"

    def has(self, database: str) -> bool:
        import psycopg2

        connection = psycopg2.connect(self.url("postgres").replace("+psycopg2", ""))
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
            found = cursor.fetchone() is not None
        connection.close()
        return found

    def create(self, database: str) -> str:
        import psycopg2

        connection = psycopg2.connect(self.url("postgres").replace("+psycopg2", ""))
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{database}"')
            cursor.execute(f'CREATE DATABASE "{database}"')
        connection.close()
        return self.url(database)

    def vacuum(self, database: str) -> None:
        import psycopg2

        connection = psycopg2.connect(self.url(database).replace("+psycopg2", ""))
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE)")
            cursor.execute("CHECKPOINT")
        connection.close()
