"""Annotation attributes: what a taxonomy category declares (``attributes:``) and the values
a mark gives them, checked the same way for the API, imports and the adjudicated layer.

A declaration is ``{id, label, kind, required}`` plus ``values`` (kind ``choice``: the
allowed texts) or ``min`` / ``max`` (kind ``scale``: whole numbers, both ends included).
A mark's ``attributes`` is a JSON object ``{id: value}`` naming only attributes declared
by its categories (for a multi-label mark, by any of them); every ``required`` one of each
category must be given. No value is stored as no key (and no attributes as NULL).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from app.documents.numbers import spelt_whole
from app.documents.text import text_problem
from app.errors import InvalidInput

ATTRIBUTE_KINDS = ("choice", "scale")
ATTRIBUTE_FIELDS = {"id", "label", "kind", "values", "min", "max", "required"}
MAX_ATTRIBUTES = 20
MAX_VALUES = 50
MAX_VALUE_CHARS = 200

Fail = Callable[[str, str], Exception]  # (field path, problem) -> the error to raise


def parse_declarations(raw: Any, path: str, fail: Fail, id_ok: Callable[[str], bool]) -> list:
    """A category's ``attributes:`` list checked (errors through ``fail(path, problem)``)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise fail(path, "must be a list of attributes")
    if len(raw) > MAX_ATTRIBUTES:
        raise fail(path, f"has more than {MAX_ATTRIBUTES} attributes")
    out, seen = [], set()
    for i, item in enumerate(raw):
        where = f"{path}[{i}]"
        if not isinstance(item, dict):
            raise fail(where, "must be a mapping with id and kind")
        for key in item:
            if key not in ATTRIBUTE_FIELDS:
                allowed = ", ".join(sorted(ATTRIBUTE_FIELDS))
                raise fail(f"{where}.{key}", f"unknown field (allowed: {allowed})")
        aid = _word(item.get("id"), f"{where}.id", fail)
        if not id_ok(aid):
            raise fail(f"{where}.id", f"{aid!r} is not a valid id (letters, digits, _ . -)")
        if aid in seen:
            raise fail(f"{where}.id", f"duplicate attribute id {aid!r}")
        seen.add(aid)
        kind = item.get("kind")
        if kind not in ATTRIBUTE_KINDS:
            raise fail(f"{where}.kind", f"unknown kind {kind!r} (use choice or scale)")
        required = item.get("required", False)
        if not isinstance(required, bool):
            raise fail(f"{where}.required", "must be true or false")
        label = item.get("label", aid)
        declared: dict[str, Any] = {
            "id": aid,
            "label": _word(label, f"{where}.label", fail),
            "kind": kind,
            "required": required,
        }
        if kind == "choice":
            declared["values"] = _choices(item, where, fail)
        else:
            declared |= _scale(item, where, fail)
        out.append(declared)
    return out


def _word(value: Any, path: str, fail: Fail) -> str:
    if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
        raise fail(path, "is required (non-empty text)")
    text = str(value).strip()
    if len(text) > MAX_VALUE_CHARS:
        raise fail(path, f"is longer than {MAX_VALUE_CHARS} characters")
    problem = text_problem(text)
    if problem:
        raise fail(path, problem)
    return text


def _choices(item: dict, where: str, fail: Fail) -> list[str]:
    if "min" in item or "max" in item:
        raise fail(f"{where}.min", "min and max are for kind scale")
    values = item.get("values")
    if not isinstance(values, list) or not values:
        raise fail(f"{where}.values", "a choice needs a non-empty list of values")
    if len(values) > MAX_VALUES:
        raise fail(f"{where}.values", f"has more than {MAX_VALUES} values")
    texts = [_word(v, f"{where}.values[{i}]", fail) for i, v in enumerate(values)]
    if len(set(texts)) != len(texts):
        raise fail(f"{where}.values", "a value is listed twice")
    return texts


def _scale(item: dict, where: str, fail: Fail) -> dict[str, int]:
    if "values" in item:
        raise fail(f"{where}.values", "values are for kind choice (a scale has min and max)")
    ends = {}
    for end in ("min", "max"):
        value = item.get(end)
        if not isinstance(value, int) or isinstance(value, bool) or abs(value) > 1_000_000:
            raise fail(f"{where}.{end}", "a scale needs whole numbers min and max")
        ends[end] = value
    if ends["min"] >= ends["max"]:
        raise fail(f"{where}.max", "must be greater than min")
    return ends


def declared_for(categories: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Every attribute id the ``categories`` declare, with each declaration of it."""
    out: dict[str, list[dict[str, Any]]] = {}
    for category in categories:
        for declared in category.get("attributes", ()):
            out.setdefault(declared["id"], []).append(declared)
    return out


def check_attributes(
    value: Any, categories: Iterable[Mapping[str, Any]], where: str = ""
) -> dict[str, Any] | None:
    """A mark's ``attributes`` checked against its ``categories``: the object to store (None
    when empty), or InvalidInput naming the attribute and what is wrong."""
    categories = list(categories)
    declared = declared_for(categories)
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{where}attributes must be an object")
    names = ", ".join(c["id"] for c in categories)
    for key, given in value.items():
        if key not in declared:
            known = ", ".join(declared) or "none"
            raise InvalidInput(
                f"{where}attribute {str(key)[:40]!r} is not declared by {names} (declared: {known})"
            )
        for declaration in declared[key]:
            problem = value_problem(declaration, given)
            if problem:
                raise InvalidInput(f"{where}attribute {key!r}: {problem}")
    for category in categories:
        for declaration in category.get("attributes", ()):
            if declaration["required"] and declaration["id"] not in value:
                raise InvalidInput(
                    f"{where}attribute {declaration['id']!r} is required for {category['id']!r}"
                )
    return dict(value) or None


def value_problem(declaration: Mapping[str, Any], value: Any) -> str | None:
    """What makes ``value`` unfit for ``declaration``, or None."""
    if declaration["kind"] == "choice":
        if not isinstance(value, str) or value not in declaration["values"]:
            return f"{str(value)[:40]!r} is not one of {', '.join(declaration['values'])}"
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        return "must be a whole number"
    if not declaration["min"] <= value <= declaration["max"]:
        return f"{str(value)[:40]} is outside {declaration['min']}..{declaration['max']}"
    return None


def attribute_ids(snapshot: Mapping[str, Any]) -> list[str]:
    """Every attribute id of a taxonomy snapshot, in first-declared order (export columns)."""
    return list(declared_for(snapshot["categories"]))


def coerce_attributes(value: Any, categories: Iterable[Mapping[str, Any]]) -> Any:
    """A file's attribute values read as their declarations say (files that store every
    value as text: brat): ``"3"`` for a scale is 3, ``3`` for a choice is ``"3"``."""
    if not isinstance(value, dict):
        return value
    declared = declared_for(categories)
    out = {}
    for key, given in value.items():
        kinds = {d["kind"] for d in declared.get(key, ())}
        if kinds == {"scale"} and isinstance(given, str) and spelt_whole(given) is not None:
            given = spelt_whole(given)  # else left as text, which check_attributes refuses
        elif kinds == {"choice"} and isinstance(given, int) and not isinstance(given, bool):
            given = str(given)
        out[key] = given
    return out
