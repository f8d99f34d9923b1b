"""Evaluation: every scorer on hand-computed examples, statistics, input checks, the CLI, and the
released systems' outputs on the MeanSum Yelp test set (shared data)."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import SHARED_DATA, needs_data, write_jsonl
from denoisesum.cli import app
from denoisesum.errors import DenoiseSumError, InputError
from denoisesum.evaluation import compare, evaluate, load_predictions, load_references
from denoisesum.evaluation.inputs import check_ids
from denoisesum.evaluation.pooled import PooledRouge, tokenize_sentence
from denoisesum.evaluation.rouge import rouge_f1
from denoisesum.evaluation.stats import bootstrap_samples, paired_test, percentile_interval

runner = CliRunner()


def _perl_rouge_works() -> bool:
    if shutil.which("perl") is None:
        return False
    return subprocess.run(["perl", "-MXML::Parser", "-e", "1"], capture_output=True).returncode == 0


needs_perl = pytest.mark.skipif(
    not _perl_rouge_works(),
    reason="ROUGE-1.5.5 needs perl with XML::Parser (apt-get install libxml-parser-perl)",
)
needs_java = pytest.mark.skipif(
    shutil.which("java") is None,
    reason="METEOR 1.5 needs java (apt-get install default-jre-headless)",
)


def pct(scores: dict[str, float]) -> dict[str, float]:
    return {k: round(100 * v, 3) for k, v in scores.items()}


# ---------------------------------------------------------------- rouge-score and pooled ROUGE


def test_rouge_score_by_hand():
    # hyp: the cat sat on the mat / ref: the cat lay on the mat (no word > 3 chars: no stemming)
    # unigrams: the x2, cat, on, mat = 5 of 6 each side -> F = 5/6
    # bigrams: "the cat", "on the", "the mat" = 3 of 5 -> F = 3/5
    # LCS: the cat on the mat = 5 -> F = 5/6
    scores = pct(rouge_f1("the cat sat on the mat", ["the cat lay on the mat"]))
    assert scores == {"rouge1": 83.333, "rouge2": 60.0, "rougeL": 83.333}


def test_rouge_score_averages_f1_over_references():
    # ref 1 is the hypothesis itself (F = 1), ref 2 shares nothing (F = 0): mean 0.5 for all.
    scores = pct(rouge_f1("the cat sat", ["the cat sat", "a dog ran away"]))
    assert scores == {"rouge1": 50.0, "rouge2": 50.0, "rougeL": 50.0}


def test_pooled_rouge_pools_counts_over_references():
    # Same pair as above, but counts are summed over the two references first:
    # R1: overlap 3 + 0, hypothesis 3 + 3, references 3 + 4 -> P = 1/2, R = 3/7, F = 6/13
    # R2: overlap 2 + 0, hypothesis 2 + 2, references 2 + 3 -> P = 1/2, R = 2/5, F = 4/9
    # RL: LCS 3 + 0, lengths as R1 -> F = 6/13
    scores = pct(PooledRouge().score("the cat sat", ["the cat sat", "a dog ran away"]))
    assert scores == {"rouge1": 46.154, "rouge2": 44.444, "rougeL": 46.154}


def test_pooled_rouge_l_is_summary_level_union_lcs():
    # Reference: one sentence "aa bb cc dd ee"; hypothesis: two lines, "cc dd ee" and "aa bb".
    # Union LCS: {cc dd ee} from line 1 and {aa bb} from line 2 hit all 5 reference words:
    # P = R = 5/5. rouge-score's rougeL ignores lines: LCS("cc dd ee aa bb", ref) = 3 -> 3/5.
    hypothesis, reference = "cc dd ee\naa bb", "aa bb cc dd ee"
    assert pct(PooledRouge().score(hypothesis, [reference]))["rougeL"] == 100.0
    assert pct(rouge_f1(hypothesis, [reference]))["rougeL"] == 60.0


def test_pooled_rouge_l_hits_are_clipped_by_the_hypothesis():
    # Reference lines "aa bb" and "aa cc"; hypothesis "aa". Each reference line's LCS hits its
    # "aa", but the hypothesis has one "aa" to give: 1 hit. P = 1/1, R = 1/4 -> F = 2/5.
    assert pct(PooledRouge().score("aa", ["aa bb\naa cc"]))["rougeL"] == 40.0


def test_pooled_tokenization_is_py_rouges():
    # WordNet exceptions before Porter (ORIGINAL_ALGORITHM); words of <= 3 chars untouched.
    assert tokenize_sentence("The children were better, always!") == [
        "the",
        "child",
        "be",
        "well",
        "alwai",
    ]
    # NLTK's tokenizer splits "gotta"; "cannot" is kept whole; punctuation is a separator.
    assert tokenize_sentence("Gotta go... cannot wait") == ["got", "ta", "go", "cannot", "wait"]
    assert tokenize_sentence("Gotta go", split_contractions=False) == ["gotta", "go"]


def test_pooled_length_limit_truncates_the_summary():
    # The first 3 words of the hypothesis are exactly the reference.
    scorer = PooledRouge(length_limit=3, length_unit="words")
    assert pct(scorer.score("the cat sat on the mat", ["the cat sat"]))["rouge1"] == 100.0
    assert (
        pct(PooledRouge(length_limit=7, length_unit="bytes").score("the cat sat", ["the cat"]))[
            "rouge2"
        ]
        == 100.0
    )  # "the cat" is 7 characters
    with pytest.raises(DenoiseSumError, match="length_unit"):
        PooledRouge(length_unit="tokens")


def test_tokenized_and_raw_text_score_alike():
    # Released outputs are lower-cased with split clitics; references are raw text.
    for score in (
        rouge_f1("i can ' t wait .", ["I can't wait."]),
        PooledRouge().score("i can ' t wait .", ["I can't wait."]),
    ):
        assert pct(score) == {"rouge1": 100.0, "rouge2": 100.0, "rougeL": 100.0}


# ---------------------------------------------------------------- SU4 and METEOR (system tools)


@needs_perl
def test_su4_recall_by_hand():
    from denoisesum.evaluation.su4 import su4_recall

    # ROUGE-1.5.5 with -m: "police" -> "polic", "killed" -> "kill"; words <= 3 chars not stemmed.
    # SU4 units = skip-bigrams at most 4 words apart + unigrams of every word but the LAST (a quirk
    # of the official script).
    # 1) ref "the gunman kill the policeman": 10 pairs + 4 unigrams = 14 units.
    #    hyp "polic kill the gunman" shares pairs (kill,the), (the,gunman) and unigrams kill, the:
    #    4 hits -> R = 4/14 = 0.28571.
    # 2) hyp "the cat can t sit" (the apostrophe becomes a space, as in "can't").
    #    ref A "the cat can t sat": 10 pairs + 4 unigrams = 14 units; hits: the 6 pairs among
    #    the/cat/can/t + 4 unigrams = 10. ref B "cats": one word -> no unit at all.
    #    Pooled over references: R = (10 + 0) / (14 + 0) = 0.71429.
    # 3) an empty hypothesis scores 0.
    recall = su4_recall(
        ["police killed the gunman", "the cat can ' t sit", ""],
        [["the gunman killed the policeman"], ["the cat can't sat", "cats"], ["anything at all"]],
    )
    assert recall == [0.28571, 0.71429, 0.0]


@needs_java
def test_meteor_by_hand():
    from denoisesum.evaluation.meteor import meteor, normalize

    # METEOR 1.5, English: alpha 0.85, beta 0.2, gamma 0.6; all words below are content words, so
    # P = matches / hyp words, R = matches / ref words, Fmean = P R / (alpha P + (1 - alpha) R),
    # penalty = gamma (chunks / matches)^beta, score = Fmean (1 - penalty).
    # 1) "pizza pasta steak" vs "pizza pasta salad soup": 2 matches in 1 chunk, P 2/3, R 1/2:
    #    Fmean = (1/3) / (0.85 * 2/3 + 0.15 * 1/2) = 0.519481; penalty 0.6 * 0.5^0.2 = 0.522330;
    #    score = 0.248140.
    # 2) "pasta steak pizza": same matches, but in 2 chunks: penalty 0.6 -> 0.207792.
    # 3) an exact match scores 1; 4) no shared word scores 0;
    # 5) tokenized output vs raw reference: the same after normalization -> exact match.
    assert normalize("i can ' t wait .") == normalize("I can't wait.") == "i ca n't wait ."
    segments, corpus = meteor(
        [
            "pizza pasta steak",
            "pasta steak pizza",
            "The staff was friendly.",
            "xx yy",
            "i can ' t wait .",
        ],
        [["pizza pasta salad soup"]] * 2
        + [["The staff was friendly."], ["aa bb"], ["I can't wait."]],
    )
    assert [round(s, 6) for s in segments] == [0.24814, 0.207792, 1.0, 0.0, 1.0]
    assert 0 < corpus < 1


# ---------------------------------------------------------------- statistics


def test_bootstrap_interval_is_seeded_and_holds_the_mean():
    scores = np.random.default_rng(1).normal(30, 8, size=100)
    first = percentile_interval(scores, bootstrap_samples(100, 1000, seed=7))
    again = percentile_interval(scores, bootstrap_samples(100, 1000, seed=7))
    other = percentile_interval(scores, bootstrap_samples(100, 1000, seed=8))
    assert first == again and first != other
    low, high = first
    assert low < scores.mean() < high
    # About 2 standard errors each side: 8 / sqrt(100) = 0.8.
    assert 2.4 < high - low < 3.9


def test_paired_test_separates_different_systems_only():
    rng = np.random.default_rng(0)
    a = rng.normal(30, 5, size=100)
    better = a + 2 + rng.normal(0, 1, size=100)
    result = paired_test(better, a, trials=2000)
    assert result.p_value < 0.001 and result.ci_low > 1 and result.ci_high < 3
    assert abs(result.difference - (better - a).mean()) < 1e-12
    same = paired_test(a, a.copy(), trials=2000)
    assert same.p_value == 1.0 and same.difference == 0
    # Noise only: no evidence of a difference.
    assert paired_test(a + rng.normal(0, 1, size=100), a, trials=2000).p_value > 0.05
    assert paired_test(better, a, trials=500, seed=3) == paired_test(better, a, trials=500, seed=3)


def test_evaluate_report_and_compare():
    refs = {"e1": ["the cat sat on the mat"], "e2": ["the dog ran in the park", "a dog ran"]}
    good = {"e1": "the cat sat on the mat", "e2": "the dog ran in the park"}
    bad = {"e1": "a bird", "e2": ""}  # an empty summary is allowed and scores 0
    report = evaluate(good, refs, metrics=["rouge", "pooled"], resamples=200)
    assert report.entity_ids == ["e1", "e2"]
    # e2, rouge-score: mean of F1 100 (ref 1) and, for ref 2 ("dog", "ran" shared: P 2/6, R 2/3)
    # 2 * 1/3 * 2/3 / (1/3 + 2/3) = 44.444
    assert [round(s, 3) for s in report.scores["rouge1"]] == [100.0, 72.222]
    assert report.prediction_words == [6, 6] and report.reference_words == [6, 4.5]
    low, high = report.intervals["rouge1"]
    assert low <= report.means["rouge1"] <= high
    data = report.to_dict()
    assert data["scores"]["pooled_rouge1"]["mean"] == pytest.approx(
        report.means["pooled_rouge1"], abs=1e-4
    )
    assert data["lengths"] == {"prediction_words": 6.0, "reference_words": 5.25}
    bad_report = evaluate(bad, refs, metrics=["rouge", "pooled"], resamples=200)
    assert all(v == [0.0, 0.0] for v in bad_report.scores.values())
    tests = compare(report, evaluate(bad, refs, metrics=["rouge"], resamples=200), trials=100)
    assert set(tests) == {"rouge1", "rouge2", "rougeL"}  # only the metrics both reports have
    assert set(evaluate(good, refs, metrics="rouge").scores) == set(tests)  # a string works too
    assert tests["rouge1"].difference > 80
    with pytest.raises(DenoiseSumError, match="unknown metric 'bleu'"):
        evaluate(good, refs, metrics=["bleu"])


# ---------------------------------------------------------------- input checks


def test_mismatched_entity_ids_name_the_file_and_ids(tmp_path):
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [{"entity_id": f"e{i}", "reviews": ["r"], "summaries": ["s"]} for i in range(8)],
    )
    preds = write_jsonl(
        tmp_path / "preds.jsonl", [{"entity_id": e, "summary": "s"} for e in ["e0", "x1", "x2"]]
    )
    with pytest.raises(InputError) as err:
        check_ids(load_predictions(preds), load_references(gold), preds, gold)
    message = str(err.value)
    assert message.startswith(f"{preds}: entity ids do not match the gold file {gold}")
    assert (
        "7 gold entities missing from the predictions ('e1', 'e2', 'e3', 'e4', 'e5' and 2 "
        "more)" in message
    )
    assert "2 predicted entities not in the gold file" in message and "'x2'" in message
    with pytest.raises(InputError, match="missing from the predictions"):
        evaluate({"e0": "s"}, {"e0": ["s"], "e1": ["s"]}, metrics=["rouge"])


def test_gold_entities_need_summaries(tmp_path):
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"entity_id": "a", "reviews": ["r"], "summaries": ["ok"]},
            {"entity_id": "b", "reviews": ["r"]},
        ],
    )
    with pytest.raises(
        InputError,
        match=r"gold.jsonl, field 'summaries': 1 entity has no "
        r"reference summaries: 'b'",
    ):
        load_references(gold)
    write_jsonl(gold, [{"entity_id": "a", "reviews": ["r"], "summaries": ["ok", " "]}])
    with pytest.raises(InputError, match="entity 'a': reference summary 1 is empty"):
        load_references(gold)
    with pytest.raises(InputError, match="no such file"):
        load_references(tmp_path / "missing.jsonl")


# ---------------------------------------------------------------- CLI


@pytest.fixture
def tiny_eval(tmp_path: Path) -> tuple[Path, Path, Path]:
    refs = [
        "the food was great and the staff was friendly",
        "the pizza was cold",
        "we will come back for the tacos",
    ]
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"entity_id": f"b{i}", "reviews": ["a review"], "summaries": [r]}
            for i, r in enumerate(refs)
        ],
    )
    good = write_jsonl(
        tmp_path / "good.jsonl",
        [{"entity_id": f"b{i}", "summary": r.replace("the", "a")} for i, r in enumerate(refs)],
    )
    bad = write_jsonl(
        tmp_path / "bad.jsonl",
        [{"entity_id": f"b{i}", "summary": "nothing to see"} for i in range(3)],
    )
    return gold, good, bad


def test_cli_evaluate_table_json_and_per_entity(tiny_eval, tmp_path):
    gold, good, bad = tiny_eval
    assert "evaluate" in runner.invoke(app, ["--help"]).output
    result = runner.invoke(app, ["evaluate", str(good), str(gold), "--metrics", "rouge,pooled"])
    assert result.exit_code == 0, result.output
    assert "ROUGE-1 F1  (rouge-score)" in result.output and "95% CI" in result.output
    assert "ROUGE-L F1  (pooled, py-rouge style)" in result.output
    assert "length (words): predictions" in result.output

    out = tmp_path / "per_entity.jsonl"
    result = runner.invoke(
        app,
        [
            "evaluate",
            str(good),
            str(gold),
            "--metrics",
            "rouge",
            "--compare",
            str(bad),
            "--per-entity",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["entities"] == 3 and set(data["scores"]) == {"rouge1", "rouge2", "rougeL"}
    test = data["compare"]["tests"]["rouge1"]
    assert test["difference"] > 50 and 0 < test["p_value"] <= 1
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["entity_id"] for r in rows] == ["b0", "b1", "b2"]
    assert rows[0]["compare"]["rouge1"] == 0.0 and rows[0]["rouge1"] > 50

    result = runner.invoke(
        app, ["evaluate", str(good), str(gold), "--compare", str(bad), "--metrics", "rouge"]
    )
    assert "A vs B" in result.output and "approximate randomization" in result.output


def test_cli_evaluate_errors_are_one_line(tiny_eval, tmp_path):
    gold, good, _ = tiny_eval
    short = write_jsonl(tmp_path / "short.jsonl", [{"entity_id": "b0", "summary": "x"}])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "denoisesum.cli",
            "evaluate",
            str(short),
            str(gold),
            "--metrics",
            "rouge",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"error: {short}: entity ids do not match the gold file {gold}" in result.stderr
    result = runner.invoke(app, ["evaluate", str(good), str(gold), "--metrics", "rouge,bleu"])
    assert result.exit_code != 0 and "unknown metric 'bleu'" in str(result.exception)


# ---------------------------------------------------------------- released systems (shared data)

YELP = SHARED_DATA / "yelp"


def _released(system: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    return (
        load_predictions(YELP / "systems" / f"{system}.test.jsonl"),
        load_references(YELP / "meansum_test.jsonl"),
    )


@needs_data
@pytest.mark.parametrize(
    "system, expected",
    [
        ("denoisesum", (29.77, 5.02, 17.63)),
        ("plansum", (34.37, 7.11, 19.66)),
        ("copycat", (28.20, 4.92, 17.53)),
    ],
)
def test_rouge_score_of_released_systems(system, expected):
    report = evaluate(*_released(system), metrics=["rouge"], resamples=100)
    measured = tuple(report.means[m] for m in ("rouge1", "rouge2", "rougeL"))
    assert measured == pytest.approx(expected, abs=0.02)


@needs_data
def test_pooled_rouge_of_released_denoisesum():
    predictions, references = _released("denoisesum")
    report = evaluate(predictions, references, metrics=["pooled"], resamples=100)
    measured = tuple(report.means[f"pooled_{m}"] for m in ("rouge1", "rouge2", "rougeL"))
    # py-rouge itself gives 30.139/4.986/17.651 (checked against the package below).
    assert measured == pytest.approx((30.15, 4.99, 17.66), abs=0.02)
    # The 0.01 left is tokenization: the quoted figures keep "gotta"/"gonna"/"wanna" whole
    # (6 + 1 + 1 in the references), where py-rouge's NLTK tokenizer splits them.
    scorer = PooledRouge(split_contractions=False)
    totals = (
        np.mean(
            [list(scorer.score(predictions[e], refs).values()) for e, refs in references.items()],
            axis=0,
        )
        * 100
    )
    assert tuple(totals) == pytest.approx((30.15, 4.99, 17.66), abs=0.005)


@needs_data
def test_pooled_rouge_matches_the_py_rouge_package(monkeypatch):
    """Our reimplementation against py-rouge itself, made importable: it wants `pkg_resources`
    (only to locate its data files) and NLTK's downloadable Punkt model (which cannot split text
    that has no punctuation left, so the word tokenizer alone is equivalent)."""
    try:
        package_dir = Path(importlib.metadata.distribution("py-rouge").locate_file("rouge"))
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("py-rouge is not installed")
    import nltk
    from nltk.tokenize import NLTKWordTokenizer

    shim = types.ModuleType("pkg_resources")
    shim.resource_filename = lambda _package, name: str(package_dir / name)
    monkeypatch.setitem(sys.modules, "pkg_resources", shim)
    monkeypatch.setattr(
        nltk, "word_tokenize", lambda text, language="english": NLTKWordTokenizer().tokenize(text)
    )
    for name in ("rouge", "rouge.rouge"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    py_rouge = importlib.import_module("rouge.rouge")

    predictions, references = _released("denoisesum")
    ids = list(references)[:40]
    evaluator = py_rouge.Rouge(
        metrics=["rouge-n", "rouge-l"],
        max_n=2,
        limit_length=False,
        apply_avg=False,
        apply_best=False,
        stemming=True,
    )
    theirs = evaluator.get_scores([predictions[e] for e in ids], [references[e] for e in ids])
    ours = [PooledRouge().score(predictions[e], references[e]) for e in ids]
    for ours_key, their_key in (
        ("rouge1", "rouge-1"),
        ("rouge2", "rouge-2"),
        ("rougeL", "rouge-l"),
    ):
        assert [s[ours_key] for s in ours] == pytest.approx(
            [s["f"][0] for s in theirs[their_key]], abs=1e-12
        )


@needs_data
@needs_perl
def test_su4_of_released_denoisesum():
    report = evaluate(*_released("denoisesum"), metrics=["su4"], resamples=100)
    # Measured when this scorer was written (ROUGE-1.5.5 -m -2 4 -u, pooled references).
    assert report.means["su4_recall"] == pytest.approx(8.68, abs=0.01)
