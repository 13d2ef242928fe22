"""The work that counts is read once (app/rules/work.py): no other module decides by an
assignment's status, a document's practice flag or an annotation's removal which work is
study data. A scan of ``app/`` with ``ast`` finds every such comparison, in SQL
(``Assignment.status == …``, ``.in_(…)``, ``Document.is_practice.is_(…)``,
``Annotation.removed_at.is_(None)``) or in Python on rows already read (``a.status ==
"submitted"``, ``status in ("active", "submitted")``), and whether a gold document is the
training phase (a call to ``training``, ``has_pass_mark`` or ``qualification``; ``row.is_gold
and …``); a module outside the allow-list below fails the test with the line. The modules allowed are those whose job is the
assignment's lifecycle itself (what a worker may do next, not what the study's figures
count), each named with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATUSES = {"submitted", "active", "rejected", "screened_out", "abandoned", "returned"}
COUNTING = {"submitted", "active"}  # what counts, and the work in hand
FILTERS = {"in_", "not_in", "notin_", "is_", "is_not", "isnot", "__eq__", "__ne__"}
# whether a study's gold documents are its training phase: asking it is deciding what counts
TRAINING_TESTS = {"training", "has_pass_mark", "qualification"}

ALLOWED = {
    "app/rules/work.py": "the one reader of the counted work",
    "app/annotation/": "the worker's actions and the assignment's lifecycle (the policy, the "
    "rules of open, add and submit on live assignments and marks, practice feedback, the "
    "qualification's attempts, the pause rule, reviews' reject and approve): what a worker "
    "may do next, never what a figure counts",
    "app/annotation/assignment_scores.py": "one assignment scored at its own submit",
    "app/models/changes.py": "the change log: an active assignment's marks are not yet work",
    "app/documents/journey.py": "the questionnaire after a worker's own submit",
    "app/documents/lifecycle.py": "a document may be removed only while nobody worked on it",
    "app/web/pages.py": "the worker's pages: which page an assignment's status shows",
    "app/llm/annotate.py": "an LLM annotator's own run: whether its assignment is still open",
    "app/llm/annotators.py": "an LLM annotator's own run: how many documents it has submitted",
    "app/web/admin/workers.py": "a worker's page: their qualification attempts and own marks",
    "app/web/admin/lifecycle.py": "the Manage page: removable documents and the preview's first",
}


def _names(node: ast.AST) -> list[str]:
    """The dotted name of an attribute chain (``Assignment.status`` → Assignment, status)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return parts[::-1]


def _is_status_constant(node: ast.AST, statuses: set[str] = COUNTING) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in statuses
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_is_status_constant(e, statuses) for e in node.elts)
    return False


def _decides(node: ast.AST) -> bool:
    """Whether ``node`` filters by status, practice or removal: the training phase included,
    asked in SQL or in Python (a call to the pass-mark test, or ``… is_gold and …``)."""
    if isinstance(node, ast.Call) and _names(node.func)[-1:] in [[n] for n in TRAINING_TESTS]:
        return True
    if isinstance(node, ast.BoolOp) and any(_names(v)[-1:] == ["is_gold"] for v in node.values):
        return True
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        if any(_is_status_constant(side) for side in sides):
            return True
        for side in sides:
            names = _names(side)
            if names[-2:] in (["Assignment", "status"], ["Document", "is_practice"]):
                return True
            if names[-1:] == ["status"] and any(_is_status_constant(o, STATUSES) for o in sides):
                return True
            if names[-1:] == ["removed_at"]:
                return True
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in FILTERS
    ):
        names = _names(node.func.value)
        if names[-2:] in (["Assignment", "status"], ["Document", "is_practice"]):
            return True
        if names[-1:] == ["removed_at"]:
            return True
        if any(_is_status_constant(arg) for arg in node.args):
            return True
    return False


def test_only_the_allowed_modules_decide_what_counts():
    found = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if any(
            name == allowed or name.startswith(allowed.rstrip("/") + "/") for allowed in ALLOWED
        ):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=name)
        for node in ast.walk(tree):
            if _decides(node):
                found.append(f"{name}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert not found, "read the counted work through app/rules/work.py:\n" + "\n".join(found)


def test_the_allow_list_names_modules_that_exist_and_still_need_it():
    for name, reason in ALLOWED.items():
        path = ROOT / name
        files = sorted(path.rglob("*.py")) if name.endswith("/") else [path]
        assert files and all(f.is_file() for f in files), name
        assert reason.strip(), name
        trees = [ast.parse(f.read_text(encoding="utf-8"), filename=str(f)) for f in files]
        needed = any(_decides(node) for tree in trees for node in ast.walk(tree))
        assert needed, f"{name} no longer needs it"


def test_the_scan_finds_what_it_is_for():
    """Each kind of filter the reviewer found outside work.py is caught, the Python skip of
    training documents pay and the bonuses once kept behind the counted-work rule among
    them."""
    samples = [
        'select(Annotation).where(Assignment.status == "submitted")',
        'query.where(Assignment.status.in_(("submitted", "rejected")))',
        "query.where(Document.is_practice.is_(False))",
        "query.where(Annotation.removed_at.is_(None))",
        'done = [a for a in rows if a.status == "submitted"]',
        'ok = status in ("active", "submitted")',
        "real = [s for r in rows if not (r.is_gold and in_training)]",
        "in_training = training(study)",
        "query.where(~is_practice([study])) if has_pass_mark(study) else query",
    ]
    for sample in samples:
        assert any(_decides(node) for node in ast.walk(ast.parse(sample))), sample
    for harmless in ("select(Assignment.status, func.count())", 'counts.pop("submitted", 0)'):
        assert not any(_decides(node) for node in ast.walk(ast.parse(harmless))), harmless
