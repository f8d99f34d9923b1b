"""User-facing errors. The CLI prints these as one clear line, never a traceback."""

from __future__ import annotations

from pathlib import Path


class DenoiseSumError(Exception):
    """Base class for errors caused by the user's input or settings."""


class InputError(DenoiseSumError):
    """Bad input data; names the file, line (or row) and field when they are known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        unit: str = "line",
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.reason = message
        where = []
        if self.path is not None:
            where.append(self.path)
        if line is not None:
            where.append(f"{unit} {line}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class CorruptFileError(InputError):
    """A file that cannot be read past some point (a broken compressed stream): never skippable."""


class ConfigError(DenoiseSumError):
    """A bad setting in a TOML config file, a command-line override or a model's config.json.
    `key` (dotted) and `reason` are set when one key is to blame, so a caller can name its own
    file and field."""

    def __init__(self, message: str, *, key: str | None = None,
                 reason: str | None = None) -> None:
        self.key, self.reason = key, reason or message
        super().__init__(message)
