"""Issue 16, sixth attempt (bench only, not adopted): low-rank adapters (LoRA) that
fine-tune the MiniLM encoder for CharE candidates. Used by ``bench/detector_chare6.py``.

The CharE heads read the encoder's layer-:data:`~model_server.minilm.SPAN_LAYER` vectors of
a candidate's word pieces (what kind of thing the name is, in its sentence). Here the
query and value projections of the layers below that one get rank-``r`` adapters
(``W + (alpha / r) * B @ A``, Hu et al. 2021) trained on the candidates' gold targets
jointly with a small head over the candidate's hand and cluster features; the adapted
encoder's span vectors then feed the usual heads. Only the layers that the span vector
depends on are run. Never shipped: the attempt did not meet its bar (docs/DETECTOR.md).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

TARGETS = ("query", "value")


@dataclass(frozen=True)
class AdapterConfig:
    rank: int = 8
    alpha: float = 16.0
    layer: int = 3
    """The span vector is read after this many encoder layers; they carry the adapters."""
    epochs: int = 3
    lr: float = 5e-4
    head_lr: float = 3e-3
    batch: int = 32
    hidden: int = 32
    max_tokens: int = 256


class LoRALinear(torch.nn.Module):
    """A frozen ``Linear`` plus a trainable low-rank update (B starts at zero)."""

    def __init__(self, base: torch.nn.Linear, rank: int, alpha: float):
        super().__init__()
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.a = torch.nn.Parameter(torch.empty(rank, base.in_features))
        torch.nn.init.kaiming_uniform_(self.a, a=5**0.5)
        self.b = torch.nn.Parameter(torch.zeros(base.out_features, rank))
        self.scale = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.a.T @ self.b.T) * self.scale


class SpanModel(torch.nn.Module):
    """The encoder's first ``cfg.layer`` layers with adapters, and a head over
    [standardised side features, is_role, span vector]."""

    def __init__(self, cfg: AdapterConfig):
        super().__init__()
        from model_server.minilm import encoder

        tok, base = encoder()
        self.cfg = cfg
        self.tokenizer = tok
        self.encoder = copy.deepcopy(base)
        self.encoder.encoder.layer = self.encoder.encoder.layer[: cfg.layer]
        for p in self.encoder.parameters():
            p.requires_grad_(False)
        for layer in self.encoder.encoder.layer:
            attention = layer.attention.self
            for name in TARGETS:
                setattr(attention, name, LoRALinear(getattr(attention, name), cfg.rank, cfg.alpha))
        self.head: torch.nn.Module | None = None
        self.side_mean = self.side_std = None

    def adapters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.encoder.parameters() if p.requires_grad]

    def build_head(self, side: np.ndarray) -> None:
        self.side_mean = torch.tensor(side.mean(0), dtype=torch.float32)
        self.side_std = torch.tensor(side.std(0) + 1e-6, dtype=torch.float32)
        width = side.shape[1] + 1 + self.encoder.config.hidden_size
        self.head = torch.nn.Sequential(
            torch.nn.Linear(width, self.cfg.hidden),
            torch.nn.Tanh(),
            torch.nn.Linear(self.cfg.hidden, 1),
        )

    def spans(self, sentences: Sequence[str], spans: Sequence[tuple[int, int]]) -> torch.Tensor:
        """One L2-normalised vector per (sentence, span): the mean of the adapted encoder's
        vectors of the word pieces overlapping the span (each distinct sentence run once)."""
        unique = list(dict.fromkeys(sentences))
        row = {s: i for i, s in enumerate(unique)}
        enc = self.tokenizer(
            [s or " " for s in unique],
            padding=True,
            truncation=True,
            max_length=self.cfg.max_tokens,
            return_tensors="pt",
            return_offsets_mapping=True,
        )
        offsets = enc.pop("offset_mapping")
        hidden = self.encoder(**enc).last_hidden_state
        out = []
        for sentence, (start, end) in zip(sentences, spans, strict=True):
            j = row[sentence]
            starts, ends = offsets[j, :, 0], offsets[j, :, 1]
            mask = (ends > start) & (starts < end) & (ends > starts)
            if not mask.any():
                mask = enc["attention_mask"][j].bool()
            out.append(hidden[j][mask].mean(0))
        return torch.nn.functional.normalize(torch.stack(out), dim=-1)

    def logits(self, sentences, spans, side: np.ndarray, is_role) -> torch.Tensor:
        s = (torch.tensor(side, dtype=torch.float32) - self.side_mean) / self.side_std
        r = torch.tensor(is_role, dtype=torch.float32).unsqueeze(-1)
        return self.head(torch.cat([s, r, self.spans(sentences, spans)], dim=-1)).squeeze(-1)

    @torch.inference_mode()
    def predict(self, sentences, spans, side, is_role, batch: int = 64) -> np.ndarray:
        self.eval()
        out = []
        for b in range(0, len(sentences), batch):
            sl = slice(b, b + batch)
            out.append(torch.sigmoid(self.logits(sentences[sl], spans[sl], side[sl], is_role[sl])))
        return torch.cat(out).numpy()


def train_adapters(
    model: SpanModel,
    sentences: Sequence[str],
    spans: Sequence[tuple[int, int]],
    side: np.ndarray,
    y: np.ndarray,
    is_role: Sequence[bool],
    seed: int = 0,
) -> SpanModel:
    """Fit the adapters and the head on candidates (positives weighted as the heads do)."""
    cfg = model.cfg
    torch.manual_seed(seed)
    model.build_head(side)
    pos = max(1.0, float(y.sum()))
    pos_weight = min(10.0, (len(y) - pos) / pos) ** 0.5
    opt = torch.optim.AdamW(
        [
            {"params": model.adapters(), "lr": cfg.lr, "weight_decay": 0.0},
            {"params": model.head.parameters(), "lr": cfg.head_lr, "weight_decay": 1e-2},
        ]
    )
    order = list(range(len(y)))
    steps = cfg.epochs * ((len(order) + cfg.batch - 1) // cfg.batch)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / warm, max(0.0, (steps - step) / (steps - warm + 1)))
    )
    rng = random.Random(seed)
    role = list(is_role)
    model.train()
    for _ in range(cfg.epochs):
        rng.shuffle(order)
        for b in range(0, len(order), cfg.batch):
            idx = order[b : b + cfg.batch]
            logits = model.logits(
                [sentences[i] for i in idx],
                [spans[i] for i in idx],
                side[idx],
                [role[i] for i in idx],
            )
            target = torch.tensor(y[idx], dtype=torch.float32)
            weight = torch.where(target > 0, pos_weight, 1.0)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, target, weight=weight
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    model.eval()
    return model


@torch.inference_mode()
def span_vectors(model: SpanModel, sentences, spans, batch: int = 64) -> np.ndarray:
    """The adapted encoder's span vectors (rows as ``minilm.span_embeddings`` gives them)."""
    model.eval()
    out = [
        model.spans(sentences[b : b + batch], spans[b : b + batch]).numpy()
        for b in range(0, len(sentences), batch)
    ]
    return np.concatenate(out).astype(np.float32)
