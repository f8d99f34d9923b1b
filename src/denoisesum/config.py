"""Typed configuration: dataclasses with the paper's defaults, overridden by TOML and `key=value`.

    cfg = load_config(LMRunConfig, "configs/bilm-yelp.toml", ["train.lr=0.002"])

Unknown keys and wrongly typed values are errors that name the key, never silently ignored.
"""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from denoisesum.errors import ConfigError

T = TypeVar("T")


def _check_keys(cls: type, data: dict[str, Any], prefix: str = "") -> None:
    hints = typing.get_type_hints(cls)
    for key, value in data.items():
        if key not in hints:
            known = ", ".join(f.name for f in dataclasses.fields(cls))
            raise ConfigError(f"unknown config key '{prefix}{key}' (known: {known})",
                              key=prefix + key, reason=f"unknown key (known: {known})")
        if dataclasses.is_dataclass(hints[key]):
            if not isinstance(value, dict):
                raise ConfigError(f"config key '{prefix}{key}' must be a table, got {value!r}",
                                  key=prefix + key, reason=f"must be a table, got {value!r}")
            _check_keys(hints[key], value, f"{prefix}{key}.")


def _run_checks(obj: Any, prefix: str = "") -> None:
    """Each (nested) config's own `validate()`, for the checks a type cannot say (ranges,
    one setting against another); its ConfigError.key is made absolute."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            _run_checks(value, f"{prefix}{f.name}.")
    if hasattr(obj, "validate"):
        try:
            obj.validate()
        except ConfigError as exc:
            if exc.key is None:
                raise
            key = prefix + exc.key
            raise ConfigError(f"config key '{key}': {exc.reason}", key=key,
                              reason=exc.reason) from None


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
        reason = f"{first['msg']} (got {first.get('input')!r})"
        raise ConfigError(f"config key '{key}': {reason}", key=key, reason=reason) from None
    _run_checks(out, prefix)
    return out


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
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
            raise ConfigError(f"config key '{key}' is set by '{source}'; set that instead",
                              key=key, reason=f"is set by '{source}'; set that instead")


def load_config(cls: type[T], path: str | Path | None = None, overrides: Iterable[str] = (),
                base: T | None = None, field: str | None = None) -> T:
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
        given = _merge(given, parse_override(text))
    _reject_derived(cls, given)
    return build(cls, _merge(dataclasses.asdict(base if base is not None else cls()), given))


def config_from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Rebuild a (nested) config dataclass from `dataclasses.asdict` output."""
    return load_config(cls, base=TypeAdapter(cls).validate_python(data))
