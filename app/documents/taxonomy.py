"""Error taxonomies in YAML: loading, schema checks with file/line/field messages, snapshots.

A study stores the *normalised snapshot* returned by :func:`load_taxonomy`, never a path,
so editing a YAML file later cannot change what existing annotations mean.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from app.documents.attributes import parse_declarations
from app.documents.text import text_problem
from app.errors import InvalidInput

# relation: a mark may be linked to a second span anywhere in the document, before or after
# it, overlapping or even the same (BooookScore's relations); the link is optional.
KINDS = ("singleton", "paired", "relation")
SCOPES = ("span", "sentence")
CATEGORY_FIELDS = {
    "id",
    "label",
    "group",
    "kind",
    "scope",
    "definition",
    "examples",
    "color",
    "shortcut",
    "detector_label",
    "paired_prompt",
    "pair_across_segments",
    "attributes",
}
GROUP_FIELDS = {"id", "label", "description"}
TOP_FIELDS = {
    "name",
    "version",
    "description",
    "instructions",
    "groups",
    "categories",
    "multi_label",
}
ID_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,99}$")
COLOR_PATTERN = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
PALETTE = (
    "#d62728",
    "#1f77b4",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
)
SHORTCUTS = "123456789abcdefghijklmnopqrstuvwxyz"
MAX_TAXONOMY_BYTES = 256 * 1024
MAX_CATEGORIES = 200
MAX_GROUPS = 100
MAX_EXAMPLES = 50
MAX_DEPTH = 20
MAX_NAME_CHARS = 200  # studies.taxonomy_name
MAX_LABEL_CHARS = 200
MAX_TEXT_CHARS = 20_000


class TaxonomyError(InvalidInput):
    """A taxonomy file is invalid: ``FILE:LINE: field: what is wrong``."""

    def __init__(self, source: str, line: int, field: str, problem: str):
        self.source, self.line, self.field, self.problem = source, line, field, problem
        super().__init__(f"{source}:{line}: {field}: {problem}")


@dataclass(frozen=True)
class _Located:
    """Line numbers of every key and list item, keyed by dotted field path."""

    source: str
    lines: dict[str, int]

    def line(self, path: str) -> int:
        while path and path not in self.lines:
            path = path.rsplit(".", 1)[0] if "." in path else ""
        return self.lines.get(path, 1)

    def fail(self, path: str, problem: str) -> TaxonomyError:
        return TaxonomyError(self.source, self.line(path), path or "(file)", problem)


def _index_lines(root: yaml.Node, lines: dict[str, int], source: str) -> None:
    """Record the line of each mapping key and sequence item; reject duplicate keys.

    Iterative and linear in the number of nodes (aliases are refused before this runs).
    """
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = str(key_node.value)
                child = f"{path}.{key}" if path else key
                if key in seen:
                    raise TaxonomyError(
                        source, key_node.start_mark.line + 1, child, "duplicate key"
                    )
                seen.add(key)
                lines[child] = key_node.start_mark.line + 1
                stack.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                child = f"{path}[{i}]"
                lines[child] = item.start_mark.line + 1
                stack.append((item, child))


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader refusing anchors and aliases (no expansion ever happens) and nesting
    deeper than MAX_DEPTH (no RecursionError), before the node is composed."""

    source = "<taxonomy>"
    depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        line = event.start_mark.line + 1 if event.start_mark else 1
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise TaxonomyError(
                self.source, line, "(yaml)", "anchors and aliases (& and *) are not allowed"
            )
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise TaxonomyError(
                self.source, line, "(yaml)", f"is nested deeper than {MAX_DEPTH} levels"
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _yaml_problem(exc: yaml.YAMLError, text: str) -> tuple[int, str]:
    """The line and a one-line description of a YAML syntax error."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = str(exc.problem or exc.context or "invalid YAML")
        return (mark.line + 1 if mark else 1), " ".join(problem.split())
    if isinstance(exc, yaml.reader.ReaderError):
        line = text[: exc.position].count("\n") + 1
        return line, f"unacceptable character U+{exc.character:04X} (control character)"
    return 1, " ".join(str(exc).split())


def _parse(text: str, source: str) -> tuple[Any, _Located]:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_TAXONOMY_BYTES:
        raise TaxonomyError(
            source, 1, "(file)", f"is larger than {MAX_TAXONOMY_BYTES // 1024} KB ({size} bytes)"
        )
    loader = None
    try:
        loader = _StrictLoader(text)
        loader.source = source
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        line, problem = _yaml_problem(exc, text)
        raise TaxonomyError(source, line, "(yaml)", problem) from None
    finally:
        if loader is not None:
            loader.dispose()
    lines: dict[str, int] = {}
    if node is not None:
        _index_lines(node, lines, source)
    return data, _Located(source, lines)


def _text(
    value: Any,
    loc: _Located,
    path: str,
    *,
    required: bool,
    default: str = "",
    limit: int = MAX_TEXT_CHARS,
) -> str:
    if value is None:
        if required:
            raise loc.fail(path, "is required")
        return default
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise loc.fail(path, "must be text")
    text = str(value).strip()
    if required and not text:
        raise loc.fail(path, "must not be empty")
    if len(text) > limit:
        raise loc.fail(path, f"is longer than {limit} characters")
    problem = text_problem(text)
    if problem:
        raise loc.fail(path, problem)
    return text


def _id(value: Any, loc: _Located, path: str, *, limit: int = MAX_TEXT_CHARS) -> str:
    """An id (of a group, a category, a question): required text matching ``ID_PATTERN``,
    the one rule for ids that exports, keys and URLs carry."""
    ident = _text(value, loc, path, required=True, limit=limit)
    if not ID_PATTERN.match(ident):
        raise loc.fail(path, f"{ident!r} is not a valid id (letters, digits, _ . -)")
    return ident


def _check_unknown(mapping: dict, allowed: set[str], loc: _Located, path: str) -> None:
    for key in mapping:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise loc.fail(where, f"unknown field (allowed: {', '.join(sorted(allowed))})")


def _groups(raw: Any, loc: _Located) -> list[dict[str, str]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise loc.fail("groups", "must be a list of groups")
    if len(raw) > MAX_GROUPS:
        raise loc.fail("groups", f"has more than {MAX_GROUPS} groups")
    groups, seen = [], set()
    for i, item in enumerate(raw):
        path = f"groups[{i}]"
        if not isinstance(item, dict):
            raise loc.fail(path, "must be a mapping with id and label")
        _check_unknown(item, GROUP_FIELDS, loc, path)
        gid = _id(item.get("id"), loc, f"{path}.id")
        if gid in seen:
            raise loc.fail(f"{path}.id", f"duplicate group id {gid!r}")
        seen.add(gid)
        groups.append(
            {
                "id": gid,
                "label": _text(
                    item.get("label"), loc, f"{path}.label", required=True, limit=MAX_LABEL_CHARS
                ),
                "description": _text(
                    item.get("description"), loc, f"{path}.description", required=False
                ),
            }
        )
    return groups


def _examples(raw: Any, loc: _Located, path: str) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        raise loc.fail(path, "must be a list of example texts")
    if len(raw) > MAX_EXAMPLES:
        raise loc.fail(path, f"has more than {MAX_EXAMPLES} examples")
    return [_text(item, loc, f"{path}[{i}]", required=True) for i, item in enumerate(raw)]


def _category(item: Any, i: int, loc: _Located, group_ids: set[str]) -> dict[str, Any]:
    path = f"categories[{i}]"
    if not isinstance(item, dict):
        raise loc.fail(path, "must be a mapping with id, label, kind and definition")
    _check_unknown(item, CATEGORY_FIELDS, loc, path)
    cid = _id(item.get("id"), loc, f"{path}.id")
    kind = _text(item.get("kind"), loc, f"{path}.kind", required=False, default="singleton")
    if kind not in KINDS:
        raise loc.fail(f"{path}.kind", f"unknown kind {kind!r} (use singleton, paired or relation)")
    scope = _text(item.get("scope"), loc, f"{path}.scope", required=False, default="span")
    if scope not in SCOPES:
        raise loc.fail(f"{path}.scope", f"unknown scope {scope!r} (use span or sentence)")
    group = _text(item.get("group"), loc, f"{path}.group", required=False)
    if group and group_ids and group not in group_ids:
        raise loc.fail(f"{path}.group", f"unknown group {group!r}")
    if "color" in item and item["color"] is None:
        # `color: #ff0000` unquoted is a YAML comment: the colour would silently vanish.
        raise loc.fail(f"{path}.color", 'is empty; quote the colour: color: "#ff0000"')
    color = _text(item.get("color"), loc, f"{path}.color", required=False)
    if color and not COLOR_PATTERN.match(color):
        raise loc.fail(f"{path}.color", f"bad colour {color!r} (use #rgb or #rrggbb)")
    across = item.get("pair_across_segments", False)
    if not isinstance(across, bool):
        raise loc.fail(f"{path}.pair_across_segments", "must be true or false")
    shortcut = _text(item.get("shortcut"), loc, f"{path}.shortcut", required=False).lower()
    if shortcut and (len(shortcut) != 1 or shortcut not in SHORTCUTS):
        raise loc.fail(f"{path}.shortcut", f"bad shortcut {shortcut!r} (one letter or digit)")
    category = {
        "id": cid,
        "label": _text(
            item.get("label"), loc, f"{path}.label", required=True, limit=MAX_LABEL_CHARS
        ),
        "group": group,
        "kind": kind,
        "scope": scope,
        "definition": _text(item.get("definition"), loc, f"{path}.definition", required=True),
        "examples": _examples(item.get("examples"), loc, f"{path}.examples"),
        "color": color,
        "shortcut": shortcut,
        "detector_label": _text(
            item.get("detector_label"), loc, f"{path}.detector_label", required=False
        )
        or None,
        "paired_prompt": _text(
            item.get("paired_prompt"),
            loc,
            f"{path}.paired_prompt",
            required=False,
            default="Now select the earlier span it relates to."
            if kind != "relation"
            else "Optionally select the other span it relates to (anywhere in the text).",
        ),
    }
    if across and kind == "paired":  # only when set: other taxonomies' snapshots stay as they were
        category["pair_across_segments"] = True
    attributes = parse_declarations(
        item.get("attributes"), f"{path}.attributes", loc.fail, lambda a: bool(ID_PATTERN.match(a))
    )
    if attributes:  # likewise only when declared
        category["attributes"] = attributes
    return category


def _fill_defaults(categories: list[dict[str, Any]], loc: _Located) -> None:
    """Give each category a distinct colour and shortcut unless the file set one."""
    ids, shortcuts = set(), set()
    for i, cat in enumerate(categories):
        if cat["id"] in ids:
            raise loc.fail(f"categories[{i}].id", f"duplicate category id {cat['id']!r}")
        ids.add(cat["id"])
        if cat["shortcut"]:
            if cat["shortcut"] in shortcuts:
                raise loc.fail(
                    f"categories[{i}].shortcut", f"shortcut {cat['shortcut']!r} is used twice"
                )
            shortcuts.add(cat["shortcut"])
    free = (key for key in SHORTCUTS if key not in shortcuts)
    for i, cat in enumerate(categories):
        cat["color"] = cat["color"] or PALETTE[i % len(PALETTE)]
        if not cat["shortcut"]:
            cat["shortcut"] = next(free, "")


def parse_taxonomy(text: str, source: str = "<taxonomy>") -> dict[str, Any]:
    """Validate taxonomy YAML text and return its normalised snapshot."""
    data, loc = _parse(text, source)
    if not isinstance(data, dict):
        raise loc.fail("", "a taxonomy must be a mapping with name and categories")
    _check_unknown(data, TOP_FIELDS, loc, "")
    name = _text(data.get("name"), loc, "name", required=True, limit=MAX_NAME_CHARS)
    groups = _groups(data.get("groups"), loc)
    raw_categories = data.get("categories")
    if not isinstance(raw_categories, list) or not raw_categories:
        raise loc.fail("categories", "must be a non-empty list of categories")
    if len(raw_categories) > MAX_CATEGORIES:
        raise loc.fail("categories", f"has more than {MAX_CATEGORIES} categories")
    group_ids = {g["id"] for g in groups}
    categories = [_category(item, i, loc, group_ids) for i, item in enumerate(raw_categories)]
    _fill_defaults(categories, loc)
    multi_label = data.get("multi_label", False)
    if not isinstance(multi_label, bool):
        raise loc.fail("multi_label", "must be true or false")
    snapshot = {
        "name": name,
        "version": _text(data.get("version"), loc, "version", required=False, default="1"),
        "description": _text(data.get("description"), loc, "description", required=False),
        "instructions": _text(data.get("instructions"), loc, "instructions", required=False),
        "groups": groups,
        "categories": categories,
    }
    if multi_label:  # one mark may carry several categories (docs/METRICS.md)
        snapshot["multi_label"] = True
    return snapshot


def load_taxonomy(path: str | Path) -> dict[str, Any]:
    """Read and validate a taxonomy file; errors name the file, line and field."""
    path = Path(path)
    try:
        with path.open("rb") as file:  # at most one byte over the limit, also from a pipe
            data = file.read(MAX_TAXONOMY_BYTES + 1)
        if len(data) > MAX_TAXONOMY_BYTES:
            raise TaxonomyError(
                str(path), 1, "(file)", f"is larger than {MAX_TAXONOMY_BYTES // 1024} KB"
            )
        text = data.decode("utf-8")
    except OSError as exc:
        raise TaxonomyError(str(path), 1, "(file)", f"cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise TaxonomyError(str(path), 1, "(file)", "is not UTF-8 text") from exc
    return parse_taxonomy(text, str(path))


def taxonomy_hash(snapshot: dict[str, Any]) -> str:
    """A stable fingerprint of a snapshot (sorted-key JSON, SHA-256)."""
    canonical = json.dumps(snapshot, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def categories_by_id(snapshot: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {cat["id"]: cat for cat in snapshot["categories"]}
