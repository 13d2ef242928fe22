"""Fuzzing the researcher's file inputs (hostile files) with hypothesis: document
uploads and new studies with an uploaded taxonomy over HTTP, ``marginalia import`` and
``marginalia taxonomy check`` in-process. Never a 5xx or a traceback, and a refused file
leaves every table as it was.

Runs on SQLite and on the suite's Postgres, bounded by MARGINALIA_FUZZ_EXAMPLES (default 40)
examples per target, derandomized.
"""

from __future__ import annotations

import hashlib
import io
import json
import os

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from app import create_app
from app.db import session_scope
from app.migrate import upgrade
from app.models import Base
from tests import pg_cluster
from tests.conftest import make_study
from tests.helpers import run_import_worker

EXAMPLES = int(os.environ.get("MARGINALIA_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
EMAIL, PASSWORD = "fuzz@example.org", "a long enough password"

# Text a hostile or careless file holds: formulas, control characters, NUL, lone surrogates,
# markup, very long runs, plus ordinary words.
HOSTILE_TEXT = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            "",
            " ",
            "Anna walks home.",
            '=HYPERLINK("http://x")',
            "-2+3",
            "@SUM(A1)",
            "\t",
            "a\rb",
            "a\x00b",
            "\ud800",
            "x\udfff",
            "\x1b[31m",
            "<span class='ne ne-1'>Anna</span> waits.",
            "<span class='x ne-" + "a" * 300,
            "<" * 300,
            "N" * 400,
            "CharE",
            "0",
        ]
    ),
)
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    HOSTILE_TEXT,
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(HOSTILE_TEXT, inner, max_size=4),
    max_leaves=12,
)
SEGMENTS = st.lists(HOSTILE_TEXT, max_size=4) | JSON_VALUES
GOLD_ERRORS = st.lists(
    st.fixed_dictionaries(
        {"span": HOSTILE_TEXT, "error_type": HOSTILE_TEXT, "votes": JSON_SCALARS},
        optional={"antecedants": st.lists(HOSTILE_TEXT, max_size=2) | JSON_SCALARS},
    ),
    max_size=3,
)
DOC_IDS = HOSTILE_TEXT


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


FILES = st.one_of(
    # paragraphs: {"id": ["segment", ...]}
    st.dictionaries(DOC_IDS, SEGMENTS, max_size=3).map(lambda d: ("p.json", json.dumps(d))),
    # falte: {"id": {"sentences": [...], ...meta}}
    st.dictionaries(
        DOC_IDS,
        st.fixed_dictionaries({"sentences": SEGMENTS}, optional={"source": HOSTILE_TEXT}).flatmap(
            lambda body: st.dictionaries(HOSTILE_TEXT, JSON_VALUES, max_size=2).map(
                lambda meta: {**meta, **body}
            )
        ),
        max_size=2,
    ).map(lambda d: ("f.json", json.dumps(d))),
    # snac, with gold errors: {"id": {"0": {"text": ..., "errors": [...]}}}
    st.dictionaries(
        DOC_IDS,
        st.dictionaries(
            st.sampled_from(["0", "1", "x", "-1", "99999999999999999999"]),
            st.fixed_dictionaries({"text": HOSTILE_TEXT | JSON_SCALARS, "errors": GOLD_ERRORS}),
            max_size=2,
        ),
        max_size=2,
    ).map(lambda d: ("s.json", json.dumps(d))),
    # jsonl: one {"id", "segments", "meta"} per line
    st.lists(
        st.fixed_dictionaries(
            {"id": DOC_IDS | JSON_SCALARS, "segments": SEGMENTS, "meta": JSON_VALUES}
        ),
        max_size=3,
    ).map(lambda rows: ("j.jsonl", "\n".join(json.dumps(r) for r in rows))),
    # anything at all, and nesting deeper than any parser recurses
    JSON_VALUES.map(lambda v: ("a.json", json.dumps(v))),
    st.text(max_size=200).map(lambda t: ("t.json", t)),
    st.sampled_from([50, 5_000, 100_000]).map(lambda n: ("d.json", '{"d": ' + deep(n) + "}")),
)
UPLOAD_FIELDS = st.fixed_dictionaries(
    {
        "format": st.sampled_from(["auto", "falte", "paragraphs", "snac", "jsonl", "bogus"]),
        "gold": st.sampled_from(["", "1"]),
        "sentences_per_segment": st.sampled_from(["", "1", "2", "0", "-3", "x", "9" * 5000]),
    }
)

TAXONOMY_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), HOSTILE_TEXT),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(HOSTILE_TEXT, inner, max_size=3),
    max_leaves=8,
)
CATEGORY = st.fixed_dictionaries(
    {"id": HOSTILE_TEXT, "label": HOSTILE_TEXT, "definition": HOSTILE_TEXT},
    optional={
        "kind": st.sampled_from(["singleton", "paired", "x"]),
        "color": HOSTILE_TEXT,
        "shortcut": HOSTILE_TEXT,
        "examples": TAXONOMY_VALUES,
        "group": HOSTILE_TEXT,
    },
)
TAXONOMIES = st.one_of(
    st.fixed_dictionaries(
        {"name": HOSTILE_TEXT, "categories": st.lists(CATEGORY, max_size=3)},
        optional={"groups": TAXONOMY_VALUES, "description": TAXONOMY_VALUES},
    ).map(lambda t: yaml.safe_dump(t, allow_unicode=False)),
    TAXONOMY_VALUES.map(lambda t: yaml.safe_dump(t)),
    st.lists(
        st.sampled_from(
            [
                "name: T\n",
                "categories:\n",
                "  - id: A\n",
                "    label: &x L\n",
                "    definition: *x\n",
                "a: &a [1]\n",
                "b: [*a, *a]\n",
                "[" * 5000,
                "]" * 5000,
                "\t",
                "- \n",
                "? [a]\n: b\n",
                "x: !!python/object:os.system 1\n",
                '"\\ud800"\n',
                "key: 'unterminated\n",
            ]
        ),
        max_size=8,
    ).map("".join),
)


# Known attacks, always tried besides the generated files.
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 10)}]\n" for p, n in zip("abcdefg", "bcdefgh", strict=True)
)
DEEP_YAML = "name: T\ndescription: " + "[" * 5000 + "]" * 5000 + "\n"


class World:
    """A migrated database with one study, a logged-in researcher and the app under fuzzing."""

    def __init__(self, app, url: str):
        from app.researchers.accounts import create_researcher

        self.app, self.url = app, url
        with app.app_context(), session_scope() as session:
            create_researcher(session, EMAIL, PASSWORD, role="admin")
        self.client = app.test_client()
        login = self.client.post("/admin/login", data={"email": EMAIL, "password": PASSWORD})
        assert login.status_code == 302
        self.slugs = 0

    def digest(self, skip: tuple[str, ...] = ()) -> str:
        hasher = hashlib.sha256()
        with self.app.extensions["db_engine"].connect() as connection:
            for table in Base.metadata.sorted_tables:
                if table.name in skip:
                    continue
                for row in connection.execute(select(table).order_by(*table.primary_key.columns)):
                    hasher.update(repr(tuple(row)).encode())
        return hasher.hexdigest()


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def world(request, tmp_path_factory):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('upload-fuzz') / 'fuzz.db'}"
    else:
        cluster = request.getfixturevalue("postgres_cluster")
        url = pg_cluster.create_database(cluster, f"upload_fuzz_{os.getpid()}")
    upgrade(url)
    config = {"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "fuzz", "WTF_CSRF_ENABLED": False}
    app = create_app(config)
    make_study(app, documents=[("doc-0", ["Existing."])])
    yield World(app, url)
    app.extensions["db_engine"].dispose()


def assert_refusal_changed_nothing(world: World, before: str, accepted: bool) -> None:
    if not accepted:
        assert world.digest() == before


@FUZZ
@given(file=FILES, fields=UPLOAD_FIELDS)
def test_document_upload_fuzz(world, file, fields):
    name, content = file
    before = world.digest()
    answer = world.client.post(
        "/admin/studies/demo/documents",
        data={"file": (io.BytesIO(content.encode("utf-8")), name), "ner": "", **fields},
        content_type="multipart/form-data",
    )
    assert answer.status_code < 500, answer.get_data(as_text=True)[-300:]
    assert answer.status_code in (302, 400, 404, 409, 413), answer.status_code
    assert_refusal_changed_nothing(world, before, answer.status_code == 302)
    if answer.status_code == 302:  # queued: the worker reads the file, and ends the job
        before = world.digest(skip=("import_jobs",))
        outcome = run_import_worker(world.app)
        assert set(outcome) <= {"done", "failed"}, outcome  # never a retry loop or a crash
        if "failed" in outcome:
            assert world.digest(skip=("import_jobs",)) == before


@FUZZ
@example(taxonomy=DEEP_YAML, title="T", annotators="3", url="", platform="generic", slug=None)
@example(
    taxonomy=ALIAS_BOMB, title="T" * 301, annotators="3", url="", platform="generic", slug=None
)
@example(taxonomy="name: T\n", title="T", annotators="3", url="", platform="generic", slug="a\x00")
@given(
    taxonomy=TAXONOMIES,
    title=HOSTILE_TEXT.map(lambda t: t.encode("utf-8", "replace").decode()),  # as a form sends
    annotators=st.sampled_from(["", "3", "0", "-1", "1001", "x", "9" * 5000]),
    url=st.sampled_from(["", "https://x.org/done", "http://[::1", "https://x.org/\x00", "ftp://x"]),
    platform=st.sampled_from(["generic", "prolific", "mturk", "other"]),
    slug=st.sampled_from([None, None, None, "", "demo", "a\x00b", "Bad Slug", "x" * 200]),
)
def test_new_study_with_uploaded_taxonomy_fuzz(
    world, taxonomy, title, annotators, url, platform, slug
):
    world.slugs += 1
    before = world.digest()
    answer = world.client.post(
        "/admin/studies/new",
        data={
            "slug": f"fuzz-{world.slugs}" if slug is None else slug,
            "taxonomy": "snac.yaml",
            "taxonomy_file": (io.BytesIO(taxonomy.encode("utf-8", "surrogatepass")), "t.yaml"),
            "title": title,
            "annotators_per_doc": annotators,
            "completion_url": url,
            "platform": platform,
        },
        content_type="multipart/form-data",
    )
    assert answer.status_code in (302, 400), answer.get_data(as_text=True)[-300:]
    assert_refusal_changed_nothing(world, before, answer.status_code == 302)


def run_cli(world: World, monkeypatch, *args: str):
    from app.cli import main

    monkeypatch.setenv("DATABASE_URL", world.url)
    monkeypatch.setenv("SECRET_KEY", "fuzz")
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in (0, 1), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    if result.exit_code == 1:
        lines = result.output.strip().splitlines()
        assert len(lines) == 1, lines
    return result


@FUZZ
@given(file=FILES, gold=st.booleans())
def test_marginalia_import_fuzz(world, tmp_path_factory, monkeypatch_module, file, gold):
    name, content = file
    path = tmp_path_factory.mktemp("import") / name
    path.write_text(content, encoding="utf-8")
    before = world.digest()
    args = ["import", "demo", str(path), "--no-ner"] + (["--gold"] if gold else [])
    result = run_cli(world, monkeypatch_module, *args)
    if result.exit_code == 1:
        assert result.output.startswith("error: ")
    assert_refusal_changed_nothing(world, before, result.exit_code == 0)


@FUZZ
@example(taxonomy=DEEP_YAML)
@example(taxonomy=ALIAS_BOMB)
@given(taxonomy=TAXONOMIES)
def test_taxonomy_check_fuzz(world, tmp_path_factory, monkeypatch_module, taxonomy):
    path = tmp_path_factory.mktemp("taxonomy") / "t.yaml"
    path.write_bytes(taxonomy.encode("utf-8", "surrogatepass"))
    run_cli(world, monkeypatch_module, "taxonomy", "check", str(path))


@pytest.fixture(scope="module")
def monkeypatch_module():
    patch = pytest.MonkeyPatch()
    yield patch
    patch.undo()
