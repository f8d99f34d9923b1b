import time

import pytest

from denoisesum.data.tokenizer import Tokenizer, detokenize

tok = Tokenizer()


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The food was great.The staff was nice", "the food was great . the staff was nice"),
        ("I can't believe it's not butter!!!", "i ca n't believe it 's not butter !"),
        (
            "We won't; they'd, you're, I'm, we've, she'll",
            "we wo n't ; they 'd , you 're , i 'm , we 've , she 'll",
        ),
        ("Joe’s place — “amazing”…", 'joe \'s place -- " amazing " ...'),
        (
            "$5.99 for 1,000 wings at 10pm on the 2nd, 3:30 wait, 4.5/5",
            "$ 5.99 for 1,000 wings at 10 pm on the 2nd , 3:30 wait , 4.5/5",
        ),
        (
            "See https://www.yelp.com/biz/joes-pizza?x=1. Or www.joes.com!",
            "see https://www.yelp.com/biz/joes-pizza?x=1 . or www.joes.com !",
        ),
        ("Mail me@example.com :) so good 😀👍🏽 <3", "mail me@example.com :) so good 😀 👍🏽 <3"),
        ("U.S. style, e.g. deep-dish... what?!?", "u.s. style , e.g. deep-dish ... what ?"),
        ("family-owned, well-known", "family-owned , well-known"),
        ("", ""),
    ],
)
def test_tokenize(text, tokens):
    assert tok.tokenize(text) == tokens.split()


def test_cased_tokenizer_keeps_case():
    assert Tokenizer(lowercase=False).tokenize("Great.The STAFF") == ["Great", ".", "The", "STAFF"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("i ca n't wait . the staff was great !", "I can't wait. The staff was great!"),
        ("it 's $ 5 ( cheap ) , and i 'm happy ...", "It's $5 (cheap), and I'm happy..."),
        ('they said " wow " and left .', 'They said "wow" and left.'),
        ("wo n't go back ? no . 100 % sure", "Won't go back? No. 100% sure"),
        ("visit https://yelp.com . great", "Visit https://yelp.com. Great"),
    ],
)
def test_detokenize(text, expected):
    assert detokenize(text) == expected
    assert detokenize(text.split()) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I can't believe it's not butter! The staff was great.",
        "We won't go back; they'd better fix it. It's $5.99 (cheap), I'm sure.",
        'They said "wow" and left. I\'ll be back at 10 pm on the 2nd!',
        "Great pizza, friendly staff :) and see https://yelp.com/biz/x now.",
    ],
)
def test_round_trip(text):
    """Tokenize then detokenize gives the text back (up to case)."""
    assert detokenize(tok.tokenize(text)) == text


def test_glued_sentences_round_trip():
    assert (
        detokenize(tok.tokenize("It was great.The staff was nice."))
        == "It was great. The staff was nice."
    )


@pytest.mark.parametrize(
    "text",
    [
        "_" * 30_000,  # took 9 s: the email pattern rescanned the rest of the run at every "_"
        "+" * 30_000,
        "a." * 5_000 + "a",  # took 12 s: the abbreviation pattern, likewise
        "x_" * 15_000,
    ],
)
def test_tokenize_is_linear_in_hostile_input(text):
    start = time.perf_counter()
    tokens = tok.tokenize(text)
    assert time.perf_counter() - start < 2
    assert "".join(tokens) == text.lower()


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("write to " + "a" * 64 + "@b.com", "write to " + "a" * 64 + "@b.com"),
        ("the w.o.n.d.e.r.f.u.l. staff", "the w.o.n.d.e.r.f.u.l. staff"),
        ("a.b.c.d and ab.c.d. and x.y.", "a . b . c . d and ab . c.d. and x.y."),
        ("_me@x.org!!", "_me@x.org !"),
    ],
)
def test_bounded_patterns_keep_their_tokens(text, tokens):
    assert tok.tokenize(text) == tokens.split()
