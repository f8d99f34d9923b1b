"""Checks for the external tools and packages that the official scorers run."""

from __future__ import annotations

import importlib
import shutil
from types import ModuleType

from denoisesum.errors import DenoiseSumError
from denoisesum.extras import install_hint as extra_hint


def missing(metric: str, program: str, install_hint: str, module: str, package: str) -> str | None:
    """Why `metric` cannot run (one line with the install hint), or None: `program` must be on
    PATH and `module` must import."""
    if shutil.which(program) is None:
        return f"{metric} needs {program}, which was not found {install_hint}"
    try:
        importlib.import_module(module)
    except ImportError:
        return extra_hint(f"{metric} (the {package} package)", "eval")
    return None


def require(metric: str, program: str, install_hint: str, module: str, package: str) -> ModuleType:
    """Fail with one clear line unless `program` is on PATH and `module` imports; return it."""
    reason = missing(metric, program, install_hint, module, package)
    if reason is not None:
        raise DenoiseSumError(reason)
    return importlib.import_module(module)
