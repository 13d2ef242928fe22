"""Sentences per second of the T5 path on a GPU: a random-init T5 of SNaC's shape (T5-large),
fp32 and bf16, through :meth:`model_server.t5.T5Detector.generate` (the production path).

Two steps, because the GPU machine has no spaCy (sentence splitting) and no network (no T5
vocabulary to download):

    # here: SNaC dev inputs as SNaC builds them (921 context words) + a 32k unigram tokenizer
    # trained on SNaC train (token counts close to T5's own vocabulary on this text)
    .venv/bin/python bench/detector_gpu.py prepare --out bench/out/gpu
    # on the GPU machine
    python3 bench/detector_gpu.py measure --inputs bench/out/gpu

Random weights never emit the end token on their own, so the decoder length is fixed per
run: ``--new-tokens 12`` (a typical answer, ``false character <name> scene``) and 79 (SNaC's
``max_length=80``, the worst case). The figures are throughput of the architecture, not of a
trained model.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# T5-large, as SNaC's released checkpoints (t5-large fine-tuned)
T5_LARGE = dict(
    d_model=1024, d_kv=64, d_ff=4096, num_layers=24, num_decoder_layers=24, num_heads=16
)
VOCAB = 32128


def prepare(out: Path, limit: int | None) -> None:
    """Write ``texts.json`` (SNaC-format inputs of dev) and ``tokenizer.json``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    from model_server.evaluate import example_inputs
    from model_server.grammar import SNAC_CONTEXT_WORDS, build_input
    from model_server.snac_data import load_documents, sentence_examples, snac_path

    examples = sentence_examples(load_documents(snac_path("dev")))[:limit]
    texts = [
        build_input(i.context, i.sentence, SNAC_CONTEXT_WORDS) for i in example_inputs(examples)
    ]
    train = json.loads(snac_path("train").read_text(encoding="utf-8"))
    corpus = [seg["text"] for doc in train.values() for seg in doc.values()]
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    special = ["<pad>", "</s>", "<unk>"] + [f"<extra_id_{k}>" for k in range(100)]
    trainer = trainers.UnigramTrainer(
        vocab_size=VOCAB - 100, special_tokens=special, unk_token="<unk>"
    )
    tokenizer.train_from_iterator(corpus, trainer)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out / "tokenizer.json"))
    (out / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    lengths = [len(tokenizer.encode(t).ids) for t in texts]
    print(f"{len(texts)} inputs, tokens mean {sum(lengths) / len(lengths):.0f} max {max(lengths)}")


def measure(
    inputs: Path, new_tokens: list[int], batch_sizes: list[int], shape: dict, limit: int | None
) -> list[dict]:
    """Time T5Detector.generate over the prepared texts for each dtype, length and batch."""
    import torch
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    from model_server.t5 import T5Detector

    texts = json.loads((inputs / "texts.json").read_text(encoding="utf-8"))[:limit]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(inputs / "tokenizer.json"),
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
    )
    config = T5Config(
        vocab_size=VOCAB, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, **shape
    )
    torch.manual_seed(0)
    base = T5ForConditionalGeneration(config)
    params = sum(p.numel() for p in base.parameters())
    print(f"T5 of SNaC's shape: {params / 1e6:.0f} M parameters, {len(texts)} dev inputs")
    print(f"device: {torch.cuda.get_device_name(0) if device == 'cuda' else 'cpu'}")
    results = []
    for dtype in (torch.float32, torch.bfloat16):
        model = base.to(device, dtype=dtype)
        for tokens in new_tokens:
            for batch in batch_sizes:
                detector = T5Detector(
                    model, tokenizer, version="random-large", batch_size=batch, device=device
                )
                detector.model = model.to(dtype=dtype)  # T5Detector picks bf16 on CUDA
                detector.max_new_tokens = tokens
                model.generation_config.min_new_tokens = tokens
                detector.generate(texts[: batch * 2])  # warm-up (kernels, allocator)
                sync()
                started = time.perf_counter()
                detector.generate(texts)
                sync()
                seconds = time.perf_counter() - started
                row = {
                    "dtype": str(dtype).removeprefix("torch."),
                    "new_tokens": tokens,
                    "batch": batch,
                    "sentences": len(texts),
                    "seconds": round(seconds, 2),
                    "sentences_per_s": round(len(texts) / seconds, 1),
                }
                if device == "cuda":
                    row["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 1)
                    torch.cuda.reset_peak_memory_stats()
                print(json.dumps(row), flush=True)
                results.append(row)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    prep = sub.add_parser("prepare")
    prep.add_argument("--out", type=Path, default=Path("bench/out/gpu"))
    prep.add_argument("--limit", type=int, default=None)
    meas = sub.add_parser("measure")
    meas.add_argument("--inputs", type=Path, default=Path("bench/out/gpu"))
    meas.add_argument("--new-tokens", type=int, nargs="+", default=[12, 79])
    meas.add_argument("--batch", type=int, nargs="+", default=[64])
    meas.add_argument("--json", type=Path, default=None)
    meas.add_argument("--limit", type=int, default=None)
    meas.add_argument("--tiny", action="store_true", help="a 2-layer model (a smoke test)")
    args = parser.parse_args()
    if args.step == "prepare":
        prepare(args.out, args.limit)
    else:
        shape = dict(T5_LARGE, num_layers=2, num_decoder_layers=2) if args.tiny else T5_LARGE
        rows = measure(args.inputs, args.new_tokens, args.batch, shape, args.limit)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
