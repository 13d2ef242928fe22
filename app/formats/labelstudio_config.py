"""A Label Studio labeling config made from a study's taxonomy (built as XML, escaped).

``<Labels name="label">`` holds one ``<Label>`` per category (value = category id, the
label as its hint; a multi-label mark is one region with several), ``<Relations>`` the
pairing of paired categories (``paired``) and the links of relation categories
(``related``), a per-region ``<TextArea name="comment">`` the comments, and per region a
``<Choices>`` (kind choice) or ``<Number>`` (kind scale) named after each attribute: the
names the export's results use.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

LABELS_NAME = "label"
TEXT_NAME = "text"
COMMENT_NAME = "comment"
RELATION_LABEL = "paired"
RELATED = "related"  # a relation category's link: from the marked span to the other, any order
# per-region attribute results: their type and the key of their value
ATTRIBUTE_RESULTS = {"choices": "choices", "number": "number", "rating": "rating"}


def labeling_config(taxonomy: dict[str, Any]) -> str:
    """The ``<View>`` XML of the labeling config for ``taxonomy``."""
    view = ET.Element("View")
    labels = ET.SubElement(view, "Labels", name=LABELS_NAME, toName=TEXT_NAME)
    for category in taxonomy["categories"]:
        ET.SubElement(
            labels,
            "Label",
            value=category["id"],
            background=category.get("color") or "#7f7f7f",
            hint=category.get("label") or category["id"],
        )
    ET.SubElement(view, "Text", name=TEXT_NAME, value="$text")
    relations = ET.SubElement(view, "Relations")
    ET.SubElement(relations, "Relation", value=RELATION_LABEL)
    ET.SubElement(relations, "Relation", value=RELATED)
    ET.SubElement(
        view,
        "TextArea",
        name=COMMENT_NAME,
        toName=TEXT_NAME,
        perRegion="true",
        editable="true",
        placeholder="Comment",
    )
    declared: dict[str, dict[str, Any]] = {}
    for category in taxonomy["categories"]:
        for attribute in category.get("attributes", ()):
            declared.setdefault(attribute["id"], attribute)
    for attribute in declared.values():  # per region, shown when a region is selected
        common = {"name": attribute["id"], "toName": TEXT_NAME, "perRegion": "true"}
        if attribute["kind"] == "choice":
            choices = ET.SubElement(view, "Choices", **common, choice="single")
            for value in attribute["values"]:
                ET.SubElement(choices, "Choice", value=value)
        else:
            ET.SubElement(
                view, "Number", **common, min=str(attribute["min"]), max=str(attribute["max"])
            )
    ET.indent(view)
    return ET.tostring(view, encoding="unicode") + "\n"
