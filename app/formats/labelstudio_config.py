"""A Label Studio labeling config made from a study's taxonomy (built as XML, escaped).

``<Labels name="label">`` holds one ``<Label>`` per category (value = category id, the
label as its hint), ``<Relations>`` the pairing of paired categories and a per-region
``<TextArea name="comment">`` the comments: the names the export's results use.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

LABELS_NAME = "label"
TEXT_NAME = "text"
COMMENT_NAME = "comment"
RELATION_LABEL = "paired"


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
    ET.SubElement(
        view,
        "TextArea",
        name=COMMENT_NAME,
        toName=TEXT_NAME,
        perRegion="true",
        editable="true",
        placeholder="Comment",
    )
    ET.indent(view)
    return ET.tostring(view, encoding="unicode") + "\n"
