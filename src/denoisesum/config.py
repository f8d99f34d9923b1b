"""Typed configuration: dataclasses with the paper's defaults, overridden by TOML and `key=value`.

    cfg = load_config(LMRunConfig, "configs/bilm-yelp.toml", ["train.lr=0.002"])

Unknown keys and wrongly typed values are errors that name the key, never silently ignored.
Every numeric setting has its valid range in its class's `BOUNDS` (a key -> Range table); a float
setting is never NaN or infinite. `check` is the one validation of every settings dataclass: the
bounds, then the class's own `validate()` for the rest (choices, one setting against another),
each a one-line ConfigError naming the key. A class checks nothing in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from denoisesum.errors import ConfigError, plain_validation_message

T = TypeVar("T")


def _check_keys(cls: type, data: dict[str, Any], prefix: str = "") -> None:
    hints = typing.get_type_hints(cls)
    for key, value in data.items():
        if key not in hints:
            known = ", ".join(f.name for f in dataclasses.fields(cls))
            raise ConfigError(
                f"unknown config key '{prefix}{key}' (known: {known})",
                key=prefix + key,
                reason=f"unknown key (known: {known})",
            )
        if dataclasses.is_dataclass(hints[key]):
            if not isinstance(value, dict):
                raise ConfigError(
                    f"config key '{prefix}{key}' must be a table, got {value!r}",
                    key=prefix + key,
                    reason=f"must be a table, got {value!r}",
                )
            _check_keys(hints[key], value, f"{prefix}{key}.")


@dataclass(frozen=True)
class Range:
    """The valid values of a numeric setting (of each item of a list setting): finite numbers
    from `low` to `high` (None: no bound), an end left out where `*_open` says; `note` tells what
    a special value does, e.g. "0: off"."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    note: str = ""

    def contains(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def __str__(self) -> str:
        low, high = _number(self.low), _number(self.high)
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            text = (
                f"in {left}{low}, {high}{right}"
                if self.low_open or self.high_open
                else f"between {low} and {high}"
            )
        elif self.low is not None:
            text = f"more than {low}" if self.low_open else f"at least {low}"
        elif self.high is not None:
            text = f"less than {high}" if self.high_open else f"at most {high}"
        else:
            text = "a finite number"
        return f"{text} ({self.note})" if self.note else text


def _number(value: float | None) -> str:
    return f"{value:,}" if isinstance(value, int) and abs(value) >= 10_000 else str(value)


def at_least(low: float, note: str = "") -> Range:
    return Range(low, note=note)


def above(low: float, note: str = "") -> Range:
    return Range(low, low_open=True, note=note)


def between(low: float, high: float, note: str = "") -> Range:
    return Range(low, high, note=note)


FINITE = Range()  # a float setting without a BOUNDS entry


def check_bounds(obj: Any) -> None:
    """Each numeric setting of `obj` (not of the configs nested in it) within its class's
    `BOUNDS`; ConfigError naming the first one that is not."""
    bounds: dict[str, Range] = getattr(type(obj), "BOUNDS", {})
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        rule = bounds.get(f.name, FINITE)
        for item in value if isinstance(value, list | tuple) else [value]:
            # bool is an int to Python, never a number to a user
            if (
                isinstance(item, int | float)
                and not isinstance(item, bool)
                and not rule.contains(item)
            ):
                why = f"{item!r} must be {rule}"
                raise ConfigError(f"{f.name}={item!r} must be {rule}", key=f.name, reason=why)


def check_choice(key: str, value: Any, choices: Iterable[Any]) -> None:
    """For a `validate()`: ConfigError naming `key` unless `value` is one of `choices`."""
    choices = list(choices)
    if value not in choices:
        why = f"must be one of {', '.join(map(str, choices))}, got {value!r}"
        raise ConfigError(f"{key} {why}", key=key, reason=why)


def check(obj: Any, prefix: str = "") -> None:
    """The one validation of a settings dataclass (`build` runs it; code that makes one in
    Python calls it): each (nested) config's bounds, then its own `validate()`, for what a type
    and a range cannot say (a choice, one setting against another); its ConfigError.key is
    made absolute."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            check(value, f"{prefix}{f.name}.")
    try:
        check_bounds(obj)
        if hasattr(obj, "validate"):
            obj.validate()
    except ConfigError as exc:
        if exc.key is None:
            raise
        key = prefix + exc.key
        raise ConfigError(f"config key '{key}': {exc.reason}", key=key, reason=exc.reason) from None


def build(cls: type[T], data: dict[str, Any], prefix: str = "") -> T:
    """Plain data (TOML, JSON) -> a `cls`: the one validation of every config. Unknown keys,
    wrong types and failed `validate()` checks raise ConfigError naming the key (`prefix` is
    put before it, e.g. "summarize.")."""
    _check_keys(cls, data, prefix)
    try:
        out = TypeAdapter(cls).validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = prefix + ".".join(str(p) for p in first["loc"])
        reason = f"{plain_validation_message(first)} (got {first.get('input')!r})"
        raise ConfigError(f"config key '{key}': {reason}", key=key, reason=reason) from None
    check(out, prefix)
    return out


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` with `extra` put over it, table by table (a nested dict merges, anything else
    replaces); neither is changed."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def parse_override(text: str) -> dict[str, Any]:
    """'train.lr=0.002' -> {'train': {'lr': 0.002}}; values are TOML literals, else strings."""
    if "=" not in text:
        raise ConfigError(f"override '{text}' must look like key=value")
    key, raw = (part.strip() for part in text.split("=", 1))
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    out: dict[str, Any] = {}
    node = out
    *parents, leaf = key.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return out


def _has_key(data: dict[str, Any], dotted: str) -> bool:
    *parents, leaf = dotted.split(".")
    for part in parents:
        data = data.get(part)
        if not isinstance(data, dict):
            return False
    return leaf in data


def _reject_derived(cls: type, given: dict[str, Any]) -> None:
    """A config class may list keys that another key sets (`DERIVED`: key -> its source), so
    that one setting lives in one place; giving such a key is an error, never overwritten."""
    for key, source in getattr(cls, "DERIVED", {}).items():
        if _has_key(given, key):
            raise ConfigError(
                f"config key '{key}' is set by '{source}'; set that instead",
                key=key,
                reason=f"is set by '{source}'; set that instead",
            )


def load_config(
    cls: type[T],
    path: str | Path | None = None,
    overrides: Iterable[str] = (),
    base: T | None = None,
    field: str | None = None,
) -> T:
    """Build a `cls` from its defaults (or `base`), a TOML file, then `key=value` overrides.
    `field`: the option that named the file (e.g. "--config"), said in the file's errors."""
    given: dict[str, Any] = {}
    if path is not None:
        where = f"{path}, field '{field}'" if field else str(path)
        try:
            with open(path, "rb") as handle:
                given = tomllib.load(handle)
        except FileNotFoundError as exc:
            raise ConfigError(f"config file not found: {path}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{where}: invalid TOML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start})") from None
        except IsADirectoryError:
            raise ConfigError(f"{where}: is a directory, not a config file") from None
    for text in overrides:
        given = merge(given, parse_override(text))
    _reject_derived(cls, given)
    return build(cls, merge(dataclasses.asdict(base if base is not None else cls()), given))


def config_from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Rebuild a (nested) config dataclass from `dataclasses.asdict` output."""
    return load_config(cls, base=TypeAdapter(cls).validate_python(data))
