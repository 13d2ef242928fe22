"""A Thresh typology template (``edits:`` with ``name``, ``label``, ``color``, nested
``children``) turned into our taxonomy YAML, checked by the same validator as any taxonomy.

Each edit type becomes a category (id = ``name``; children flattened, grouped under their
parent); ``type: composite`` edits (spans in several places) become ``paired``, the rest
``singleton``; CSS colour names become hex. Thresh has no definitions: the template's label
(and description, if any) stands in. The questions under ``annotation`` with fixed answers
(named options, ``likert-3``, ``binary``) become choice attributes, an option asking a
further question one more attribute named after it (MQM: ``fluency_type`` = ``grammar``,
``grammar`` = ``somewhat``); free-text questions and ``enable_input`` (spans in the
source) have no counterpart and are left out.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from app.documents.attributes import MAX_ATTRIBUTES
from app.documents.taxonomy import ID_PATTERN, parse_taxonomy
from app.errors import InvalidInput

# Thresh's answer presets (its Question.vue): likert-3 is MQM's severity
PRESETS = {"likert-3": ["minor", "somewhat", "a lot"], "binary": ["yes", "no"]}
CSS_COLOURS = {
    "black": "#000000",
    "blue": "#1f77b4",
    "brown": "#8c564b",
    "cyan": "#17becf",
    "gray": "#7f7f7f",
    "green": "#2ca02c",
    "grey": "#7f7f7f",
    "indigo": "#4b0082",
    "lime": "#bcbd22",
    "magenta": "#e377c2",
    "orange": "#ff7f0e",
    "pink": "#e377c2",
    "purple": "#9467bd",
    "red": "#d62728",
    "teal": "#008080",
    "yellow": "#ffd700",
}
HEX = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")


def _colour(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value if HEX.match(value) else CSS_COLOURS.get(value.lower())


def _one_line(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else ""


def _categories(
    edits: Any,
    source: str,
    group: str | None,
    out: list[dict[str, Any]],
    groups: list[dict[str, str]],
) -> None:
    if not isinstance(edits, list):
        raise InvalidInput(f"{source}: edits: must be a list of edit types")
    for i, edit in enumerate(edits):
        if not isinstance(edit, dict) or not isinstance(edit.get("name"), str):
            raise InvalidInput(f"{source}: edits[{i}]: needs a name")
        name = edit["name"].strip()
        if not ID_PATTERN.match(name):
            raise InvalidInput(
                f"{source}: edits[{i}].name: {name!r} is not a valid id (letters, digits, _ . -)"
            )
        label = _one_line(edit.get("label")) or name
        if edit.get("children"):
            groups.append({"id": name, "label": label})
            _categories(edit["children"], source, name, out, groups)
            continue
        category: dict[str, Any] = {
            "id": name,
            "label": label,
            "kind": "paired" if edit.get("type") == "composite" else "singleton",
            "definition": _one_line(edit.get("description")) or label,
        }
        if group:
            category["group"] = group
        colour = _colour(edit.get("color"))
        if colour:
            category["color"] = colour
        attributes = _attributes(edit.get("annotation"), f"{source}: edits[{i}].annotation")
        if attributes:
            category["attributes"] = attributes
        out.append(category)


def _answers(options: Any) -> list[str] | None:
    """The answers a Thresh question offers: its named options, or a preset's values."""
    if isinstance(options, str):
        return PRESETS.get(options)
    if isinstance(options, list) and all(isinstance(o, dict) and o.get("name") for o in options):
        return [str(o["name"]) for o in options]
    return None


def _attributes(questions: Any, where: str) -> list[dict[str, Any]]:
    """A Thresh edit's ``annotation`` questions as attributes (choice): each question, and
    each option that asks a further question (MQM's severity under its subtype), named
    after the option: the shape :func:`app.formats.thresh.annotation_attributes` reads."""
    if not isinstance(questions, list):
        return []
    out: dict[str, dict[str, Any]] = {}

    def add(name: Any, label: Any, values: list[str] | None) -> None:
        if isinstance(name, str) and ID_PATTERN.match(name) and values and name not in out:
            out[name] = {"id": name, "label": _one_line(label) or name, "kind": "choice"}
            out[name]["values"] = list(values)  # a copy: YAML would write an alias

    for question in questions:
        if not isinstance(question, dict):
            continue
        add(question.get("name"), question.get("question"), _answers(question.get("options")))
        for option in question.get("options") if isinstance(question.get("options"), list) else []:
            if isinstance(option, dict):
                asks = option.get("question") or option.get("questions")
                add(option.get("name"), asks, _answers(option.get("options")))
    if len(out) > MAX_ATTRIBUTES:
        raise InvalidInput(f"{where}: more than {MAX_ATTRIBUTES} questions")
    return list(out.values())


def taxonomy_from_template(text: str, source: str = "<template>") -> dict[str, Any]:
    """Our taxonomy (as a plain dict, ready for YAML) from a Thresh template's text."""
    try:
        template = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{source}: not YAML: {_one_line(exc)}") from None
    if not isinstance(template, dict) or "edits" not in template:
        raise InvalidInput(f"{source}: a Thresh template needs an edits: list")
    categories: list[dict[str, Any]] = []
    groups: list[dict[str, str]] = []
    _categories(template["edits"], source, None, categories, groups)
    if not categories:
        raise InvalidInput(f"{source}: edits: lists no edit types")
    name = _one_line(template.get("template_label") or template.get("template_name")) or "Thresh"
    taxonomy: dict[str, Any] = {"name": name, "version": 1}
    if template.get("template_description"):
        taxonomy["description"] = _one_line(template["template_description"])
    if groups:
        taxonomy["groups"] = groups
    taxonomy["categories"] = categories
    return taxonomy


def template_to_yaml(path: str | Path) -> str:
    """The taxonomy YAML text for a Thresh template file, validated."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{path}: is not UTF-8 text") from None
    taxonomy = taxonomy_from_template(text, str(path))
    header = f"# Made by `marginalia taxonomy from-thresh` from {path.name}.\n"
    result = header + yaml.safe_dump(taxonomy, sort_keys=False, allow_unicode=True, width=100)
    parse_taxonomy(result, f"{path} (converted)")
    return result
