"""Fine-tune a SNaC-grammar T5 on SNaC-format JSON and write an HF checkpoint + model card.

Starts from a pretrained checkpoint folder when given; otherwise builds a small T5 config
with a SentencePiece tokenizer trained on the training text (no weights can be
downloaded). Uses a GPU when present; shows a progress bar; stops after ``max_minutes``.
"""

from __future__ import annotations

import io
import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm.auto import tqdm

from model_server.grammar import LABEL_OF_CATEGORY, build_input, format_target
from model_server.snac_data import SentenceExample, load_documents, sentence_examples
from model_server.t5 import SETTINGS_FILE, T5Detector, pick_device


@dataclass
class TrainConfig:
    """Everything that shapes a training run (written into the model card)."""

    epochs: float = 10.0
    max_minutes: float = 30.0
    batch_size: int = 16
    lr: float = 1e-3
    warmup_steps: int = 100
    min_votes: int = 1
    max_context_words: int = 96
    max_input_tokens: int = 256
    max_target_tokens: int = 64
    d_model: int = 256
    num_layers: int = 3
    num_heads: int = 4
    d_ff: int = 512
    vocab_size: int = 6000
    dropout: float = 0.1
    false_share: float = 0.5  # oversample ``false`` targets to this share of each epoch
    threads: int = 1
    seed: int = 0
    version: str = "snac-small-1"


def pairs(examples: list[SentenceExample], cfg: TrainConfig) -> list[tuple[str, str]]:
    """(input text, target) for every sentence."""
    out = []
    for ex in examples:
        errors = [
            (LABEL_OF_CATEGORY[g.category], g.span)
            for g in ex.gold
            if g.category in LABEL_OF_CATEGORY and g.votes >= cfg.min_votes
        ]
        out.append(
            (build_input(ex.context, ex.sentence, cfg.max_context_words), format_target(errors))
        )
    return out


def train_tokenizer(texts: list[str], vocab_size: int):
    """A T5 tokenizer (pad 0, eos 1, unk 2, 100 sentinels) trained on ``texts``."""
    import sentencepiece as spm
    from transformers import T5Tokenizer

    buf = io.BytesIO()
    clean = [t.replace("<extra_id_0>", " ") for t in texts]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(clean),
        model_writer=buf,
        vocab_size=vocab_size,
        model_type="unigram",
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        character_coverage=1.0,
        hard_vocab_limit=False,
        num_threads=1,
        minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    vocab = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    return T5Tokenizer(vocab=vocab, extra_ids=100)


def small_model(tokenizer, cfg: TrainConfig):
    """A randomly initialised small T5 sized by ``cfg``."""
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=cfg.d_model,
        d_kv=cfg.d_model // cfg.num_heads,
        d_ff=cfg.d_ff,
        num_layers=cfg.num_layers,
        num_decoder_layers=cfg.num_layers,
        num_heads=cfg.num_heads,
        feed_forward_proj="relu",
        dropout_rate=cfg.dropout,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    return T5ForConditionalGeneration(config)


def balanced_indices(targets: list[str], false_share: float, rng: random.Random) -> list[int]:
    """Indices for one epoch with ``false`` targets oversampled to ``false_share`` (a small
    model otherwise collapses to always answering ``true``)."""
    pos = [i for i, t in enumerate(targets) if t != "true"]
    neg = [i for i, t in enumerate(targets) if t == "true"]
    if not pos or not neg or false_share <= len(pos) / len(targets):
        return list(range(len(targets)))
    want = int(false_share * len(neg) / (1 - false_share))
    extra = [rng.choice(pos) for _ in range(max(0, want - len(pos)))]
    return neg + pos + extra


def _batches(
    encoded: list[tuple[list[int], list[int]]],
    indices: list[int],
    batch_size: int,
    rng: random.Random,
):
    """Length-bucketed shuffled batches (less padding, still random)."""
    order = sorted(indices, key=lambda i: len(encoded[i][0]) + rng.random())
    chunks = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    rng.shuffle(chunks)
    return chunks


def _collate(items, pad: int, device):
    width = max(len(x) for x, _ in items)
    twidth = max(len(y) for _, y in items)
    ids = torch.full((len(items), width), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    labels = torch.full((len(items), twidth), -100, dtype=torch.long)
    for r, (x, y) in enumerate(items):
        ids[r, : len(x)] = torch.tensor(x)
        mask[r, : len(x)] = 1
        labels[r, : len(y)] = torch.tensor(y)
    return ids.to(device), mask.to(device), labels.to(device)


def train(
    train_path: str | Path,
    out_dir: str | Path,
    *,
    pretrained: str | Path | None = None,
    dev_path: str | Path | None = None,
    cfg: TrainConfig | None = None,
    limit_docs: int | None = None,
    progress: bool = True,
) -> dict:
    """Train, save an HF checkpoint to ``out_dir`` with a README model card; return a summary
    (steps, minutes, final loss, dev scores when ``dev_path`` is given)."""
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    cfg = cfg or TrainConfig()
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    device = pick_device()
    if device.type == "cpu":
        torch.set_num_threads(max(1, cfg.threads))
    docs = load_documents(train_path)
    if limit_docs:
        docs = dict(list(docs.items())[:limit_docs])
    data = pairs(sentence_examples(docs), cfg)
    if pretrained:
        tokenizer = AutoTokenizer.from_pretrained(str(pretrained))
        model = T5ForConditionalGeneration.from_pretrained(str(pretrained))
    else:
        tokenizer = train_tokenizer([x for x, _ in data] + [y for _, y in data], cfg.vocab_size)
        model = small_model(tokenizer, cfg)
    model.to(device).train()
    tokenizer.truncation_side = "left"  # keep the sentence, drop the oldest context
    xs = tokenizer([x for x, _ in data], truncation=True, max_length=cfg.max_input_tokens)
    ys = tokenizer([y for _, y in data], truncation=True, max_length=cfg.max_target_tokens)
    encoded = list(zip(xs["input_ids"], ys["input_ids"], strict=True))
    targets = [y for _, y in data]
    epoch_size = len(balanced_indices(targets, cfg.false_share, random.Random(cfg.seed)))
    steps_per_epoch = max(1, (epoch_size + cfg.batch_size - 1) // cfg.batch_size)
    total = max(1, int(cfg.epochs * steps_per_epoch))
    optim = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        optim, lambda s: min(1.0, (s + 1) / cfg.warmup_steps) * max(0.05, 1 - s / total)
    )
    use_amp = device.type == "cuda" and torch.cuda.is_bf16_supported()
    start, step, loss_avg = time.time(), 0, None
    bar = tqdm(total=total, desc="train", disable=not progress, unit="step")
    while step < total and (time.time() - start) / 60 < cfg.max_minutes:
        indices = balanced_indices(targets, cfg.false_share, rng)
        for chunk in _batches(encoded, indices, cfg.batch_size, rng):
            ids, mask, labels = _collate(
                [encoded[i] for i in chunk], tokenizer.pad_token_id, device
            )
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
                loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optim.step()
            sched.step()
            optim.zero_grad(set_to_none=True)
            step += 1
            loss_avg = loss.item() if loss_avg is None else 0.98 * loss_avg + 0.02 * loss.item()
            bar.update(1)
            bar.set_postfix(loss=f"{loss_avg:.3f}")
            if step >= total or (time.time() - start) / 60 >= cfg.max_minutes:
                break
    bar.close()
    minutes = (time.time() - start) / 60
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.eval().save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    settings = {
        "version": cfg.version,
        "max_context_words": cfg.max_context_words,
        "max_input_tokens": cfg.max_input_tokens,
        "grammar": "snac",
    }
    (out / SETTINGS_FILE).write_text(json.dumps(settings, indent=2), encoding="utf-8")
    summary = {
        "steps": step,
        "epochs": round(step / steps_per_epoch, 2),
        "minutes": round(minutes, 1),
        "loss": round(loss_avg or 0.0, 4),
        "device": device.type,
        "train_sentences": len(encoded),
        "pretrained": str(pretrained) if pretrained else None,
    }
    if dev_path:
        from model_server.evaluate import evaluate_file

        summary["dev"] = evaluate_file(T5Detector.load(out), dev_path, cfg.min_votes)
    write_model_card(out, cfg, summary, train_path, dev_path)
    return summary


def write_model_card(out: Path, cfg: TrainConfig, summary: dict, train_path, dev_path) -> None:
    """README.md describing data, settings and scores."""
    lines = [
        f"# Marginalia SNaC coherence detector ({cfg.version})",
        "",
        "A `T5ForConditionalGeneration` that reads the context's last words, `<extra_id_0>`, "
        "and a sentence, and writes `true` or `false` followed by SNaC labels "
        "(`character`, `event`, `scene`, `inconsistent`) and spans.",
        "",
        "## Data",
        "",
        f"- training: `{Path(train_path).name}` (SNaC), {summary['train_sentences']} sentences, "
        f"gold errors with >= {cfg.min_votes} vote(s)",
        f"- starting point: {summary['pretrained'] or 'random init, tokenizer trained on the training text'}",
        "",
        "## Training",
        "",
        f"- {summary['steps']} steps ({summary['epochs']} epochs) in {summary['minutes']} min "
        f"on {summary['device']}, final loss {summary['loss']}",
        "- settings: `" + json.dumps(asdict(cfg)) + "`",
        "",
    ]
    if "dev" in summary:
        from model_server.evaluate import format_table

        lines += [
            "## Scores",
            "",
            f"Sentence-level on `{Path(dev_path).name}`:",
            "",
            format_table({cfg.version: summary["dev"]}),
            "",
        ]
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")
