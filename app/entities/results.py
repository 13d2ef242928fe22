"""What ``find_entities`` returns: a document's entities and their mentions."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FoundEntity:
    """One entity of a document: ``name`` is its fullest form, ``first_segment`` where it first appears."""

    key: str
    name: str
    label: str
    first_segment: int


@dataclass(frozen=True)
class FoundMention:
    """Where an entity is named: ``text[start:end]`` of segment ``segment``."""

    entity: str
    segment: int
    start: int
    end: int
    label: str


@dataclass
class DocumentEntities:
    """The entities of one document and their mentions, in reading order."""

    entities: list[FoundEntity] = field(default_factory=list)
    mentions: list[FoundMention] = field(default_factory=list)
