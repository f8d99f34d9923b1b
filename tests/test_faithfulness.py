"""Issue 31's measures and controls: the rating model, clause opinions and self-contradiction,
the opinion set and its report, contradicted evidence, and the summarizer's opinion options
(ratings, slices, steering, length that follows the input, contradiction-free choice)."""

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from conftest import (
    save_tiny_summarizer,
    summaries,
    synthetic_reviews,
    token_summaries,
    write_jsonl,
)
from denoisesum.cli import app
from denoisesum.cli.options import summarize_settings
from denoisesum.data.batch import inference_batch
from denoisesum.data.corpus import Review
from denoisesum.data.tokenizer import detokenize
from denoisesum.errors import DenoiseSumError, InputError
from denoisesum.evaluation.opinion import (
    build_opinion_set,
    is_misleading,
    opinion_report,
    summary_stars,
)
from denoisesum.evaluation.style import unsupported_words
from denoisesum.inference import keep
from denoisesum.inference.beam import SearchConfig, length_bounds
from denoisesum.inference.constraints import WordLists, WordMasks, constraint_mask
from denoisesum.inference.opinion import clauses, self_contradictions, split_clauses
from denoisesum.inference.support import explain
from denoisesum.models.rating import RatingModel, polarity
from denoisesum.summarizer import EmptySliceWarning, Summarizer, SummarizerConfig
from denoisesum.text import SIDE_COUNTED, SIDE_OPENINGS, without_openings
from denoisesum.training.rating import train_rating_model

runner = CliRunner()
GOOD = ["great", "delicious", "amazing", "friendly", "cheap", "clean", "fast"]
BAD = ["terrible", "awful", "rude", "bland", "expensive", "dirty", "slow"]
THINGS = ["food", "staff", "prices", "room", "service", "wait"]


def rated_texts(n: int, seed: int) -> list[tuple[str, float]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        stars = int(rng.integers(1, 6))
        words = GOOD if stars >= 4 else BAD if stars <= 2 else GOOD[:2] + BAD[:2]
        text = " . ".join(f"the {rng.choice(THINGS)} was {rng.choice(words)}" for _ in range(3))
        out.append((text + " .", float(stars)))
    return out


@pytest.fixture(scope="module")
def rating() -> RatingModel:
    model, report = train_rating_model(rated_texts(600, 0), rated_texts(100, 1), min_df=1)
    assert report.polarity_accuracy > 0.8
    return model


def test_numpy_scoring_equals_scikit_learn(rating):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    from denoisesum.models.rating import text_features

    train = rated_texts(600, 0)
    vectorizer = TfidfVectorizer(
        analyzer=text_features, sublinear_tf=True, min_df=1, max_features=200_000, dtype=np.float32
    )
    x = vectorizer.fit_transform([t for t, _ in train])
    clf = LogisticRegression(C=4.0, max_iter=200, solver="saga", tol=1e-3, random_state=0)
    clf.fit(x, np.rint([s for _, s in train]).astype(int))
    texts = ["the food was great .", "the staff was rude and the room was dirty", "unknown"]
    np.testing.assert_allclose(
        rating.probs(texts), clf.predict_proba(vectorizer.transform(texts)), atol=2e-4
    )


def test_rating_reads_opinion_and_survives_a_round_trip(rating, tmp_path):
    good, bad = rating.stars(["the food was great and cheap", "the staff was rude , dirty"])
    assert good > 3.5 > 2.5 > bad
    loaded = RatingModel.load(rating.save(tmp_path))
    np.testing.assert_allclose(
        loaded.stars(["the food was great"]), rating.stars(["the food was great"]), atol=1e-2
    )  # fp16 coef
    (tmp_path / "rating.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match=r"rating\.npz"):
        RatingModel.load(tmp_path)
    with pytest.raises(InputError, match="no rating model"):
        RatingModel.load(tmp_path / "nowhere")


def test_polarity_thresholds():
    assert [polarity(x) for x in (1.0, 2.49, 2.5, 3.5, 3.51)] == [
        "negative",
        "negative",
        "mixed",
        "mixed",
        "positive",
    ]
    assert is_misleading(4.6, 1.8) and is_misleading(4.6, 3.0) and not is_misleading(3.2, 3.0)


def test_clauses_split_at_sentences_turns_commas_and_and():
    tokens = "the food was great , but the staff was rude and slow . we will be back !".split()
    assert [" ".join(c) for _, c in split_clauses(tokens)] == [
        "the food was great",
        "the staff was rude",
        "slow .",
        "we will be back !",
    ]
    assert [s for s, _ in split_clauses(tokens)] == [0, 0, 0, 1]


def test_cues_and_negation():
    from denoisesum.inference.opinion import cue_polarity

    def side(text: str) -> int:
        return cue_polarity(text.split())

    assert side("you will not be disappointed") == 1
    assert side("you will be disappointed") == -1
    assert side("we will not go back") == -1
    assert side("it 's a little pricey") == -1
    assert side("not the best in town") == 0  # a hedge, not a complaint
    assert side("the food is not good") == -1


def test_a_verdict_decides_its_clause_and_short_fragments_assert_nothing(rating):
    [back] = clauses("you wo n't be going back for a quick dinner .", rating)
    assert (back.polarity, back.cued) == (-1, True)  # "quick" is praise; the verdict wins
    [never] = clauses("never again .", rating)
    assert never.polarity == -1
    [fragment] = clauses("the staff rude .", rating)  # three words: not read
    assert (fragment.polarity, fragment.cued) == (-1, True)  # a cue still counts
    [bare] = clauses("the staff there .", rating)
    assert bare.polarity == 0


def test_back_and_return_are_verdicts_only_after_a_verb_of_coming_back():
    from denoisesum.inference.opinion import VERDICT_CUES, cue_polarity, verdict_words

    def verdict(text: str) -> int:
        return cue_polarity(verdict_words(text.split()), VERDICT_CUES)

    assert verdict("we will be back") == 1
    assert verdict("we will not be back") == -1
    assert verdict("i will return") == 1
    assert verdict("the food came back cold") == 0
    assert verdict("we sat in the back") == 0


def test_a_verdict_against_a_plain_opposite_is_a_contradiction(rating):
    against = clauses("we will be back . the staff was rude .", rating)
    assert [p.stars < 1.75 for p in against] == [False, True]
    assert self_contradictions(against) == [(0, 1)]
    detail = clauses("we will be back . the food was terrible .", rating)
    assert detail[1].polarity == -1 and detail[1].stars > 1.75  # reads as a detail
    assert self_contradictions(detail) == []


def test_a_clause_hedging_its_own_strong_opinion_contradicts_itself(rating):
    parts = clauses(
        "worst customer service is average . the food was ok , but staff was rude .", rating
    )
    assert self_contradictions(parts) == [(0, 0)]  # lukewarm and strong apart: no contradiction
    from denoisesum.inference.opinion import check_clauses, clauses_to_cut

    assert clauses_to_cut(parts, check_clauses(parts, {}), {}) == [0]


def test_self_contradiction_needs_one_aspect_both_ways(rating):
    mixed = clauses("the food was great . the staff was rude .", rating)
    assert self_contradictions(mixed) == []  # two aspects: a mixed opinion, not a contradiction
    both = clauses("the prices were cheap . the prices were expensive and awful .", rating)
    assert self_contradictions(both) == [(0, 1)]


def test_what_is_cut_of_a_contradiction_follows_the_reviews(rating):
    from denoisesum.inference.opinion import OVERALL, check_clauses, clauses_to_cut

    parts = clauses("we will be back . the staff was rude .", rating)

    def cut(side: int) -> list[int]:
        sides = {OVERALL: side}
        return clauses_to_cut(parts, check_clauses(parts, sides), sides)

    assert cut(1) == [1]  # praised by the reviews: the complaint goes
    assert cut(-1) == [0]  # panned: the verdict "we will be back" goes
    assert cut(0) == [0]  # mixed: the sweeping verdict goes, the detail stays


def test_reviews_of_both_minds_get_no_sweeping_verdict(rating):
    from denoisesum.inference.opinion import OVERALL, check_clauses, clauses_to_cut, sweeping

    text = (
        "this is the best pizza in town . the crust is thin . we will be back . "
        "you will not be disappointed ."
    )
    parts = clauses(text, rating)
    assert [sweeping(p) for p in parts] == [True, False, True, True]
    sides = {OVERALL: 0}
    check = check_clauses(parts, sides)
    assert clauses_to_cut(parts, check, sides) == []  # no contradiction: the verdicts stay
    assert clauses_to_cut(parts, check, sides, verdicts=False) == [0, 2, 3]


def test_mixed_band_takes_the_verdicts_of_reviews_of_both_minds(summarizer, monkeypatch):
    seen = []

    def cut(tokens, sides, rating, verdicts=True, keeps=0):
        seen.append(verdicts)
        return tokens, False

    monkeypatch.setattr(keep, "cut", cut)

    def consistent(target):
        texts = [" ".join(summarizer.vocab.decode([5, 6, 7]))]
        candidates = [summarizer.vocab.decode([5, 6])]
        policy, rating = summarizer.config.policy, summarizer.rating
        return keep.consistent(candidates, 1, 0, texts, target, policy, rating)

    old = summarizer.config
    summarizer.config = old.with_settings(avoid_contradiction=True, mixed_band=0.25)
    try:
        for target in (3.25, 2.75, 3.5, 2.5, None):
            consistent(target)
        summarizer.config = old.with_settings(avoid_contradiction=True, mixed_band=0.0)
        consistent(3.0)
    finally:
        summarizer.config = old
    assert seen == [False, False, True, True, True, True]


def test_a_clause_at_odds_with_itself_is_cut(rating):
    from denoisesum.inference.opinion import at_odds, check_clauses, clauses_to_cut

    [odd] = clauses("the staff was never rude .", rating)  # a negated complaint
    assert odd.polarity == 1 and odd.stars < 2.25 and at_odds(odd)
    parts = clauses("the food was great . the staff was never rude .", rating)
    assert clauses_to_cut(parts, check_clauses(parts, {}), {}) == [1]
    [plain] = clauses("the staff was friendly .", rating)
    assert not at_odds(plain)


def test_contradicted_evidence_and_the_out_of_domain_warning(rating):
    reviews = ["the food was terrible . the food was bland and awful .", "the wait was slow ."]
    e = explain(reviews, "The food was amazing and cheap. The wait was slow.", rating=rating)
    assert [s.contradicted for s in e.sentences] == [True, False]
    assert not e.sentences[0].supported and e.contradicted_share == 0.5
    assert explain(reviews, "The food was amazing.").sentences[0].score > 0  # words alone
    off = explain(reviews, "The battery lasts. The screen is sharp.", rating=rating)
    assert off.warnings and "supported" in off.warnings[0]


def test_opinion_set_is_stratified_and_the_report_counts(rating):
    reviews = [
        Review(f"e{e}", text, stars)
        for e in range(40)
        for text, stars in [
            (f"the food was {'awful' if e % 2 else 'great'}", 1.0 if e % 2 else 5.0)
        ]
        * 8
    ]
    sets = build_opinion_set(reviews, per_stratum=5, seed=0)
    assert sorted({s["stratum"] for s in sets}) == ["negative", "positive"]
    assert all(len(s["reviews"]) == len(s["ratings"]) == 8 for s in sets)
    assert sum(s["stratum"] == "negative" for s in sets) == 5
    # every summary glowing: the negative stratum is all misleading, the positive agrees
    report, rows = opinion_report(["the food was great ."] * len(sets), sets, rating)
    assert report.strata["negative"].misleading == 1.0
    assert report.strata["positive"].agree == 1.0
    assert len(rows) == len(sets)


def test_a_summary_is_read_by_sentence_and_by_side(rating):
    praise = ["The food was great.", "The staff was friendly.", "The room was clean."]
    complaint = "The service was slow."
    # one-sided: the mean of its sentences, each read alone
    one = " ".join(praise)
    assert summary_stars(one, rating) == pytest.approx(float(np.mean(rating.stars(praise))))
    # two-sided: each side's mean, then the sides' mean, however long each side is
    two = f"Most reviewers praise it: {one} One reviewer complains: {complaint}"
    sides = [float(np.mean(rating.stars(praise))), rating.star(complaint)]
    assert summary_stars(two, rating) == pytest.approx(float(np.mean(sides)))
    assert polarity(summary_stars(two, rating)) == "mixed"
    assert polarity(rating.star(two)) == "positive"  # read at once, as the measures did
    assert summary_stars("", rating) == rating.star("")
    assert summary_stars("Others complain:", rating) == rating.star("")  # not the opening's word


def test_length_bounds_follow_the_input():
    batch = inference_batch([[[5] * 10], [[5] * 10] * 8])  # 10 and 80 words of reviews
    low, high = length_bounds(batch, SearchConfig(min_words=60, max_words=100, length_ratio=0.5))
    assert low.tolist() == [5, 40] and high.tolist() == [15, 80]  # at least 15 words of room
    assert length_bounds(batch, SearchConfig()) is None


def test_end_at_sentence_bans_eos_mid_sentence():
    masks = WordMasks.build(WordLists(sentence_ends=[7]), 10, "cpu")
    history = torch.tensor([[5, 6], [5, 7]])
    ban = constraint_mask(history, masks, SearchConfig(min_words=0, end_at_sentence=True))
    assert ban[:, 3].tolist() == [True, False]  # </s> (id 3) only after a sentence end


# ---- the summarizer's opinion options -------------------------------------------------------

SETTINGS = SummarizerConfig(
    max_review_tokens=12,
    max_reviews=8,
    search=SearchConfig(beam=3, min_words=4, max_words=12),
)


@pytest.fixture(scope="module")
def summarizer(tmp_path_factory, rating) -> Summarizer:
    directory = save_tiny_summarizer(tmp_path_factory.mktemp("m") / "tiny", SETTINGS)
    rating.save(directory)
    return Summarizer.from_pretrained(directory)


def sets_of(n: int = 2) -> tuple[list[list[str]], list[list[float]]]:
    rows = synthetic_reviews(n_entities=n, per_entity=6, seed=3)
    texts = [[r["text"] for r in rows[i * 6 : (i + 1) * 6]] for i in range(n)]
    stars = [[r["rating"] for r in rows[i * 6 : (i + 1) * 6]] for i in range(n)]
    return texts, stars


def test_a_model_directory_brings_its_rating_model(summarizer):
    assert summarizer.rating is not None


def test_target_stars_come_from_the_given_stars_else_the_rating_model(summarizer):
    texts, stars = sets_of(1)
    assert summarizer.target_stars(texts[0], stars[0]) == pytest.approx(np.mean(stars[0]))
    read = summarizer.target_stars(texts[0], [None] * len(texts[0]))
    assert read == pytest.approx(float(summarizer.rating.stars(texts[0]).mean()))


def test_slices_keep_the_complaints_or_the_praise(summarizer):
    texts, stars = sets_of(1)
    kept, kept_stars = summarizer.denoisesum.slice_reviews(texts[0], stars[0], "complaints")
    assert kept and all(s <= 3 for s in kept_stars) and all("rude" in t for t in kept)
    kept, _ = summarizer.denoisesum.slice_reviews(
        texts[0], None, "praise"
    )  # read by the rating model
    assert kept and all("friendly" in t for t in kept)
    with pytest.warns(EmptySliceWarning, match="complaints"):
        assert summaries(
            summarizer, [texts[0][:1] * 2], ratings=[[5.0, 5.0]], slice="complaints"
        ) == [""]
    with pytest.raises(DenoiseSumError, match="slice="):
        summarizer.summarize(texts[0], slice="gossip")
    with pytest.raises(DenoiseSumError, match="ratings"):
        summarizer.summarize(texts[0], ratings=[1.0])


def test_steering_changes_the_words_toward_the_target(summarizer):
    texts, _ = sets_of(1)
    base = summarizer.summarize(texts[0], ratings=[1.0] * 6)
    old = summarizer.config
    try:
        summarizer.config = old.with_settings(opinion_weight=20.0)
        low = summarizer.summarize(texts[0], ratings=[1.0] * 6)
        high = summarizer.summarize(texts[0], ratings=[5.0] * 6)
    finally:
        summarizer.config = old
    assert low != base
    assert summarizer.rating.star(low) < summarizer.rating.star(high)


def test_steering_reaches_at_most_opinion_reach_stars_down(summarizer):
    old = summarizer.config
    try:
        summarizer.config = old.with_settings(opinion_weight=1.0, opinion_tone=4.5)
        free = summarizer.denoisesum._bias(
            [1.0, 3.0, 5.0], summarizer.model, summarizer.config.decoding
        )
        summarizer.config = old.with_settings(opinion_weight=1.0, opinion_reach=2.0)
        capped = summarizer.denoisesum._bias(
            [1.0, 3.0, 5.0], summarizer.model, summarizer.config.decoding
        )
    finally:
        summarizer.config = old
    pull = capped[0] / -2.0  # [V] each word's pull
    assert torch.allclose(free[0], -3.5 * pull) and torch.allclose(capped[1], -1.5 * pull)
    assert not capped[2].any()  # reviews above opinion_tone are not steered


def test_contradiction_free_choice_ends_at_a_sentence(summarizer):
    texts, stars = sets_of(2)
    old = summarizer.config
    try:
        summarizer.config = old.with_settings(avoid_contradiction=True, max_words=30, min_words=8)
        out = token_summaries(summarizer, texts, ratings=stars)
    finally:
        summarizer.config = old
    for tokens in out:
        assert tokens and (tokens[-1] in ".!?" or "." not in tokens)


def mixed_set() -> list[str]:
    return sets_of(1)[0][0]  # six reviews; the tests give their stars


@pytest.fixture
def decode_calls(summarizer, monkeypatch) -> list[tuple]:
    """Each _decode call of the summarizer: (entities, targets, verdicts (not a side), min and
    max length)."""
    calls, decode = [], summarizer.denoisesum._decode

    def spy(encoded, batch_size, decoding, targets=None, side=False):
        d = decoding.search
        calls.append((len(encoded), targets, not side, d.min_words, d.max_words))
        return decode(encoded, batch_size, decoding, targets, side)

    monkeypatch.setattr(summarizer.denoisesum, "_decode", spy)
    return calls


def test_mixed_sides_summarize_the_praise_and_the_complaints_apart(summarizer, decode_calls):
    calls = decode_calls
    old = summarizer.config
    summarizer.config = old.with_settings(
        avoid_contradiction=True, mixed_band=0.5, mixed_sides=True, min_words=6
    )
    try:
        both = summarizer.summarize(mixed_set(), ratings=[5.0, 4.0, 5.0, 1.0, 2.0, 1.0])
        complaints_first = summarizer.summarize(mixed_set()[1:], ratings=[4, 5, 1, 2, 1])
        calls.clear()
        no_complaint = summarizer.summarize(mixed_set(), ratings=[3.0, 3.0, 4.0, 3.0, 3.0, 3.0])
    finally:
        summarizer.config = old
    assert both.startswith("Some reviewers praise it: ") and " Others complain: " in both
    assert complaints_first.startswith("Some reviewers complain: ")
    assert " Others praise it: " in complaints_first
    # a 3-star review is of both minds itself: the last set has no complaints, it is whole
    assert calls == [(1, [pytest.approx(19 / 6)], True, 6, 12)]
    assert not no_complaint.startswith("Some reviewers")


def test_mixed_sides_splits_only_reviews_of_both_minds(summarizer, decode_calls):
    calls = decode_calls
    old = summarizer.config
    summarizer.config = old.with_settings(mixed_band=0.25, mixed_sides=True, min_words=6)
    ratings = [[5.0, 4.0, 5.0, 1.0, 2.0, 1.0], [5.0, 4.0, 5.0, 4.0, 2.0, 1.0]]
    try:
        summaries(summarizer, [mixed_set(), mixed_set()], ratings=ratings)
    finally:
        summarizer.config = old
    # the first set is split: each side alone, in half the words, with no verdict on the place
    whole, sides = calls
    assert whole == (1, [pytest.approx(3.5)], True, 6, 12)  # 3.5 stars: outside the band
    assert sides == (2, [pytest.approx(14 / 3), pytest.approx(4 / 3)], False, 3, 6)


def test_side_shares_count_the_reviewers_and_share_the_words(summarizer, decode_calls):
    calls = decode_calls
    old = summarizer.config
    summarizer.config = old.with_settings(
        mixed_band=0.5, mixed_sides=True, side_shares=True, min_words=6
    )
    try:  # four of six praise, one complains, one is of both minds (3 stars): 3.33 stars
        lopsided = summarizer.summarize(mixed_set(), ratings=[4.0, 4.0, 4.0, 4.0, 1.0, 3.0])
        calls.clear()
        even = summarizer.summarize(mixed_set(), ratings=[5.0, 4.0, 5.0, 1.0, 2.0, 1.0])
    finally:
        summarizer.config = old
    assert lopsided.startswith("Most reviewers praise it: ")
    assert " One reviewer complains: " in lopsided
    # three against three: halves, and neither side holds most of the reviews
    assert calls[-1] == (2, [pytest.approx(14 / 3), pytest.approx(4 / 3)], False, 3, 6)
    assert even.startswith("Some reviewers praise it: ") and " Others complain: " in even


def test_side_shares_give_the_larger_side_two_thirds_of_the_words(summarizer, decode_calls):
    old = summarizer.config
    summarizer.config = old.with_settings(
        mixed_band=0.5, mixed_sides=True, side_shares=True, min_words=6, max_words=12
    )
    try:
        summarizer.summarize(mixed_set(), ratings=[4.0, 4.0, 4.0, 4.0, 1.0, 3.0])
    finally:
        summarizer.config = old
    # nothing whole; one decode per share, the smaller first: the complaint in a third of the
    # words, the praise in two
    assert decode_calls == [
        (0, [], True, 6, 12),
        (1, [pytest.approx(1.0)], False, 2, 4),
        (1, [pytest.approx(4.0)], False, 4, 8),
    ]


def test_side_polarity_keeps_each_side_to_its_side(summarizer, monkeypatch):
    """The praise side's candidates lose their complaints, the complaints' their praise; a
    summary told whole is cut as before."""
    keeps, cut = [], keep.cut

    def spy(tokens, sides, rating, verdicts=True, keeps_side=0):
        keeps.append(keeps_side)
        return cut(tokens, sides, rating, verdicts, keeps_side)

    monkeypatch.setattr(keep, "cut", spy)
    old = summarizer.config
    summarizer.config = old.with_settings(
        avoid_contradiction=True, mixed_band=0.5, mixed_sides=True, side_polarity=True
    )
    try:
        summarizer.summarize(mixed_set(), ratings=[5.0, 4.0, 5.0, 1.0, 2.0, 1.0])
        assert set(keeps) == {1, -1}
        keeps.clear()
        summarizer.summarize(mixed_set(), ratings=[5.0, 4.0, 5.0, 4.0, 5.0, 4.0])
        assert set(keeps) == {0}
    finally:
        summarizer.config = old


def test_a_side_loses_the_sentences_of_the_other_side(summarizer):
    praise = "the food is great . the staff was rude and slow .".split()
    assert keep.cut(praise, {}, summarizer.rating, False, 1) == (
        "the food is great .".split(),
        True,
    )
    assert keep.cut(praise, {}, summarizer.rating, False, -1) == (
        "the staff was rude and slow .".split(),
        True,
    )
    assert keep.cut(praise, {}, summarizer.rating, False) == (
        praise,
        False,
    )  # not a side: as before
    # where every sentence is of the other side, the first stays
    assert keep.cut("the staff was rude .".split(), {}, summarizer.rating, False, 1)[0] == (
        "the staff was rude .".split()
    )


def test_turning_the_sides_off_turns_off_what_works_on_them(summarizer, tmp_path):
    """mixed_sides=False (or mixed_band=0) per call or by --set: one summary, whatever
    side_shares and side_polarity say, which only work on sides."""
    old = summarizer.config
    summarizer.config = old.with_settings(
        avoid_contradiction=True,
        mixed_band=0.5,
        mixed_sides=True,
        side_shares=True,
        side_polarity=True,
    )
    stars = [5.0, 4.0, 5.0, 1.0, 2.0, 1.0]
    try:
        assert summarizer.summarize(mixed_set(), ratings=stars).startswith("Some reviewers")
        for off in ({"mixed_sides": False}, {"mixed_band": 0.0}):
            assert not summarizer.summarize(mixed_set(), ratings=stars, **off).startswith("Some")
        config = summarize_settings(summarizer.config, ["policy.mixed_sides=false"], {})
        assert not config.policy.mixed_sides and config.policy.side_shares
    finally:
        summarizer.config = old


def test_two_sides_of_a_summary_do_not_contradict_each_other(rating):
    text = "Some reviewers praise it: the food was great. Others complain: the food was bland."
    parts = clauses(text, rating)
    assert [(p.side, p.sentence, p.text) for p in parts] == [
        (1, 0, "the food was great ."),
        (2, 1, "the food was bland ."),
    ]
    assert self_contradictions(parts) == []
    assert self_contradictions(clauses(without_openings(text), rating)) == [(0, 1)]


def test_the_openings_of_sides_are_framing_not_claims():
    counted = [o for pair in SIDE_COUNTED.values() for o in pair.values()]
    for opening in [o for pair in SIDE_OPENINGS.values() for o in pair] + counted:
        assert without_openings(f"{opening} the food was great .") == "the food was great ."
        readable = detokenize(f"{opening} the food was great .".split())
        assert without_openings(readable) == "the food was great."
    reviews = ["the food was great .", "the wait was long ."]
    assert unsupported_words("Others complain: the wait was long.", reviews) == 0
    framed = explain(reviews, "Some reviewers praise it: the food was great.")
    assert framed.sentences[0].score == explain(reviews, "The food was great.").sentences[0].score


def test_a_cut_candidate_is_never_clean_nor_ends_mid_sentence(summarizer):
    from denoisesum.inference.opinion import OVERALL

    panned = {OVERALL: -1}
    kept, offending = keep.cut("we will be back .".split(), panned, summarizer.rating)
    assert offending and kept == "we will be back .".split()  # nothing else to keep, not clean
    kept, offending = keep.cut("we will be back . the staff was".split(), panned, summarizer.rating)
    assert offending and kept == "we will be back .".split()  # never the unfinished tail
    kept, offending = keep.cut(
        "the staff was rude . we will be back .".split(), panned, summarizer.rating
    )
    assert offending and kept == "the staff was rude .".split()
    assert keep.cut("the staff was rude .".split(), panned, summarizer.rating) == (
        "the staff was rude .".split(),
        False,
    )


def test_opinion_commands(tmp_path, rating):
    corpus = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"entity_id": f"e{e}", "text": t, "rating": s}
            for e in range(12)
            for t, s in rated_texts(10, e)
        ],
    )
    sets = tmp_path / "sets.jsonl"
    result = runner.invoke(app, ["opinion-set", str(corpus), "-o", str(sets), "--size", "4"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in sets.read_text().splitlines()]
    assert rows and all(r["stratum"] in ("negative", "mixed", "positive") for r in rows)
    model_dir = tmp_path / "rating"
    rating.save(model_dir)
    preds = write_jsonl(
        tmp_path / "p.jsonl",
        [{"entity_id": r["entity_id"], "summary": "the food was great ."} for r in rows],
    )
    result = runner.invoke(
        app, ["opinion", str(preds), str(sets), "--rating-model", str(model_dir), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.output)["strata"]) <= {"negative", "mixed", "positive"}
    short = write_jsonl(tmp_path / "short.jsonl", [{"entity_id": "x", "summary": "s"}])
    result = runner.invoke(
        app, ["opinion", str(short), str(sets), "--rating-model", str(model_dir)]
    )
    assert result.exit_code != 0 and "no summary" in str(result.exception or result.output)


def test_per_call_options(summarizer):
    texts, _ = sets_of(1)
    before = summarizer.config
    short = summarizer.summarize(texts[0], max_words=6)
    assert len(summarizer.vocab.tokenizer.tokenize(short)) <= 6
    assert summarizer.config == before  # for that call only
    assert summarizer.summarize(texts[0], beam=1) == summaries(summarizer, [texts[0]], beam=1)[0]
    # SearchConfig's own names are options too (a length cap by either name)
    assert summarizer.summarize(texts[0], max_words=6) == short
    with pytest.raises(DenoiseSumError, match="unknown option 'max_len'; valid options: max_words"):
        summarizer.summarize(texts[0], max_len=5)
    with pytest.raises(DenoiseSumError, match="option beam"):
        summarizer.summarize(texts[0], beam=0)
    assert summarizer.config == before


def test_against_reviews_scopes(rating):
    from denoisesum.inference.opinion import check_opinion

    reviews = ["the staff was rude .", "the staff was rude and slow ."] * 2
    summary = "the staff was friendly ."
    assert check_opinion(summary, reviews, rating, scope="all").against_reviews == [0]
    assert check_opinion(summary, reviews, rating, scope="overall").against_reviews == []
    assert check_opinion(summary, reviews, rating, scope="off").against_reviews == []


def test_cli_max_words_ends_at_a_sentence(tmp_path, summarizer):
    sets = write_jsonl(
        tmp_path / "sets.jsonl",
        [{"entity_id": f"e{i}", "reviews": reviews} for i, reviews in enumerate(sets_of(2)[0])],
    )
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app,
        [
            "summarize",
            str(sets),
            "--model",
            str(summarizer.path),
            "--max-words",
            "8",
            "--raw",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    for line in out.read_text().splitlines():
        tokens = json.loads(line)["summary"].split()
        assert len(tokens) <= 8 and (tokens[-1] in ".!?" or "." not in tokens)
