"""``marginalia detector ...`` commands: train, evaluate, predict (a click group the main
CLI registers with ``cli.add_command(detector)``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from model_server.snac_data import snac_path


def _default(split: str) -> str:
    return str(snac_path(split))


def _load(name: str | None):
    from model_server.detector import load_detector

    try:
        return load_detector(name)
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc


@click.group("detector")
def detector() -> None:
    """Train, evaluate and run the coherence error detector (SNaC)."""


@detector.command("train")
@click.option(
    "--backend",
    type=click.Choice(["t5", "minilm"]),
    default="t5",
    show_default=True,
    help="t5: fine-tune a SNaC-grammar T5; minilm: fit the MiniLM heads.",
)
@click.option(
    "--study",
    default=None,
    help="Learn a detector for this study's taxonomy from its curated work ("
    "model_server/learned_train.py); --backend, --train-file and the T5 options are unused.",
)
@click.option(
    "--layer",
    type=click.Choice(["adjudicated", "gold", "workers"]),
    default="adjudicated",
    show_default=True,
    help="--study: which curated work teaches it.",
)
@click.option(
    "--min-workers",
    type=int,
    default=1,
    show_default=True,
    help="--study --layer workers: errors at least this many workers marked.",
)
@click.option(
    "--train-file",
    type=click.Path(dir_okay=False),
    default=lambda: _default("train"),
    show_default="shared SNaC train.json",
    help="SNaC-format JSON to train on.",
)
@click.option(
    "--dev-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="SNaC-format JSON scored after training (written into the model card).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    required=True,
    help="Folder for the checkpoint (HF format for t5, head.json for minilm).",
)
@click.option(
    "--pretrained",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="t5: start from this pretrained T5 folder instead of a small random one.",
)
@click.option("--epochs", type=float, default=10.0, show_default=True)
@click.option(
    "--max-minutes",
    type=float,
    default=30.0,
    show_default=True,
    help="Stop training after this many minutes.",
)
@click.option("--batch-size", type=int, default=16, show_default=True)
@click.option("--lr", type=float, default=1e-3, show_default=True)
@click.option(
    "--d-model", type=int, default=256, show_default=True, help="t5 from scratch: hidden size."
)
@click.option(
    "--layers",
    type=int,
    default=3,
    show_default=True,
    help="t5 from scratch: encoder and decoder layers.",
)
@click.option(
    "--context-words",
    type=int,
    default=96,
    show_default=True,
    help="t5: context words kept before <extra_id_0>.",
)
@click.option(
    "--min-votes",
    type=int,
    default=1,
    show_default=True,
    help="Gold errors need at least this many annotator votes.",
)
@click.option("--threads", type=int, default=1, show_default=True, help="CPU threads.")
def train_cmd(
    backend,
    study,
    layer,
    min_workers,
    train_file,
    dev_file,
    out_dir,
    pretrained,
    epochs,
    max_minutes,
    batch_size,
    lr,
    d_model,
    layers,
    context_words,
    min_votes,
    threads,
) -> None:
    """Fine-tune a detector on SNaC-format JSON, or (--study) learn one from a study's
    curated work, and save it."""
    import torch

    torch.set_num_threads(max(1, threads))
    if study is not None:
        _train_study(study, layer, min_workers, out_dir)
        return
    if not Path(train_file).is_file():
        raise click.ClickException(f"{train_file}: no such file")
    if backend == "minilm":
        from model_server.minilm_train import train_head

        dev = dev_file or _default("dev")
        dev = dev if Path(dev).exists() else None
        try:
            summary = train_head(train_file, out_dir, min_votes=min_votes, dev_path=dev)
        except RuntimeError as exc:  # no cluster finder registered (run without the app)
            raise click.ClickException(str(exc)) from exc
    else:
        from model_server.train import TrainConfig, train

        cfg = TrainConfig(
            epochs=epochs,
            max_minutes=max_minutes,
            batch_size=batch_size,
            lr=lr,
            d_model=d_model,
            num_layers=layers,
            d_ff=2 * d_model,
            max_context_words=context_words,
            min_votes=min_votes,
            threads=threads,
        )
        summary = train(train_file, out_dir, pretrained=pretrained, dev_path=dev_file, cfg=cfg)
    click.echo(json.dumps(summary, indent=2))


def _train_study(slug: str, layer: str, min_workers: int, out_dir: str) -> None:
    from model_server.learned import CARD_FILE
    from model_server.learned_train import train_study
    from model_server.study_data import read_study

    try:
        data = read_study(slug, layer, min_workers)
        summary = train_study(data, out_dir)
    except (RuntimeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    trained = ", ".join(summary["categories"]) or "none"
    skipped = ", ".join(summary["skipped"]) or "none"
    any_error = summary["any_error"]
    click.echo(
        f"trained {summary['model']} on {summary['documents']} documents "
        f"({summary['sentences']} sentences) in {summary['seconds']['total']:.1f} s; "
        f"heads: {trained}; skipped: {skipped}; any error F1 {any_error['f1']:.3f} "
        f"(baseline {any_error['baseline_f1']:.3f}); card: {Path(out_dir) / CARD_FILE}"
    )


@detector.command("evaluate")
@click.option(
    "--model",
    "model",
    default=None,
    help="'rules', 'minilm', or a checkpoint folder (default: $DETECTOR_MODEL or "
    "the best default).",
)
@click.option(
    "--data",
    type=click.Path(exists=True, dir_okay=False),
    default=lambda: _default("dev"),
    show_default="shared SNaC dev.json",
    help="SNaC-format JSON with gold errors.",
)
@click.option("--min-votes", type=int, default=1, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--points/--no-points",
    default=True,
    show_default=True,
    help="Also score every stored operating point (MiniLM).",
)
@click.option(
    "--clusters/--no-clusters",
    default=True,
    show_default=True,
    help="Give the detector the import's entity clusters of each document (app.entities); "
    "without them MiniLM's names use the heads that do not read them.",
)
def evaluate_cmd(model, data, min_votes, as_json, points, clusters) -> None:
    """Print SNaC sentence-level P, R, F1 and span overlap (ov.) per category, beside the
    all-positive baseline (every sentence flagged) and, per stored operating point, the
    detector at that point's thresholds."""
    from model_server.evaluate import REPORTED, all_positive, evaluate_points, format_table, score
    from model_server.evaluate import example_inputs as inputs_of
    from model_server.snac_data import attach_people, load_documents, sentence_examples

    det = _load(model)
    docs = load_documents(data)
    examples = sentence_examples(docs)
    with_clusters = clusters and attach_people(examples, docs)
    if not as_json:
        click.echo(f"entity clusters: {'yes' if with_clusters else 'no'}", err=True)
    table = score(examples, det.detect(inputs_of(examples)), min_votes)
    baseline = all_positive(examples, min_votes)
    at_points = evaluate_points(det, examples, min_votes) if points else {}
    if as_json:
        payload = {
            "detector": det.name,
            "version": det.version,
            "clusters": bool(with_clusters),
            "scores": table,
            "all_positive": baseline,
            "operating_points": at_points,
        }
        click.echo(json.dumps(payload, indent=2))
        return
    rows = {f"{det.name} {det.version}": table, "all-positive baseline": baseline}
    rows.update({f"{det.name} @ {name}": t for name, t in at_points.items()})
    click.echo(format_table(rows, REPORTED))
    missing = sorted(
        f"{category} has no {name} point"
        for name, t in at_points.items()
        for category, row in t.items()
        if row.get("missing")
    )
    if missing:
        click.echo("; ".join(missing) + " (nothing predicted there)")


@detector.command("predict")
@click.argument("tsv", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--model",
    "model",
    default=None,
    help="'rules', 'minilm', or a checkpoint folder (default: $DETECTOR_MODEL or "
    "the best default).",
)
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Output file (default: stdout).",
)
def predict_cmd(tsv, model, out_file) -> None:
    """Read a SNaC TSV (id, context, sentence) and write SNaC's output lines."""
    from model_server.predict import predict_tsv

    det = _load(model)
    try:
        if out_file:
            with open(Path(out_file), "w", encoding="utf-8") as fh:
                n = predict_tsv(det, tsv, fh)
        else:
            n = predict_tsv(det, tsv, sys.stdout)
    except (ValueError, KeyError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"{n} sentence(s) predicted with {det.name} {det.version}", err=True)


@detector.command("import-snac")
@click.argument("src", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where to write the detector folder (default: checkpoints/snac-<name>).",
)
@click.option(
    "--tokenizer",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="A T5 tokenizer folder (t5-large's) when the checkpoint has none.",
)
def import_snac_cmd(src, out_dir, tokenizer) -> None:
    """Convert one of SNaC's released T5 checkpoints and check that it answers in SNaC's
    grammar; use it with --detector / DETECTOR_MODEL=<out>."""
    from model_server.snac_import import ImportProblem, import_snac

    out = Path(out_dir) if out_dir else Path("checkpoints") / f"snac-{Path(src).resolve().name}"
    try:
        summary = import_snac(src, out, tokenizer)
    except (ImportProblem, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps(summary, indent=2))
    click.echo(f"imported {src} -> {out} ({summary['parameters']} parameters)", err=True)


def register(group: click.Group, cluster_finder=None) -> None:
    """Attach ``detector`` to the main ``marginalia`` group; ``cluster_finder`` (the app's
    import, :mod:`app.entities`) gives training and evaluation each document's entity
    clusters (:func:`model_server.clusters.set_cluster_finder`)."""
    from model_server.clusters import set_cluster_finder

    if cluster_finder is not None:
        set_cluster_finder(cluster_finder)
    group.add_command(detector)


if __name__ == "__main__":  # pragma: no cover
    detector()
