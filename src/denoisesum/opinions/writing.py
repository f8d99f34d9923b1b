"""Writing an opinion as one sentence: the review sentence that says it best, in the third person.

The sentences of one opinion are noisy versions of it (the paper's idea at the level of a
sentence); the one that says it best is the one the others agree with most (the mean cosine
of their content words' TF-IDF vectors, the set's own IDF), that names the aspect, reads on its
own (no opening "it", "they", "but", no question), is neither a fragment nor a ramble, and keeps
its specifics (numbers, named dishes: `specific_words`). It is then told in the third person:
"I loved the broth" -> "One reviewer loved the broth"; "we waited 30 minutes" -> "Reviewers
waited 30 minutes"; "the broth was rich" -> "The broth is rich" when a sentence opens with
its aspect, since a summary describes the place as it is.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import regex

from denoisesum.opinions.sentences import Sentence
from denoisesum.text import content_words, fold

MIN_WORDS, MAX_WORDS = 5, 24
# an opinion's sentences weighed (the first ones, in review order) and the others each is
# compared with: a bounded cost, whatever the number of reviews
MAX_CANDIDATES, MAX_OTHERS = 120, 50
# a sentence opening with one of these leans on the one before it
_LEANS = frozenset(
    """it it's its they they're their them this that these those he she him her his which
    also and but so or then plus though although however because anyway still too yes no
    well oh lol haha ok okay otherwise again besides additionally instead meanwhile now
    apparently regardless therefore thus hence secondly finally lastly next actually""".split()
)
# a sentence about the review itself, not the place
_META = frozenset("star stars review reviews yelp yelpers rating rate rated update edit".split())
_FIRST_SINGULAR = {"i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself"}
_FIRST_PLURAL = {"we", "we're", "we've", "we'd", "we'll", "us", "our", "ours", "ourselves"}
# first-person words -> the third person, after the subject has been named
_THIRD = {
    "i": "they", "we": "they", "me": "them", "us": "them", "my": "their", "our": "their",
    "mine": "theirs", "ours": "theirs", "myself": "themselves", "ourselves": "themselves",
    "i'm": "they're", "we're": "they're", "i've": "they've", "we've": "they've",
    "i'd": "they'd", "we'd": "they'd", "i'll": "they'll", "we'll": "they'll",
}  # fmt: skip
_PRESENT = {"was": "is", "were": "are"}


def first_person(tokens: Sequence[str]) -> bool:
    return any(t in _FIRST_SINGULAR or t in _FIRST_PLURAL for t in tokens)


def readable(sentence: Sentence) -> bool:
    """Whether a review sentence can stand alone in a summary."""
    text = sentence.text
    n = len(text.split())
    if sentence.piece or (sentence.cased and not (text[0].isupper() or text[0].isdigit())):
        return False  # a fragment
    if first_person(sentence.tokens) and not convertible(sentence.tokens):
        return False
    if not MIN_WORDS <= n <= MAX_WORDS or "?" in text or "http" in text or "@" in text:
        return False
    letters = [c for c in text if c.isalpha()]
    if not letters or sum(c.isupper() for c in letters) > 0.3 * len(letters):
        return False  # SHOUTING, or no words at all
    first = sentence.tokens[0] if sentence.tokens else ""
    if first in _LEANS or not text[0].isalnum() or _META.intersection(sentence.tokens):
        return False
    if first in _NO_SUBJECT or _leans_at_end(sentence.tokens):
        return False
    if first in _SUBORDINATE and "," not in sentence.tokens:
        return False  # a clause without its main one ("When times are tough and ...")
    if _refers_back(sentence):
        return False
    if _GLUED_WORDS.search(text):
        return False  # words run together ("MusegadesLas VegasHair"): text lost its spaces
    shouting = any(len(w) > 3 and w.isupper() for w in regex.findall(r"\p{L}+", text))
    return not shouting and text.count("!") <= 1 and not any(m in text for m in _MARKS)


_MARKS = ("...", '"', "--", "`", "  ")
# a sentence opening with one of these has lost its subject, and what it was is unclear ("Came
# in a sweet sauce": the dish; "Was told 20 minutes": the reviewer); first-person ones that are
# clear ("Love the broth") are told with their reviewer instead (_DROPPED_I)
_NO_SUBJECT = frozenset("came was were had got is are has does did seemed looks".split())
# a sentence opening with one of these and without a comma is a subordinate clause alone
_SUBORDINATE = frozenset("when whenever while since unless until if after before as".split())
# a sentence ending with one of these adds to the one before it ("The service is good too.")
_ENDS_LEANING = (("either",), ("too",), ("as", "well"), ("also",))


def _leans_at_end(tokens: Sequence[str]) -> bool:
    words = [t for t in tokens if any(c.isalnum() for c in t)]
    return any(tuple(words[-len(end) :]) == end for end in _ENDS_LEANING)


_GLUED_WORDS = regex.compile(r"(?<!\bMc)(?<!\bMac)(?<!\bi)\p{Ll}{2}\p{Lu}")


_BACK = frozenset("it it's they them this that these those he she him her his".split())


def _refers_back(sentence: Sentence) -> bool:
    """Whether a pronoun comes before anything the sentence names ("Mix it with the white
    sauce"): it stands for something in the sentence before, which the summary does not have."""
    folded = [fold(t) for t in sentence.tokens]
    heads = {a.split()[-1] for a in sentence.aspects}
    for token, key in zip(sentence.tokens, folded, strict=True):
        if key in heads:
            return False
        if token in _BACK:
            return True
    return False


def convertible(tokens: Sequence[str]) -> bool:
    """Whether third_person can tell a first-person sentence well: its reviewer is its subject
    at the start ("I loved", "We waited", "My ramen"), the verb after "I"/"we" is one whose
    agreement is known, and no later "I" or "we" needs a verb of its own."""
    persons = [i for i, t in enumerate(tokens) if t in _FIRST_SINGULAR or t in _FIRST_PLURAL]
    if not persons or persons[0] > 1:
        return False
    subjects = [i for i in persons if tokens[i] in ("i", "we")]
    if len(subjects) > 1 or (subjects and subjects[0] != persons[0]):
        return False
    if not subjects:
        return True  # "my ramen was cold"
    after = [t for t in tokens[subjects[0] + 1 :] if t not in _ADVERBS][:1]
    return bool(after) and (
        after[0] in _PRESENT_VERBS
        or after[0] in _KNOWN_VERBS
        or after[0].endswith("ed")
        or after[0] in ("'m", "'ve", "'d", "'ll", "'re")
    )


_KNOWN_VERBS = frozenset(
    """am are was were have had do did does will would can could should must might may
    went got ate came took left saw found thought felt made paid gave told said sat tried
    bought brought spent knew kept heard""".split()
)


def specific_words(tokens: Sequence[str], aspects: Sequence[str]) -> int:
    """What makes a sentence particular: numbers (prices, waits) and the words of compound
    aspects ("pork ramen", "front desk")."""
    numbers = sum(any(c.isdigit() for c in t) for t in tokens)
    return numbers + sum(len(a.split()) - 1 for a in aspects)


def vectors_of(sentences: Sequence[Sentence]) -> list[dict[str, float]]:
    bags = [Counter(fold(w) for w in content_words(s.tokens)) for s in sentences]
    df = Counter(w for bag in bags for w in bag)
    n = len(bags)
    out = []
    for bag in bags:
        vec = {w: (1 + math.log(c)) * math.log((n + 1) / (df[w] + 1) + 1) for w, c in bag.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        out.append({w: v / norm for w, v in vec.items()})
    return out


def unit_bag(tokens: Sequence[str]) -> dict[str, float]:
    """A text's distinct content words (folded) as a unit vector."""
    words = {fold(w) for w in content_words(tokens)}
    return dict.fromkeys(words, 1 / math.sqrt(len(words))) if words else {}


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(w, 0.0) for w, v in a.items())


def ranked_sentences(
    group: Sequence[Sentence],
    polarity: int,
    aspect: str = "",
    vocabulary: frozenset[str] = frozenset(),
    strict: bool = True,
    fluency: Callable[[Sequence[Sentence]], list[float]] | None = None,
) -> list[int]:
    """The indices in `group` of the sentences that can stand alone, best first: the one the
    others agree with most, of a reader's length, an opinion rather than a story ("we ordered
    the ramen"), as strong as the opinion, of one mind, and with its specifics. With
    `fluency` (fluency.Scores), the FLUENT_TOP best are re-weighed by how well they read."""
    # a sentence says a complaint or praise in its own words, or it is a story ("stopped in
    # for a sandwich") that only its review's stars make one
    candidates = [
        i
        for i, s in enumerate(group)
        if readable(s) and (polarity == 0 or s.felt == polarity or not strict)
    ][:MAX_CANDIDATES]
    if not candidates:
        return []
    step = max(1, len(group) // MAX_OTHERS)  # agreement with a bounded sample of the others
    others = list(range(0, len(group), step))
    read = sorted(set(candidates) | set(others))
    vectors = dict(zip(read, vectors_of([group[i] for i in read]), strict=True))

    def score(i: int) -> float:
        s = group[i]
        agree = sum(cosine(vectors[i], vectors[j]) for j in others if j != i) / len(others)
        stars = s.aspect_stars.get(aspect, s.stars)
        strong = 1.0 + 0.3 * min(2.0, abs(stars - 3.0)) * (polarity != 0)
        detail = 1 + 0.15 * specific_words(s.tokens, s.aspects)
        mind = 0.7 if s.contrast else 1.0
        focus = 1.8 if aspect and aspect.split()[-1] in (fold(t) for t in s.tokens[:4]) else 1.0
        known = (
            0.5 ** sum(t.isalpha() and t not in vocabulary for t in s.tokens) if vocabulary else 1
        )
        return (
            (agree + 0.05) * _shape(s) * _voice(s.tokens) * strong * detail * mind * focus * known
        )

    scores = {i: score(i) for i in candidates}
    ranked = sorted(candidates, key=lambda i: (-scores[i], i))
    if fluency is None:
        return ranked
    top = ranked[:FLUENT_TOP]
    slor = dict(zip(top, fluency([group[i] for i in top]), strict=True))
    fluent = [i for i in top if slor[i] >= SLOR_MIN]
    return (
        sorted(fluent, key=lambda i: (-scores[i] * fluent_weight(slor[i]), i)) + ranked[FLUENT_TOP:]
    )


# fluency: the best sentences of an opinion weighed by their SLOR (fluency.py), from FLUENT_FLOOR
# at SLOR_LOW to 1 at SLOR_HIGH and above; below SLOR_MIN a sentence is not quoted (on dev:
# "Nachos have squeeze cheese and cold chicken."). Names and rare dishes lower a sentence's
# SLOR too ("Rebecca, or Sleeping Beauty as the kids called her, was wonderful.": 1.25), so the
# bar is low: it keeps out garbled text, and weighs the rest
FLUENT_TOP = 12
SLOR_MIN, SLOR_LOW, SLOR_HIGH, FLUENT_FLOOR = 1.0, 1.5, 4.0, 0.1


def fluent_weight(slor: float) -> float:
    return min(1.0, max(FLUENT_FLOOR, (slor - SLOR_LOW) / (SLOR_HIGH - SLOR_LOW)))


_EVALUATIVE_VERBS = frozenset(
    "love loved like liked recommend recommended enjoy enjoyed adore adored hate hated "
    "prefer preferred appreciate appreciated".split()
)


def _voice(tokens: Sequence[str]) -> float:
    """1 for a sentence about the place; less for one about the reviewer, least for a story."""
    if not first_person(tokens):
        return 1.0
    return 0.85 if _EVALUATIVE_VERBS.intersection(tokens) else 0.35


def _shape(s: Sentence) -> float:
    n = len(s.text.split())
    length = 1.0 if 6 <= n <= 18 else 0.8 if n <= 24 else 0.6
    clutter = 0.8 if any(c in s.text for c in "()&/[]*~") or " - " in s.text else 1.0
    return length * clutter


def tidy(text: str) -> str:
    """A review sentence's spacing and repeated marks mended: "Friendly , happy" -> "Friendly,
    happy"; "good.." -> "good."."""
    return _REPEATED_MARK.sub(r"\1", _SPACE_BEFORE_MARK.sub(r"\1", text.strip()))


_SPACE_BEFORE_MARK = regex.compile(r"\s+([,.;:!?])")
_REPEATED_MARK = regex.compile(r"([,.!?])\1+")
# a sentence opening with one of these has dropped its "I" ("Love the broth", "Highly
# recommend"): third_person tells it with its reviewer
_DROPPED_I = frozenset(
    """love loved like liked recommend recommended highly went ordered tried ate visited
    enjoyed stopped will would""".split()
)


def third_person(text: str, aspects: Sequence[str] = (), who: str = "one") -> tuple[str, bool]:
    """A review sentence told in the third person, and whether it names its reviewer: its
    first "I" or "we" (one reviewer's party) becomes "one reviewer" (`who` "another": "another
    reviewer", "the same": "the same reviewer"), later ones "they", "my" -> "their"; in the
    present when it opens with its aspect ("The broth was rich." -> "The broth is rich.");
    an "I" dropped at its start is put back first ("Love the broth" -> "One reviewer loves
    the broth")."""
    text = tidy(text)
    first, _, rest = text.partition(" ")
    if rest and first.lower() in _DROPPED_I:
        text = f"I {first.lower()} {rest}"
    pieces = regex.findall(r"[\p{L}']+|[^\p{L}'\s]+|\s+", text)
    reviewer = f"{who} reviewer"
    named = False  # whether the reviewer has been named as the subject yet
    for k, piece in enumerate(pieces):
        low = piece.lower()
        if low not in _THIRD:
            continue
        stem, _, clitic = low.partition("'")
        if not named and stem in ("my", "our"):
            pieces[k] = f"{reviewer}'s"
            named = True
        elif not named and stem in ("i", "we"):
            pieces[k] = reviewer + _subject_tail(clitic, True)
            named = True
            if not clitic and not _after_auxiliary(pieces, k):
                _agree_next(pieces, k, True)
        else:
            pieces[k] = _THIRD[low]
            if stem in ("i", "we") and not clitic:
                _agree_next(pieces, k, False)
    sentence = _present("".join(pieces), aspects)
    sentence = sentence[0].upper() + sentence[1:]
    ended = sentence if sentence[-1] in ".!" else sentence.rstrip(",;:- ") + "."
    return ended, named


def _after_auxiliary(pieces: list[str], k: int) -> bool:
    before = [p.lower() for p in pieces[:k] if not p.isspace()]
    return bool(before) and before[-1] in _INVERTING


def _subject_tail(clitic: str, singular: bool) -> str:
    return {
        "": "",
        "m": " is" if singular else " are",
        "re": " is" if singular else " are",
        "ve": " has" if singular else " have",
        "d": " would",
        "ll": " will",
    }[clitic]


def _agree_next(pieces: list[str], k: int, singular: bool) -> None:
    """The verb after the new subject agrees with it: "we were" -> "one reviewer was", "I
    love" -> "one reviewer loves" (common verbs only: an irregular past such as "went" needs
    nothing); after "they": "was" -> "were", "am" -> "are"."""
    for j in range(k + 1, min(k + 7, len(pieces))):
        low = pieces[j].lower()
        if low.isspace() or low in _ADVERBS:
            continue
        if singular:
            pieces[j] = _SINGULAR.get(low) or (
                _third_singular(pieces[j]) if low in _PRESENT_VERBS else pieces[j]
            )
        else:
            pieces[j] = {"am": "are", "was": "were"}.get(low, pieces[j])
        return


_SINGULAR = {
    "am": "is", "are": "is", "were": "was", "have": "has", "do": "does", "don't": "doesn't",
    "haven't": "hasn't", "aren't": "isn't", "weren't": "wasn't",
}  # fmt: skip
# a subject after one of these is a question's ("what can I say"): its verb stays
_INVERTING = frozenset("can could will would should do did does may might must shall".split())
_ADVERBS = frozenset(
    "really just definitely totally absolutely highly honestly usually often even still only "
    "also always never truly seriously personally actually certainly".split()
)
_PRESENT_VERBS = frozenset(
    "love like recommend think want hate enjoy prefer feel know wish hope need come go get "
    "order eat visit suggest miss live work mean say find agree give keep crave adore dislike "
    "appreciate understand believe expect stop return".split()
)


def _third_singular(verb: str) -> str:
    low = verb.lower()
    if low in ("go", "do"):
        return verb + "es"
    if low.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _present(sentence: str, aspects: Sequence[str]) -> str:
    """'The broth was rich' -> 'The broth is rich' when the sentence opens with an aspect."""
    match = regex.match(r"(?i)(the|their|its)\s+([\p{L}' -]{1,40}?)\s+(was|were)\b", sentence)
    if not match or not any(a in match.group(2).lower() for a in aspects):
        return sentence
    verb = _PRESENT[match.group(3).lower()]
    return sentence[: match.start(3)] + verb + sentence[match.end(3) :]
