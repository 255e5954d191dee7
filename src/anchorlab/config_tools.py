"""Plain data <-> typed, frozen config dataclasses: the machinery both config trees use
(:mod:`anchorlab.config` for the anchor tasks, :mod:`anchorlab.text.config` for the real-language runs).

Values are checked against the dataclass annotations (lists become tuples, ints become floats where a float
is expected); unknown keys and wrong types raise :class:`ConfigError` naming the dotted field. TOML files may
start from another (``base = "other.toml"``); ``--set key=value`` overrides are parsed as TOML values.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin


class ConfigError(ValueError):
    """A config value is unknown, mistyped or out of range; the message names the field."""


def check(ok: bool, field_name: str, allowed: str) -> None:
    """Raise a :class:`ConfigError` naming ``field_name`` and what is ``allowed`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"{field_name}: allowed values are {allowed}")


def to_plain(x: Any) -> Any:
    """Tuples as lists, recursively (the JSON shape of a config)."""
    if isinstance(x, dict):
        return {k: to_plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_plain(v) for v in x]
    return x


def set_dotted(d: dict[str, Any], key: str, value: Any, where: str = "") -> None:
    """Set ``d["a"]["b"] = value`` for key "a.b" in place; ``where`` prefixes the field in errors."""
    parts = key.split(".")
    node = d
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            raise ConfigError(f"{where}{key}: unknown config key (no section '{p}')")
        node = node[p]
    node[parts[-1]] = value


def _coerce(value: Any, tp: Any, name: str) -> Any:
    """Check `value` against the annotation `tp`, converting lists to tuples and ints to floats."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        if isinstance(value, bool) and str(value).lower() in args:  # --set data.ontology=true parses as a bool
            value = str(value).lower()
        if value not in args:
            raise ConfigError(f"{name}: got {value!r}; allowed values are {', '.join(map(repr, args))}")
        return value
    if origin in (typing.Union, types.UnionType):
        for a in args:
            try:
                return _coerce(value, a, name)
            except ConfigError:
                pass
        raise ConfigError(f"{name}: got {value!r}; expected {tp}")
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{name}: got {value!r}; expected a list")
        elem = args[0]
        return tuple(_coerce(v, elem, f"{name}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{name}: got {value!r}; expected a table of {args[0].__name__} -> {args[1].__name__}")
        return {str(k): _coerce(v, args[1], f"{name}.{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{name}: got {value!r}; expected true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name}: got {value!r}; expected an integer")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{name}: got {value!r}; expected a number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name}: got {value!r}; expected a string")
        return value
    raise TypeError(f"unsupported annotation {tp} for {name}")


def build(cls: type, data: dict[str, Any], prefix: str) -> Any:
    """An instance of the dataclass ``cls`` from plain data: nested tables build nested dataclasses, every
    value is checked against its annotation, unknown keys are errors naming ``prefix`` + the key."""
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise ConfigError(f"{prefix}{unknown[0]}: unknown config key; allowed keys in "
                          f"'{prefix.rstrip('.') or 'top level'}' are {', '.join(sorted(fields))}")
    kwargs = {}
    for k, v in data.items():
        tp = hints[k]
        if dataclasses.is_dataclass(tp):
            if not isinstance(v, dict):
                raise ConfigError(f"{prefix}{k}: expected a table")
            kwargs[k] = build(typing.cast(type, tp), v, f"{prefix}{k}.")
        else:
            kwargs[k] = _coerce(v, tp, f"{prefix}{k}")
    return cls(**kwargs)


def parse_override(item: str) -> tuple[str, Any]:
    """'train.lr=3e-4' -> ('train.lr', 3e-4). Values are parsed as TOML, falling back to a bare string."""
    if "=" not in item:
        raise ConfigError(f"--set {item}: expected key=value, e.g. init.gamma=0.8")
    key, raw = item.split("=", 1)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip(), value


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Recursive dict merge: tables merge, everything else is replaced."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def parse_toml_file(path: str | Path, field_name: str = "config") -> dict[str, Any]:
    """The TOML file's content; a missing or invalid file is a ConfigError naming ``field_name``."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{field_name}: file {str(path)!r} does not exist")
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{field_name}: {path} is not valid TOML ({e})") from None


def read_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML config; a top-level ``base = "other.toml"`` (relative to this file) is merged first."""
    path = Path(path)
    data = parse_toml_file(path)
    base = data.pop("base", None)
    if base is not None:
        data = merge(read_toml(path.parent / base), data)
    return data


def run_id_of(config: dict[str, Any]) -> str:
    """Stable short hash of a fully resolved config as plain data (names run directories)."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]
