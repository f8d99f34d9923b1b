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

    def __init__(self, message: str, *, key: str | None = None, reason: str | None = None) -> None:
        self.key, self.reason = key, reason or message
        super().__init__(message)


# pydantic's wording, which speaks of its own internals ("valid dictionary or instance of
# ReviewSet", "Value error, ...", "after validation"): plain words for the types users meet
PLAIN_MESSAGES = {
    "missing": "required field is missing",
    "extra_forbidden": "unknown field",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "dict_type": "must be a JSON object",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "string_too_short": "must not be empty",  # min_length 1; longer minimums: below
    "string_unicode": "must be a valid string (it holds a lone surrogate such as \\ud800, "
    "which is not a character)",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
}
VALIDATION_PREFIXES = ("Value error, ", "Assertion failed, ")


def plain_validation_message(err: dict) -> str:
    """One pydantic error (an item of ValidationError.errors()) in plain words."""
    kind, ctx = err.get("type") or "", err.get("ctx") or {}
    if kind in ("too_short", "too_long") and "actual_length" in ctx:
        return _count_message(kind, ctx, err.get("loc") or ())
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters"
    if kind == "string_too_short" and ctx.get("min_length", 1) > 1:
        return f"must be at least {ctx['min_length']} characters"
    if kind in PLAIN_MESSAGES:
        return PLAIN_MESSAGES[kind]
    message = str(err.get("msg", "invalid"))
    for prefix in VALIDATION_PREFIXES:
        if message.startswith(prefix):
            return message[len(prefix) :]
    if message.startswith("Input should be "):  # e.g. a choice: "Input should be 'a' or 'b'"
        return "must be " + message[len("Input should be ") :]
    return message


def _count_message(kind: str, ctx: dict, loc) -> str:
    """'List should have at least 1 item after validation, not 0' -> 'must hold at least 1
    review (it holds 0)', naming the items by the field's name where it is a plural."""
    name = str(loc[-1]) if loc else ""
    noun = name[:-1] if name.endswith("s") and name.isalpha() else "item"
    bound = ctx["min_length"] if kind == "too_short" else ctx["max_length"]
    side = "at least" if kind == "too_short" else "at most"
    return (
        f"must hold {side} {bound} {noun}{'' if bound == 1 else 's'} "
        f"(it holds {ctx['actual_length']})"
    )
