"""``detector evaluate`` / ``detector predict`` through click, with the rules backend."""

import json

from click.testing import CliRunner

from model_server.cli import detector
from model_server.operating_points import POINTS

DOC = {
    "story": {
        "0": {
            "text": "Anna lives in a small village with her aunt. She bakes bread.",
            "errors": [],
        },
        "1": {
            "text": "Anna sells bread at the market. Zebulon Quark buys a loaf.",
            "errors": [{"span": "Zebulon Quark", "error_type": "CharE", "votes": 3}],
        },
    }
}


def test_evaluate_prints_per_category_scores(tmp_path):
    data = tmp_path / "mini.json"
    data.write_text(json.dumps(DOC))
    result = CliRunner().invoke(
        detector, ["evaluate", "--model", "rules", "--data", str(data), "--json"]
    )
    assert result.exit_code == 0, result.output
    scores = json.loads(result.output)["scores"]
    assert scores["CharE"]["tp"] == 1 and scores["CharE"]["fn"] == 0
    assert scores["CharE"]["ov"] == 1.0
    table = CliRunner().invoke(detector, ["evaluate", "--model", "rules", "--data", str(data)])
    assert table.exit_code == 0 and "CharE F1" in table.output
    assert "| all-positive baseline | 0.25 | 1.00 | 0.40 |" in table.output


def test_evaluate_reports_the_all_positive_baseline_and_each_operating_point(tmp_path):
    data = tmp_path / "mini.json"
    data.write_text(json.dumps(DOC))
    result = CliRunner().invoke(
        detector, ["evaluate", "--model", "minilm", "--data", str(data), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{\n") :])  # after the encoder's progress
    # 4 sentences, 1 gold CharE sentence: P 1/4, R 1, F1 2 * 0.25 / 1.25 = 0.4
    base = report["all_positive"]["CharE"]
    assert (base["p"], base["r"], base["f1"], base["fp"]) == (0.25, 1.0, 0.4, 3)
    assert report["all_positive"]["RefE"]["f1"] == 0.0  # no gold RefE here
    assert set(report["operating_points"]) == set(POINTS)
    balanced = report["operating_points"]["balanced"]["CharE"]
    assert balanced["tp"] + balanced["fn"] == 1
    assert report["operating_points"]["best_f1"] == report["operating_points"]["balanced"]


def test_predict_writes_snac_lines(tmp_path):
    tsv = tmp_path / "in.tsv"
    tsv.write_text("id\tcontext\tsentence\n0\tAnna bakes bread.\tZebulon Quark buys a loaf.\n")
    out = tmp_path / "out.txt"
    result = CliRunner().invoke(
        detector, ["predict", str(tsv), "--model", "rules", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert lines[0] == "Anna bakes bread. <extra_id_0> Zebulon Quark buys a loaf."
    assert lines[1].startswith("Predicted: false") and "character Zebulon Quark" in lines[1]


def test_bad_model_is_a_clean_error(tmp_path):
    data = tmp_path / "mini.json"
    data.write_text(json.dumps(DOC))
    result = CliRunner().invoke(
        detector, ["evaluate", "--model", str(tmp_path / "nope"), "--data", str(data)]
    )
    assert result.exit_code != 0 and "unknown detector" in result.output
