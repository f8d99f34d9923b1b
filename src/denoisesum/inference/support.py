"""Evidence for a summary: which input reviews support each of its sentences, and how well.

    from denoisesum.inference.support import explain
    explanation = explain(reviews, summary)           # or Summarizer.explain(reviews, summary)
    explanation.supported_share                       # 0.75: 3 of 4 sentences supported
    explanation.sentences[0].reviews[0]               # ReviewSupport(index=4, score=0.83, ...)

Method (lexical, fast, no model needed, so it also works for baselines and human summaries):

1. **Sentences.** The summary is split after `.`, `!`, `?` or `…` (and closing quotes or
   brackets) followed by white space or the end, and at line breaks; each sentence keeps its
   character span in the summary (`start`, `end`), so a page can highlight the original text.
2. **Content words.** Sentences and reviews are tokenized with the project `Tokenizer`; content
   words are lower-cased tokens holding a letter or digit that are not function words
   (`text.STOPWORDS`: articles, pronouns, auxiliaries, prepositions, conjunctions, clitics,
   negations and a few empty adverbs), with a light plural folding (`noodles` = `noodle`,
   `berries` = `berry`, `dishes` = `dish`; `text.fold`).
3. **Weights.** Each content word w weighs idf(w) = ln((N + 1) / (df(w) + 1)) + 1, where N is
   the number of input reviews and df(w) the number of them that contain w: IDF over the input
   reviews of this set, smoothed so that a word found in every review still counts (weight 1)
   and a word found in none weighs the most (ln(N + 1) + 1), since an unsupported word is the
   strongest sign of an unsupported claim. The statistics are the set's own: no corpus table
   is needed, and the scores of one set do not depend on any other.
4. **Score.** A review supports a sentence with the IDF-weighted share of the sentence's
   distinct content words that the review contains (a recall in [0, 1]; 1: every content word
   of the sentence is in the review). A sentence's score is its best review's score; it is
   **supported** when that score is at least `SupportConfig.threshold` (0.5: one review holds at
   least half of the sentence's content, by weight). A sentence without content words ("It
   is.") claims nothing and counts as supported, with score 1 and no reviews.
5. **Summary.** `supported_share` is the share of supported sentences (0 for an empty summary).

6. **Opinion** (with a rating model, models/rating.py). A sentence whose words match reviews
   but whose opinion is the opposite of theirs is **contradicted**, not supported: the rating
   model reads the sentence, and the sentences of its supporting reviews that use the words it
   shares with them; if one reads positive and the other negative (the clause thresholds of
   inference/opinion.py), word overlap is not support ("the breakfast buffet is pretty good"
   against "the buffet was cold").
7. **Warning.** When fewer than half of the sentences are supported, `warnings` says the
   reviews may lie outside what the model knows (its summary is likely invented).

Each sentence lists its best reviews (at most `top_k`, score at least `min_score`) with the
content words they share with it (`matched`), and the content words found in no review at all
(`missing`). Word overlap cannot see negation or paraphrase: "the staff was not friendly" is
supported by "the staff was friendly", and "the waiter was rude" by nothing that says
"unpleasant server". It is evidence to check, not a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import ClassVar

import regex

from denoisesum.config import Range, at_least, between, check
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import DenoiseSumError
from denoisesum.inference.opinion import NEGATIVE_CLAUSE, POSITIVE_CLAUSE
from denoisesum.models.rating import RatingModel
from denoisesum.text import content_words, fold, idf_table, without_openings

# a sentence ends after . ! ? … (runs of them, then closing quotes/brackets) before white space
# or the end of the text; a line break ends one too
_SENTENCE_RE = regex.compile(
    r"\S.*?(?:(?<=[.!?\u2026])(?=\s|\Z)|[.!?\u2026]+[\"'\u201d\u2019)\]]*(?=\s|\Z)"
    r"|(?=[ \t]*\n)|\Z)",
    regex.DOTALL,
)


@dataclass
class SupportConfig:
    threshold: float = 0.5  # a sentence is supported when its best review scores at least this
    min_score: float = 0.2  # reviews listed as support score at least this ...
    top_k: int = 5  # ... and at most this many of them, best first
    # each setting's valid values (config.py checks them)
    BOUNDS: ClassVar[dict[str, Range]] = {
        "threshold": between(0, 1),
        "min_score": between(0, 1),
        "top_k": at_least(0),
    }


@dataclass
class ReviewSupport:
    index: int  # position of the review in the input list
    score: float  # IDF-weighted share of the sentence's content words found in this review
    matched: list[str] = field(default_factory=list)  # those words, as the sentence spells them


@dataclass
class SentenceSupport:
    text: str
    start: int  # character span of the sentence in the summary
    end: int
    score: float  # the best review's score (1.0 for a sentence without content words)
    supported: bool
    reviews: list[ReviewSupport] = field(default_factory=list)  # best first
    missing: list[str] = field(default_factory=list)  # content words found in no review
    contradicted: bool = False  # the supporting reviews say the opposite (step 6)
    stars: float | None = None  # the rating model's reading of the sentence


@dataclass
class Explanation:
    summary: str
    sentences: list[SentenceSupport]
    supported_share: float  # share of supported sentences (0.0 for an empty summary)
    threshold: float
    contradicted_share: float = 0.0  # share of contradicted sentences
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans (start, end) of the sentences of a text (rules in the module docstring)."""
    return [match.span() for match in _SENTENCE_RE.finditer(text)]


def keyed_content_words(tokens: Sequence[str]) -> list[tuple[str, str]]:
    """(folded key, lower-cased word) of each content word of a token list, in order."""
    return [(fold(word), word) for word in content_words(tokens)]


def explain(
    reviews: Sequence[str],
    summary: str,
    tokenizer: Tokenizer | None = None,
    config: SupportConfig | None = None,
    rating: RatingModel | None = None,
    framing: regex.Pattern | None = None,
) -> Explanation:
    """Support of each sentence of `summary` by the `reviews` (method: module docstring);
    with a rating model, contradicted sentences too. framing: words a method adds around what
    the reviews say ("one reviewer", "reviewers are divided"), left out like the sides'
    openings."""
    if isinstance(reviews, str) or not isinstance(reviews, Sequence):
        raise DenoiseSumError(
            f"reviews must be a list of review texts, got {type(reviews).__name__}"
        )
    if not isinstance(summary, str):
        raise DenoiseSumError(f"summary must be text, got {type(summary).__name__}")
    for i, text in enumerate(reviews):
        if not isinstance(text, str):
            raise DenoiseSumError(f"review {i} is a {type(text).__name__}, not text")
    tokenizer = tokenizer or Tokenizer()
    config = config or SupportConfig()
    check(config)

    review_words = [{key for key, _ in keyed_content_words(tokenizer.tokenize(t))} for t in reviews]
    table, unseen = idf_table(review_words)  # step 3's idf(w) is this + 1

    sentences = []
    for start, end in split_sentences(summary):
        text = summary[start:end]
        spelled: dict[str, str] = {}  # folded key -> the sentence's first spelling
        claim = without_openings(text)
        if framing is not None:
            claim = framing.sub(" ", claim)
        for key, word in keyed_content_words(tokenizer.tokenize(claim)):
            spelled.setdefault(key, word)
        if not spelled:
            sentences.append(SentenceSupport(text, start, end, 1.0, True))
            continue
        weights = {key: table.get(key, unseen) + 1.0 for key in spelled}
        total = sum(weights.values())
        scored = []
        for index, words in enumerate(review_words):
            shared = [key for key in spelled if key in words]
            if shared:
                score = sum(weights[key] for key in shared) / total
                scored.append(
                    ReviewSupport(index, round(score, 4), [spelled[key] for key in shared])
                )
        scored.sort(key=lambda r: (-r.score, r.index))
        best = scored[0].score if scored else 0.0
        listed = [r for r in scored if r.score >= config.min_score][: config.top_k]
        missing = [spelled[key] for key in spelled if key not in table]
        sentence = SentenceSupport(
            text, start, end, best, best >= config.threshold, listed, missing
        )
        if rating is not None:
            _check_opinion(sentence, reviews, rating, tokenizer)
        sentences.append(sentence)
    return _summarize(summary, sentences, config.threshold)


def _summarize(summary: str, sentences: list[SentenceSupport], threshold: float) -> Explanation:
    n = len(sentences)
    share = sum(s.supported for s in sentences) / n if n else 0.0
    contradicted = sum(s.contradicted for s in sentences) / n if n else 0.0
    warnings = []
    if n and share < 0.5:
        warnings.append(
            f"only {share:.0%} of the summary's sentences are supported by the "
            "reviews: they may be outside what the model knows, and the summary "
            "is likely invented"
        )
    return Explanation(
        summary, sentences, round(share, 4), threshold, round(contradicted, 4), warnings
    )


def _side(stars: float) -> int:
    return 1 if stars > POSITIVE_CLAUSE else -1 if stars < NEGATIVE_CLAUSE else 0


def _check_opinion(
    sentence: SentenceSupport, reviews: Sequence[str], rating: RatingModel, tokenizer: Tokenizer
) -> None:
    """Mark a sentence contradicted when it reads the opposite of the review sentences that
    share its words (step 6)."""
    sentence.stars = round(rating.star(sentence.text), 3)
    side = _side(sentence.stars)
    if not side or not sentence.reviews:
        return
    evidence = []
    for support in sentence.reviews:
        words = {fold(w) for w in support.matched}
        text = reviews[support.index]
        for start, end in split_sentences(text):
            part = text[start:end]
            if words & {key for key, _ in keyed_content_words(tokenizer.tokenize(part))}:
                evidence.append(part)
    # the opinionated evidence decides, by majority: neutral sentences ("we tried the buffet")
    # neither support nor contradict an opinion
    sides = sum(_side(float(x)) for x in rating.stars(evidence)) if evidence else 0
    if side * sides < 0:
        sentence.contradicted, sentence.supported = True, False


def format_explanation(explanation: Explanation, indent: str = "  ") -> str:
    """The per-sentence support as text for people (the `summarize --explain` text format)."""
    lines = []
    for s in explanation.sentences:
        mark = "CONTRADICTED" if s.contradicted else "supported" if s.supported else "UNSUPPORTED"
        lines.append(f"{indent}[{mark} {s.score:.2f}] {s.text}")
        if s.reviews:
            shown = ", ".join(
                f"#{r.index} ({r.score:.2f}: {' '.join(r.matched)})" for r in s.reviews
            )
            lines.append(f"{indent}{indent}reviews: {shown}")
        if s.missing:
            lines.append(f"{indent}{indent}in no review: {' '.join(s.missing)}")
    count = sum(s.supported for s in explanation.sentences)
    lines.append(
        f"{indent}{count} of {len(explanation.sentences)} sentences supported "
        f"({explanation.supported_share:.0%}, threshold {explanation.threshold:.2f})"
    )
    contradicted = sum(s.contradicted for s in explanation.sentences)
    if contradicted:
        lines.append(f"{indent}{contradicted} contradicted by the reviews' opinion")
    lines.extend(f"{indent}warning: {w}" for w in explanation.warnings)
    return "\n".join(lines)
