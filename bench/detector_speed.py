"""Sentences per second: the batched T5 predictor vs the SNaC reference approach.

Reference (as the SNaC release's ``snac_evaluate.py``): every input padded to 1024 tokens,
batch 8, input order, ``torch.no_grad``, ``generate(max_length=80)``. Ours:
:class:`model_server.t5.T5Detector` (length-sorted batches, dynamic padding,
``inference_mode``, bf16 and batch 64 on CUDA). Both read the same input texts (the
checkpoint's own context limit unless ``--snac-context``) on the same checkpoint.

    .venv/bin/python bench/detector_speed.py --model checkpoints/t5-snac-small -n 96
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from model_server.evaluate import example_inputs  # noqa: E402
from model_server.grammar import SNAC_CONTEXT_WORDS  # noqa: E402
from model_server.snac_data import load_documents, sentence_examples, snac_path  # noqa: E402
from model_server.t5 import T5Detector  # noqa: E402


def reference(
    detector: T5Detector, texts: list[str], batch_size: int = 8, max_length: int = 1024
) -> list[str]:
    """The reference loop: pad to max_length, fixed batch, input order."""
    tok, model = detector.tokenizer, detector.model
    side, tok.truncation_side = tok.truncation_side, "right"  # as snac_evaluate.py
    outputs = []
    for b in range(0, len(texts), batch_size):
        enc = tok(
            texts[b : b + batch_size],
            max_length=max_length,
            truncation=True,
            padding="max_length",
            return_tensors="pt",
        )
        with torch.no_grad():
            gen = model.generate(
                input_ids=enc.input_ids.to(detector.device),
                attention_mask=enc.attention_mask.to(detector.device),
                max_length=80,
            )
        outputs += tok.batch_decode(gen, skip_special_tokens=True)
    tok.truncation_side = side
    return outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="checkpoints/t5-snac-small")
    parser.add_argument("--data", default=str(snac_path("dev")))
    parser.add_argument("-n", type=int, default=96, help="sentences to time")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--snac-context",
        action="store_true",
        help="both read SNaC's 921 context words (1024 tokens)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    overrides = (
        {"max_context_words": SNAC_CONTEXT_WORDS, "max_input_tokens": 1024}
        if args.snac_context
        else {}
    )
    detector = T5Detector.load(args.model, **overrides)
    examples = sentence_examples(load_documents(args.data))
    step = max(1, len(examples) // args.n)
    texts = detector.texts(example_inputs(examples[::step][: args.n]))
    detector.generate(texts[:4])  # warm-up
    t0 = time.perf_counter()
    ours = [text for text, _ in detector.generate(texts)]
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = reference(detector, texts)
    t_ref = time.perf_counter() - t0
    same = sum(a.strip() == b.strip() for a, b in zip(ours, ref, strict=True)) / len(texts)
    lengths = [len(ids) for ids in detector.tokenizer(texts)["input_ids"]]
    print(
        f"device: {detector.device} ({torch.get_num_threads()} thread(s)), "
        f"checkpoint: {args.model} ({detector.version})"
    )
    print(
        f"sentences: {len(texts)}, input tokens mean {sum(lengths) / len(lengths):.0f} "
        f"max {max(lengths)}, context words kept: {detector.max_context_words}"
    )
    print(f"reference (pad 1024, batch 8, input order): {len(texts) / t_ref:.2f} sentences/s")
    print(
        f"batched (sorted, dynamic padding, batch {detector.batch_size}): "
        f"{len(texts) / t_ours:.2f} sentences/s"
    )
    print(f"speed-up: {t_ref / t_ours:.1f}x; identical outputs: {same:.0%}")


if __name__ == "__main__":
    main()
