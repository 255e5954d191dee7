"""Plain data <-> typed, frozen config dataclasses: the machinery both config trees use
(:mod:`anchorlab.config` for the anchor tasks, :mod:`anchorlab.text.config` for the real-language runs).

Values are checked against the dataclass annotations (lists become tuples, ints become floats where a float
is expected); unknown keys and wrong types raise :class:`ConfigError` naming the dotted field. TOML files may
start from another (``base = "other.toml"``); ``--set key=value`` overrides are parsed as TOML values.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import os
import re
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


def valid_device(name: str, auto: bool = False) -> bool:
    """Whether ``name`` is a device torch can parse: cpu, cuda, cuda:N, mps (and "auto" where allowed)."""
    return (auto and name == "auto") or re.fullmatch(r"cpu|mps|cuda(:\d+)?", name) is not None


def check_seeds(seeds: Any) -> None:
    """Every seed of a seeds table in [0, 2^32) (numpy's and torch's common range)."""
    for f in dataclasses.fields(seeds):
        check(0 <= getattr(seeds, f.name) < 2 ** 32, f"seeds.{f.name}", "an integer in [0, 2^32)")


def to_plain(x: Any) -> Any:
    """Tuples as lists, recursively (the JSON shape of a config)."""
    if isinstance(x, dict):
        return {k: to_plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_plain(v) for v in x]
    return x


# "seed" (a --set key and a sweep axis) stands for all three seeds at once: data, init and batch order.
SEED_KEYS = ("seeds.data_seed", "seeds.init_seed", "seeds.train_seed")


def set_dotted(d: dict[str, Any], key: str, value: Any, where: str = "") -> None:
    """Set ``d["a"]["b"] = value`` for key "a.b" in place (key "seed": each of :data:`SEED_KEYS`); ``where``
    prefixes the field in errors."""
    if key == "seed":
        for k in SEED_KEYS:
            set_dotted(d, k, value, where)
        return
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
        if isinstance(value, float) and not math.isfinite(value):  # no field of any config means anything at nan or inf
            raise ConfigError(f"{name}: got {value!r}; expected a finite number")
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
    if not key.strip():
        raise ConfigError(f"--set {item}: the key before '=' is empty; expected key=value, e.g. init.gamma=0.8")
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
    if path.is_dir():
        raise ConfigError(f"{field_name}: {str(path)!r} is a directory; give a .toml file")
    if not path.is_file():
        raise ConfigError(f"{field_name}: file {str(path)!r} does not exist")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{field_name}: {path} is not valid TOML ({e})") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{field_name}: {path} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ConfigError(f"{field_name}: cannot read {path} ({e.strerror})") from None


def read_toml(path: str | Path, _chain: tuple[Path, ...] = (), field_name: str = "config") -> dict[str, Any]:
    """Read a TOML config; a top-level ``base = "other.toml"`` (relative to this file) is merged first.
    A chain of bases that comes back to a file it already read is an error naming the cycle; a missing or
    invalid file is one naming ``field_name`` (a base file's: ``base`` and the file that names it)."""
    path = Path(path)
    data = parse_toml_file(path, field_name)
    # a sweep file (axes, or a top-level name: a sweep of one run has no axes) where one run's config is expected
    if "axes" in data or isinstance(data.get("name"), str):
        sweep_base = data.get("base")
        base_of = (f"; one run of it: its base config {os.path.normpath(path.parent / sweep_base)} with --set"
                   if isinstance(sweep_base, str) else "")
        raise ConfigError(f"config: {path} is a sweep file, not a run config: train its grid with "
                          f"`anchorlab sweep {path}`{base_of}")
    base = data.pop("base", None)
    if base is not None:
        if not isinstance(base, str):
            raise ConfigError(f"base: {path}: expected the path of another TOML file, got {base!r}")
        chain = (*_chain, path.resolve())
        target = path.parent / base
        if target.resolve() in chain:
            cycle = " -> ".join(str(p) for p in (*chain, target.resolve()))
            raise ConfigError(f"base: {path}: the chain of base files is a cycle ({cycle})")
        data = merge(read_toml(target, chain, f"base: {path}"), data)
    return data



def layered(path: str | Path | None, overrides: list[str] | tuple[str, ...],
            with_defaults: Any) -> dict[str, Any]:
    """The plain data of a config: ``with_defaults`` (defaults merged under a dict) <- TOML file (``base =
    "..."`` allowed) <- dotted overrides. The caller builds and validates its dataclass from it."""
    d: dict[str, Any] = with_defaults(read_toml(path) if path is not None else {})
    for item in overrides:
        key, value = parse_override(item)
        set_dotted(d, key, value)
    return d

# Fields that say how a run is executed, not what it computes: stored in config.json, but neither compared
# when a run directory is opened again nor hashed into the run id (a config class may name its own in a
# class constant ``execution_fields``). Threads: a sweep runs each worker with one; the numbers are the same.
EXECUTION_FIELDS = ("train.threads",)
# Fields added after run ids were in use, hashed only when set away from their default, so that the runs made
# before they existed (committed outputs, sweeps in progress) keep their ids. They do decide the numbers (or, for
# train.cuda_graph, may: whether a replayed graph rounds exactly as the eager step is measured on a GPU only).
HASHED_WHEN_SET = ("task.reference_parts", "train.cooldown_epochs", "train.cuda_graph", "task.data_size_counts")


def execution_fields(cls: type) -> tuple[str, ...]:
    """The dotted execution fields of a config class (:data:`EXECUTION_FIELDS` unless it names its own)."""
    return tuple(getattr(cls, "execution_fields", EXECUTION_FIELDS))


def without_execution(config: dict[str, Any], fields: tuple[str, ...] = EXECUTION_FIELDS) -> dict[str, Any]:
    """``config`` (plain data) without the execution ``fields``: what decides a run's numbers."""
    out = copy.deepcopy(config)
    for f in fields:
        *path, last = f.split(".")
        node: Any = out
        for p in path:
            node = node.get(p) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return out


def identity_of(cfg: Any) -> dict[str, Any]:
    """A config object's plain data as its run id hashes it: execution fields at their class defaults (a config
    at the default threads hashes as it always has), :data:`HASHED_WHEN_SET` fields left out at their defaults,
    fields a config class names in a class constant ``legacy_values`` ({dotted name: value}) left out at that
    value (the one runs made before the field used, when it is not the default), and a reference file by its
    name (:func:`portable`). So run ids written before each change are unchanged."""
    data, default = cfg.to_dict(), type(cfg)().to_dict()
    legacy: dict[str, Any] = getattr(type(cfg), "legacy_values", {})
    for f in (*execution_fields(type(cfg)), *HASHED_WHEN_SET, *legacy):
        *path, last = f.split(".")
        node, dnode = data, default
        for p in path:
            node, dnode = node.get(p, {}), dnode.get(p, {})
        if f in legacy or f in HASHED_WHEN_SET:
            omitted = legacy[f] if f in legacy else _field_default(cfg, path, last)
            if last in node and node[last] == omitted:
                del node[last]
        else:
            node[last] = dnode[last]
    return portable(data)


def _field_default(cfg: Any, path: list[str], name: str) -> Any:
    """The class default of field ``name`` of the section of ``cfg`` at ``path`` (its own class: a P2 task's
    default is the P2 task class's, not the default task's), as plain data; a sentinel where it has none."""
    section = cfg
    for p in path:
        section = getattr(section, p, None)
    fields = {f.name: f for f in dataclasses.fields(section)} if dataclasses.is_dataclass(section) else {}
    f = fields.get(name)
    if f is None or f.default is dataclasses.MISSING:
        return _NO_DEFAULT
    return json.loads(json.dumps(f.default))


_NO_DEFAULT = object()


def portable(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (plain data, changed in place) with a task reference file named by its file name alone: the
    recordings have distinct names, so a run keeps its id, and resumes, wherever the file is kept."""
    task = config.get("task")
    if isinstance(task, dict) and task.get("reference"):
        task["reference"] = Path(task["reference"]).name
    return config


# Config fields that leave a run's arithmetic as it is (evaluation and checkpoint cadence, device, threads;
# pruning the last position is exact; a CUDA-graphed step is bit for bit the eager one, tests/test_cuda_graph.py):
# runs that differ only in them are not told apart in a figure or a table.
INERT_FIELDS = ("train.eval_every", "train.eval_batch_size", "train.checkpoint_every", "train.resume_every",
                "train.device", "train.threads", "train.prune_last", "train.cuda_graph")


def flat_fields(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested config dict as dotted keys (lists kept as values)."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        out.update(flat_fields(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def varied_fields(configs: list[dict[str, Any]], named: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Per config (plain data), the dotted fields in which ``configs`` differ, other than those starting with one
    of ``named`` (what the caller shows already) and the :data:`INERT_FIELDS`: what tells the runs apart (e.g.
    ``{"train.weight_decay": 0.3}``), or {} each where they differ in none of them."""
    flat = [flat_fields(c) for c in configs]
    keys = sorted({k for f in flat for k in f})
    varied = [k for k in keys if not k.startswith(named + INERT_FIELDS) and len({repr(f.get(k)) for f in flat}) > 1]
    return [{k: f.get(k) for k in varied} for f in flat]


def run_id_of(config: dict[str, Any]) -> str:
    """Stable short hash of a fully resolved config as plain data (names run directories)."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def reference_for(task_cfg: Any, part: str) -> str:
    """The reference file a task takes ``part`` ("data", "init" or "order") from: ``task.reference`` when it is
    set and ``task.reference_parts`` names ``part``, else "" (that part comes from the seeds)."""
    path = getattr(task_cfg, "reference", "")
    return path if path and part in getattr(task_cfg, "reference_parts", ()) else ""
