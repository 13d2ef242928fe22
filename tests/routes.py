"""Every rule of the app as a URL that reaches that rule, for the tests that walk
``app.url_map`` (isolation, anonymous visitors, hostile path values).

Filling every argument with the same string skipped routes silently: ``"csv"`` for an
``<int:row_id>`` matches no rule, so the request was a 404 from the router, never from the
route's access check. Here each argument gets a value its converter accepts (a sample by the
argument's name where the test gives one, else one made for the converter's type), and the
built URL is matched back: it must reach its own rule with the values given, so a new
converter or a sample of the wrong type fails loudly instead of skipping a route.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from flask import Flask
from werkzeug.routing import BaseConverter, Rule
from werkzeug.routing.converters import (
    AnyConverter,
    FloatConverter,
    IntegerConverter,
    PathConverter,
    UnicodeConverter,
    UUIDConverter,
)

TEXT_CONVERTERS = (UnicodeConverter, PathConverter)  # values any text can go in


def converters(rule: Rule) -> dict[str, BaseConverter]:
    """The rule's arguments and their converters, as werkzeug parsed them from the rule."""
    return dict(rule._converters)


def typed_value(converter: BaseConverter) -> Any:
    """A value ``converter`` accepts, for each converter ``app.url_map.converters`` may hold."""
    if isinstance(converter, IntegerConverter):
        return max(1, converter.min or 1)
    if isinstance(converter, FloatConverter):
        return max(1.0, converter.min or 1.0)
    if isinstance(converter, UUIDConverter):
        return uuid.UUID(int=1)
    if isinstance(converter, AnyConverter):
        return sorted(converter.items)[0]
    if isinstance(converter, PathConverter):
        return "sample/path"
    if isinstance(converter, UnicodeConverter):
        return "sample"
    raise LookupError(
        f"no sample value for the converter {type(converter).__name__}: add one to tests/routes.py"
    )


def values_for(rule: Rule, samples: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Each argument's sample by name (``samples``), else a value of its converter's type."""
    samples = samples or {}
    return {
        name: samples[name] if name in samples else typed_value(converter)
        for name, converter in converters(rule).items()
    }


def methods(rule: Rule) -> list[str]:
    """The methods a test sends: HEAD and OPTIONS are werkzeug's, answered for any rule."""
    return sorted((rule.methods or {"GET"}) - {"HEAD", "OPTIONS"})


def url_for_rule(app: Flask, rule: Rule, values: Mapping[str, Any]) -> str:
    """``rule``'s URL with ``values``, asserted to match this very rule, with these values,
    for each of its :func:`methods`."""
    built = rule.build(dict(values), append_unknown=False)
    assert built is not None, f"{rule.rule}: the values {dict(values)!r} do not build it"
    url = built[1]
    adapter = app.url_map.bind("localhost")
    path = unquote(url)  # as the server decodes PATH_INFO before routing it
    for method in methods(rule):
        matched, arguments = adapter.match(path, method=method, return_rule=True)
        assert matched is rule, f"{method} {url} reaches {matched.rule}, not {rule.rule}"
        assert arguments == dict(values), f"{method} {url}: {arguments!r} != {dict(values)!r}"
    return url


def requests(
    app: Flask,
    prefix: str,
    samples: Mapping[str, Any] | None = None,
    *,
    needs: str | None = None,
    skip: tuple[str, ...] = (),
) -> list[tuple[Rule, str, str]]:
    """(rule, method, URL) for every rule under ``prefix`` (with the argument ``needs``, when
    given), except the endpoints in ``skip``, each method but HEAD and OPTIONS."""
    found = []
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith(prefix) or rule.endpoint in skip:
            continue
        if needs is not None and needs not in rule.arguments:
            continue
        url = url_for_rule(app, rule, values_for(rule, samples))
        for method in methods(rule):
            found.append((rule, method, url))
    return found
