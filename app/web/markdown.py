"""Researcher-written Markdown (instructions, consent) rendered safely for worker pages.

markdown-it-py with the ``js-default`` preset: raw HTML in the source is escaped, never
passed through; link targets are checked by its ``validateLink`` (no ``javascript:``,
``vbscript:``, ``file:`` or ``data:``); images are off (a worker page loads nothing from
elsewhere, and the CSP would refuse them anyway). Links open in a new tab without the opener.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markupsafe import Markup

MAX_MARKDOWN_CHARS = 20_000

_renderer = MarkdownIt("js-default").disable("image")


def _link_open(renderer, tokens, idx, options, env):  # type: ignore[no-untyped-def]
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    tokens[idx].attrSet("target", "_blank")
    return renderer.renderToken(tokens, idx, options, env)


_renderer.add_render_rule("link_open", _link_open)


def render_markdown(text: str | None) -> Markup:
    """HTML for ``text``; every character of the source that could be markup is escaped."""
    if not text:
        return Markup("")
    return Markup(_renderer.render(text[:MAX_MARKDOWN_CHARS]))  # noqa: S704 (escaped above)
