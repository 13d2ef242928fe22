"""The Compare page: a study's systems (document sources) compared with 95% intervals and
pairwise tests (:mod:`app.quality.compare`, docs/METRICS.md "Comparing systems").

The computation runs in the request, bounded: the page and its JSON use
:data:`WEB_RESAMPLES` resamples (the command line's default is 9,999), and the page leaves
out the pairs' per-category tests it does not show. On SNaC dev that is about 0.5 s, on 600
documents about 4 s on the shared 2-core box (docs/PERFORMANCE.md, "The study's figures"): no
longer than the dashboard's own report of the same study. ``marginalia compare`` gives the
full computation. The figure is
matplotlib's SVG shown as an ``<img>`` from a ``data:`` URL: an image cannot run script, and
matplotlib's inline styles, which the admin CSP forbids in the page itself, apply inside it.
"""

from __future__ import annotations

import base64
from typing import Any

from flask import jsonify, render_template, request

from app.documents.numbers import whole_number
from app.errors import InvalidInput
from app.models import Study
from app.quality.compare_text import as_figure, ci_parts, describe, p_value, system_name
from app.researchers import accounts as auth
from app.web.admin.blueprint import bp, session_and_study

WEB_RESAMPLES = 2_000


def _options(study: Study) -> dict[str, Any]:
    """layer, min_workers and include_practice from the query string; InvalidInput if bad."""
    layer = request.args.get("layer", "workers")
    if layer not in ("workers", "adjudicated"):
        raise InvalidInput("layer must be workers or adjudicated")
    raw = (request.args.get("min_workers") or "").strip()
    min_workers = None
    if raw and layer == "workers":
        min_workers = whole_number(raw, "K (workers who marked an error)", 1, 1000)
    return {
        "layer": layer,
        "min_workers": min_workers,
        "include_practice": request.args.get("include_practice") == "1",
    }


def _rows(result: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The tables' cells as (value, interval) pairs, formatted as the command line's text."""
    systems = [
        {
            "system": system_name(row["system"]),
            "documents": row["documents"],
            "sentences": row["sentences"],
            "words": row["words"],
            "errors": row["errors"],
            "figures": [
                ci_parts(row["errors_per_100_words"]),
                ci_parts(row["errors_per_sentence"], 3),
                ci_parts(row["clean_sentence_share"], 1, "%"),
            ],
            "categories": [
                ci_parts(row["per_category"][cat]["errors_per_100_words"])
                for cat in result["categories"]
            ],
        }
        for row in result["systems"]
    ]
    pairs = []
    for pair in result["pairs"]:
        clean = pair["clean_sentence_share"]
        pairs.append(
            {
                "a": system_name(pair["a"]),
                "b": system_name(pair["b"]),
                "cells": [
                    (*ci_parts(as_figure(pair)), p_value(pair["p"]), p_value(pair["p_holm"])),
                    (
                        *ci_parts(as_figure(clean), 1, " pp"),
                        p_value(clean["p"]),
                        p_value(clean["p_holm"]),
                    ),
                ],
            }
        )
    return {"systems": systems, "pairs": pairs}


@bp.get("/studies/<slug>/compare")
@auth.login_required
def compare_page(slug: str):
    # SciPy and matplotlib (~110 MB) are loaded by the first comparison, not by every process.
    from app.quality.compare import compare_systems, default_min_workers
    from app.quality.compare_plot import figure_bytes

    db, study = session_and_study(slug)
    categories = (study.taxonomy or {}).get("categories", [])
    labels = {c["id"]: c["label"] for c in categories}
    error, result, figure = None, None, None
    try:
        options = _options(study)
        result = compare_systems(
            db, study, resamples=WEB_RESAMPLES, category_pairs=False, **options
        )
    except InvalidInput as exc:
        error, options = str(exc), {"layer": "workers", "min_workers": None}
    if result is not None and result["systems"]:
        svg = figure_bytes(result, "svg", labels)
        figure = "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")
    body = render_template(
        "admin/compare.html",
        study=study,
        result=result,
        rows=_rows(result) if result else None,
        description=describe(result) if result else "",
        labels=labels,
        figure=figure,
        options=options,
        default_k=default_min_workers(study),
        resamples=WEB_RESAMPLES,
        error=error,
    )
    return body, 400 if error else 200


@bp.get("/studies/<slug>/compare.json")
@auth.login_required
def compare_json(slug: str):
    from app.quality.compare import compare_systems

    db, study = session_and_study(slug)
    return jsonify(compare_systems(db, study, resamples=WEB_RESAMPLES, **_options(study)))
