"""YAML taxonomies: the shipped ones, schema errors as FILE:LINE: field: problem, snapshots."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.documents.taxonomy import TaxonomyError, load_taxonomy
from app.errors import InvalidInput
from tests.conftest import REPO, make_study

MARGINALIA = Path(sys.executable).parent / "marginalia"

# Line numbers matter: the cases below edit numbered lines of this file.
BASE = """\
name: Test taxonomy
groups:
  - id: g1
    label: Group one
categories:
  - id: A
    label: Alpha
    group: g1
    kind: singleton
    color: "#ff0000"
    shortcut: "1"
    definition: An alpha error.
  - id: B
    label: Beta
    group: g1
    kind: paired
    color: "#00ff00"
    shortcut: "2"
    definition: A beta error.
"""


def edit(line: int, new: str | None = None, *, insert: str | None = None) -> str:
    """BASE with 1-based ``line`` replaced by ``new`` (None deletes it), or ``insert``
    placed after it."""
    lines = BASE.splitlines()
    if insert is not None:
        lines.insert(line, insert)
    elif new is None:
        del lines[line - 1]
    else:
        lines[line - 1] = new
    return "\n".join(lines) + "\n"


# name: (yaml text, line, field, words in the problem)
MALFORMED = {
    "unknown kind": (
        edit(16, "    kind: triangle"),
        16,
        "categories[1].kind",
        ["unknown kind", "triangle"],
    ),
    "duplicate id": (edit(13, "  - id: A"), 13, "categories[1].id", ["duplicate", "'A'"]),
    "missing label": (edit(14), 13, "categories[1].label", ["required"]),
    "empty label": (edit(14, '    label: ""'), 14, "categories[1].label", ["empty"]),
    "bad colour": (
        edit(17, '    color: "#00gg00"'),
        17,
        "categories[1].color",
        ["bad colour", "#00gg00"],
    ),
    "duplicate shortcut": (
        edit(18, '    shortcut: "1"'),
        18,
        "categories[1].shortcut",
        ["shortcut", "twice"],
    ),
    "unknown group": (
        edit(15, "    group: g9"),
        15,
        "categories[1].group",
        ["unknown group", "g9"],
    ),
    "unknown field": (
        edit(14, insert="    colour: red"),
        15,
        "categories[1].colour",
        ["unknown field"],
    ),
    "unknown scope": (
        edit(9, insert="    scope: paragraph"),
        10,
        "categories[0].scope",
        ["unknown scope", "paragraph"],
    ),
    "missing definition": (edit(19), 13, "categories[1].definition", ["required"]),
    "YAML syntax error": (edit(9, "\tkind: singleton"), 9, "(yaml)", ["'\\t'"]),
    "duplicate key": (
        edit(7, insert="    label: Again"),
        8,
        "categories[0].label",
        ["duplicate key"],
    ),
    "unquoted colour (a YAML comment)": (
        edit(17, "    color: #00ff00"),
        17,
        "categories[1].color",
        ["quote"],
    ),
    "empty file": ("", 1, "(file)", ["mapping"]),
    "a list, not a mapping": ("- a\n- b\n", 1, "(file)", ["mapping"]),
    "no categories": ("name: Empty\ncategories: []\n", 2, "categories", ["non-empty"]),
    "missing name": (edit(1, "version: 2"), 1, "name", ["required"]),
}


def test_base_is_valid(tmp_path):
    path = tmp_path / "base.yaml"
    path.write_text(BASE)
    snapshot = load_taxonomy(path)
    assert [(c["id"], c["kind"], c["group"]) for c in snapshot["categories"]] == [
        ("A", "singleton", "g1"),
        ("B", "paired", "g1"),
    ]


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_taxonomy_names_file_line_and_field(tmp_path, case):
    text, line, field, words = MALFORMED[case]
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TaxonomyError) as caught:
        load_taxonomy(path)
    error = caught.value
    prefix = f"{path}:{line}: {field}: "
    assert str(error).startswith(prefix), str(error)
    assert (error.line, error.field) == (line, field)
    assert "\n" not in str(error)
    for word in words:
        assert word.lower() in error.problem.lower(), str(error)


def test_unreadable_file_is_a_taxonomy_error(tmp_path):
    with pytest.raises(TaxonomyError, match="missing.yaml:1: "):
        load_taxonomy(tmp_path / "missing.yaml")


def test_snac_taxonomy():
    snac = load_taxonomy(REPO / "taxonomies" / "snac.yaml")
    categories = {c["id"]: c for c in snac["categories"]}
    assert list(categories) == ["CharE", "RefE", "SceneE", "InconE", "RepE", "GramE", "CorefE"]
    assert {cid for cid, c in categories.items() if c["kind"] == "paired"} == {"InconE", "RepE"}
    assert {cid for cid, c in categories.items() if c["scope"] == "sentence"} == {"SceneE"}
    assert [g["id"] for g in snac["groups"]] == ["coherence", "language"]
    assert {c["group"] for c in categories.values()} == {"coherence", "language"}
    for category in categories.values():
        assert category["definition"] and category["examples"] and category["label"]
    assert len({c["color"] for c in categories.values()}) == 7
    assert len({c["shortcut"] for c in categories.values()}) == 7


def test_falte_demo_and_exteval_taxonomies():
    falte = load_taxonomy(REPO / "taxonomies" / "falte-demo.yaml")
    assert {c["id"]: c["kind"] for c in falte["categories"]} == {
        "Grammar": "singleton",
        "Fluency": "singleton",
        "Repetition": "paired",
        "Contradiction": "paired",
    }
    exteval = load_taxonomy(REPO / "taxonomies" / "exteval.yaml")
    assert len(exteval["categories"]) == 5
    labels = " ".join(c["label"].lower() for c in exteval["categories"])
    for words in (
        "incorrect coreference",
        "incomplete coreference",
        "incorrect discourse",
        "incomplete discourse",
        "misleading",
    ):
        assert words in labels
    for snapshot in (falte, exteval):
        group_ids = {g["id"] for g in snapshot["groups"]}
        assert all(c["group"] in group_ids for c in snapshot["categories"])
        assert len({c["shortcut"] for c in snapshot["categories"]}) == len(snapshot["categories"])


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(MARGINALIA), *args], capture_output=True, text=True, timeout=60, cwd=REPO
    )


def test_cli_taxonomy_check_lists_categories():
    result = run_cli("taxonomy", "check", "taxonomies/snac.yaml")
    assert result.returncode == 0, result.stderr
    assert "7 categories" in result.stdout
    for cid in ("CharE", "RefE", "SceneE", "InconE", "RepE", "GramE", "CorefE"):
        assert cid in result.stdout


def test_cli_taxonomy_check_fails_with_file_line_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(MALFORMED["bad colour"][0])
    result = run_cli("taxonomy", "check", str(path))
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"{path}:17: categories[1].color: bad colour '#00gg00' (use #rgb or #rrggbb)"
    ]


def test_study_keeps_its_taxonomy_snapshot_after_the_file_changes(app, client, tmp_path):
    from app.db import session_scope
    from app.documents.studies import create_study

    copy = tmp_path / "snac.yaml"
    shutil.copy(REPO / "taxonomies" / "snac.yaml", copy)
    make_study(app, taxonomy=str(copy))
    token = client.post(
        "/api/assignments", json={"study": "demo", "document": "doc-1", "worker_id": "w1"}
    ).get_json()["token"]
    before = client.get(f"/api/assignments/{token}").get_json()["taxonomy"]
    old = {c["id"]: c for c in before["categories"]}["InconE"]

    text = copy.read_text()
    assert "label: Inconsistency\n" in text
    copy.write_text(
        text.replace("label: Inconsistency\n", "label: Contradiction\n").replace(
            "kind: paired", "kind: singleton", 1
        )
    )

    with (
        app.app_context(),
        session_scope() as session,
        pytest.raises(InvalidInput, match="already exists with a different taxonomy"),
    ):
        create_study(session, "demo", copy)

    after = client.get(f"/api/assignments/{token}").get_json()["taxonomy"]
    assert after == before
    assert {c["id"]: c for c in after["categories"]}["InconE"] == old
    assert old["label"] == "Inconsistency" and old["kind"] == "paired"
    # The edit was real: a new study made from the file sees it.
    with app.app_context(), session_scope() as session:
        fresh, created = create_study(session, "edited", copy)
        assert created
        labels = {c["id"]: (c["label"], c["kind"]) for c in fresh.taxonomy["categories"]}
    assert labels["InconE"] == ("Contradiction", "singleton")
    # A paired InconE made under the old snapshot is still accepted as paired.
    body = {
        "segment": 1,
        "start": 0,
        "end": 6,
        "text": "Second",
        "category": "InconE",
        "paired": {"segment": 0, "start": 0, "end": 5, "text": "First"},
    }
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
