"""Rules backend (spaCy, no weights).

- character (CharE): the first mention of a person name none of whose name words appeared
  in the context;
- event (RefE): a definite or possessive noun phrase (or a pronoun with no earlier person
  at all) whose head word never appeared in the context;
- scene (SceneE): a segment's first sentence with little entity/topic continuity with the
  text just before it, or one opening on a scene-shift phrase ("Meanwhile", "At the ...").

Thresholds in :class:`RulesConfig` were tuned on SNaC train (``bench/detector_quality.py
--tune-rules``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from model_server.features import SentenceCandidates, analyse, parse_inputs
from model_server.interface import DetectionInput, RawSuggestion, as_inputs

NAME = "rules"
VERSION = "1"


@dataclass(frozen=True)
class RulesConfig:
    """Tunable thresholds of the rules."""

    char_include_propn: bool = True
    char_include_other_ents: bool = True
    char_require_all_new: bool = True
    char_skip_appositive: bool = True
    ref_kinds: tuple[str, ...] = ("definite", "possessive")
    ref_skip_generic: bool = True
    ref_min_tokens: int = 2
    ref_min_new_nps: int = 1
    scene_max_continuity: float = 0.75
    scene_only_segment_openers: bool = True
    scene_use_openers: bool = True


def decide(sc: SentenceCandidates, cfg: RulesConfig) -> list[tuple[str, int, int, float]]:
    """Apply the rules to one sentence's candidates: (label, start, end, score)."""
    out: list[tuple[str, int, int, float]] = []
    refs = []
    for cand in sc.candidates:
        f = cand.feats
        if cand.label == "character":
            if f["is_other_ent"] and not cfg.char_include_other_ents:
                continue
            if f["is_propn"] and not cfg.char_include_propn:
                continue
            new = f["all_new"] if cfg.char_require_all_new else f["any_new"]
            if not new or (cfg.char_skip_appositive and f["appos"]):
                continue
            out.append(("character", cand.start, cand.end, 0.9 if f["is_person"] else 0.6))
        elif cand.label == "event":
            kind = "pronoun" if f["pronoun"] else "definite" if f["definite"] else "possessive"
            if kind not in cfg.ref_kinds:
                continue
            if kind == "pronoun":
                if f["no_person_ctx"] and not f["ctx_empty"]:
                    refs.append(("event", cand.start, cand.end, 0.5))
                continue
            if not f["head_new"] or f["n_tokens"] < cfg.ref_min_tokens:
                continue
            if cfg.ref_skip_generic and f["generic_head"]:
                continue
            refs.append(("event", cand.start, cand.end, 0.4 + 0.3 * f["content_new"]))
    if len(refs) >= cfg.ref_min_new_nps:
        out.extend(refs)
    s = sc.sentence_feats
    if not s["ctx_empty"] and (s["opens_segment"] or not cfg.scene_only_segment_openers):
        continuity = max(s["content_recent"], s["names_recent"])
        opener = cfg.scene_use_openers and s["opener"] and s["opens_segment"]
        if continuity <= cfg.scene_max_continuity or opener:
            out.append(("scene", 0, len(sc.sentence), 0.8 - 0.5 * continuity))
    return out


class RulesDetector:
    """spaCy rules; no weights."""

    name = NAME

    def __init__(self, config: RulesConfig | None = None):
        self.config = config or RulesConfig()
        self.version = VERSION

    def analyse(self, batch: Sequence[DetectionInput | tuple]) -> list[SentenceCandidates]:
        inputs = as_inputs(batch)
        return analyse(zip(parse_inputs(inputs), inputs, strict=True))

    def decide_all(self, analysed: list[SentenceCandidates]) -> list[list[RawSuggestion]]:
        return [
            [
                RawSuggestion(label, s, e, round(score, 4), self.name, self.version)
                for label, s, e, score in decide(sc, self.config)
            ]
            for sc in analysed
        ]

    def detect(self, batch: Sequence[DetectionInput | tuple]) -> list[list[RawSuggestion]]:
        return self.decide_all(self.analyse(batch))
