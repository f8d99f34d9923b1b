"""METEOR 1.5 (the official jar, English, `-norm`) through `pycocoevalcap`.

Both sides are first put in the same form: split clitics of released outputs are re-joined
("can ' t" -> "can't"), then everything goes through this project's tokenizer (lower-cased, Penn
Treebank clitics: "ca n't"). Unlike ROUGE, METEOR matches punctuation and uses stems, synonyms and
paraphrases, so raw and pre-tokenized text would otherwise not match word for word.

Per-entity scores are METEOR's segment scores; the headline number is their mean (so it has a
bootstrap interval like every other metric). METEOR's own corpus-level score, computed from pooled
statistics, is reported beside it. Needs `java` (8 or later); the jar loads a 60 MB paraphrase table
at start (tens of seconds, about 2 GB of memory).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence

from denoisesum.data.tokenizer import Tokenizer
from denoisesum.errors import DenoiseSumError
from denoisesum.evaluation.external import missing, require

# Released outputs split clitics off with spaces around the apostrophe: "don ' t", "i ' ve".
_SPLIT_CLITIC = re.compile(r"(\w) ' (t|s|m|d|re|ve|ll)\b", re.IGNORECASE)
_TOKENIZER = Tokenizer()
INSTALL_HINT = "(Debian/Ubuntu: apt-get install -y default-jre-headless)"
_TOOLS = ("METEOR", "java", INSTALL_HINT, "pycocoevalcap.meteor.meteor", "pycocoevalcap")


def unavailable() -> str | None:
    """Why METEOR cannot run here (one line with the install hint), or None."""
    return missing(*_TOOLS)


def normalize(text: str) -> str:
    """The form both hypotheses and references take before METEOR sees them."""
    return " ".join(_TOKENIZER.tokenize(_SPLIT_CLITIC.sub(r"\1'\2", text)))


def meteor(
    hypotheses: Sequence[str], references: Sequence[Sequence[str]]
) -> tuple[list[float], float]:
    """(segment score of each hypothesis, corpus-level score), all 0-1."""
    Meteor = require(*_TOOLS).Meteor
    gts = {str(i): [normalize(r) for r in refs] for i, refs in enumerate(references)}
    res = {str(i): [normalize(h)] for i, h in enumerate(hypotheses)}
    scorer = Meteor()
    try:
        corpus, segments = scorer.compute_score(gts, res)
    except (ValueError, OSError) as exc:
        # The jar died (no memory, bad Java): its stdout ended early. Show why it died.
        scorer.meteor_p.kill()
        stderr = scorer.meteor_p.stderr.read().decode(errors="replace").strip().splitlines()
        raise DenoiseSumError(f"METEOR failed: {' | '.join(stderr[-3:]) or exc}") from None
    finally:
        scorer.meteor_p.kill()
        scorer.meteor_p.wait()
        for stream in (scorer.meteor_p.stdin, scorer.meteor_p.stdout, scorer.meteor_p.stderr):
            with contextlib.suppress(OSError):
                stream.close()
        # pycocoevalcap's __del__ takes this lock; a failed call left it held.
        if scorer.lock.locked():
            scorer.lock.release()
    return [float(s) for s in segments], float(corpus)
