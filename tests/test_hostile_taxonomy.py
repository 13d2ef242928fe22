"""Hostile taxonomy files: alias bombs, huge and deeply nested files,
text the databases cannot store, names over the column limits. Each is refused quickly with a
``FILE:LINE: field: problem`` message, by the parser, the admin form and the CLI alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.documents.taxonomy import (
    MAX_CATEGORIES,
    MAX_NAME_CHARS,
    MAX_TAXONOMY_BYTES,
    TaxonomyError,
    load_taxonomy,
    parse_taxonomy,
)
from tests.conftest import REPO

MARGINALIA = Path(sys.executable).parent / "marginalia"
HEAD = "name: T\ncategories:\n  - id: A\n    label: Alpha\n    definition: An alpha error.\n"


def alias_bomb(levels: int = 9) -> str:
    """The "billion laughs" in YAML: each level lists the previous one ten times."""
    lines = ['a0: &a0 ["lol"]']
    for n in range(1, levels + 1):
        previous = ", ".join([f"*a{n - 1}"] * 10)
        lines.append(f"a{n}: &a{n} [{previous}]")
    lines.append(f"description: *a{levels}")
    return HEAD + "\n".join(lines) + "\n"


def refused(text: str, seconds: float = 2.0) -> TaxonomyError:
    started = time.monotonic()
    with pytest.raises(TaxonomyError) as caught:
        parse_taxonomy(text, "t.yaml")
    assert time.monotonic() - started < seconds
    message = str(caught.value)
    assert message.startswith("t.yaml:") and "\n" not in message
    return caught.value


def test_alias_bomb_is_refused_at_the_first_alias_quickly():
    text = alias_bomb()
    assert len(text) < 800
    error = refused(text, seconds=1.0)
    assert "alias" in error.problem or "anchor" in error.problem
    assert error.line == 6  # the first anchor, before any expansion


def test_plain_aliases_are_refused_too():
    text = HEAD + "groups: &g\n  - {id: g1, label: G}\ndescription: *g\n"
    assert "anchor" in refused(text).problem


def test_file_over_the_size_limit_is_refused_before_parsing():
    filler = "# " + "x" * 1000 + "\n"
    text = HEAD + filler * (MAX_TAXONOMY_BYTES // len(filler) + 1)
    error = refused(text, seconds=1.0)
    assert error.line == 1 and "larger than" in error.problem


def test_an_endless_file_is_refused_after_the_limit():
    started = time.monotonic()
    with pytest.raises(TaxonomyError, match="larger than 256 KB"):
        load_taxonomy("/dev/zero")
    assert time.monotonic() - started < 1.0


def test_too_many_categories_are_refused_quickly():
    body = "".join(
        f"  - {{id: C{i}, label: L{i}, definition: D{i}}}\n" for i in range(MAX_CATEGORIES + 1)
    )
    text = "name: T\ncategories:\n" + body
    assert len(text.encode()) < MAX_TAXONOMY_BYTES
    error = refused(text)
    assert error.field == "categories" and str(MAX_CATEGORIES) in error.problem


def test_the_limits_still_admit_a_large_honest_taxonomy():
    body = "".join(
        f"  - id: C{i}\n    label: Label {i}\n    definition: {'A definition. ' * 20}\n"
        for i in range(MAX_CATEGORIES)
    )
    started = time.monotonic()
    snapshot = parse_taxonomy("name: Big\ncategories:\n" + body, "big.yaml")
    assert time.monotonic() - started < 5
    assert len(snapshot["categories"]) == MAX_CATEGORIES


@pytest.mark.parametrize(
    "text", ["description: " + "[" * 5000 + "]" * 5000, "description:\n" + "- " * 3000 + "x"]
)
def test_deep_nesting_is_a_clear_error_not_a_recursion_error(text):
    error = refused(HEAD + text + "\n")
    assert "nested" in error.problem


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('name: "bad \\ud800 name"\n' + HEAD.split("\n", 1)[1], "name"),
        (HEAD.replace("label: Alpha", 'label: "A\\0lpha"'), "categories[0].label"),
        (HEAD + 'description: "x\\udfffy"\n', "description"),
        (HEAD.replace("An alpha error.", '"bell \\a here"'), "categories[0].definition"),
    ],
)
def test_unstorable_text_is_refused_with_its_field(text, field):
    error = refused(text)
    assert error.field == field
    assert "character" in error.problem or "surrogate" in error.problem


def test_nul_byte_in_the_file_gives_one_line():
    error = refused(HEAD + "description: a\x00b\n")
    assert error.line == 6


def test_names_over_the_column_limit_are_refused():
    long_name = "N" * (MAX_NAME_CHARS + 1)
    error = refused(HEAD.replace("name: T", f"name: {long_name}"))
    assert error.field == "name" and str(MAX_NAME_CHARS) in error.problem


def test_shipped_taxonomies_still_load():
    for path in (REPO / "taxonomies").glob("*.yaml"):
        assert load_taxonomy(path)["categories"]


def test_cli_taxonomy_check_refuses_an_alias_bomb_in_one_line(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    result = subprocess.run(
        [str(MARGINALIA), "taxonomy", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=env,
    )
    assert time.monotonic() - started < 20
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}:6: ")
    assert "Traceback" not in result.stderr


def test_snapshot_is_json_and_round_trips():
    snapshot = load_taxonomy(REPO / "taxonomies" / "snac.yaml")
    assert json.loads(json.dumps(snapshot)) == snapshot
