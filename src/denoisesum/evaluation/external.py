"""Checks for the external tools and packages that the official scorers run."""

from __future__ import annotations

import importlib
import shutil
from types import ModuleType

from denoisesum.errors import DenoiseSumError


def require(metric: str, program: str, install_hint: str, module: str, package: str
            ) -> ModuleType:
    """Fail with one clear line unless `program` is on PATH and `module` imports; return it."""
    if shutil.which(program) is None:
        raise DenoiseSumError(f"{metric} needs {program}, which was not found {install_hint}")
    try:
        return importlib.import_module(module)
    except ImportError:
        raise DenoiseSumError(f"{metric} needs the {package} package: pip install {package}") \
            from None
