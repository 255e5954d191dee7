"""``anchorlab config [CONFIG] [--set ...]``: a resolved config as TOML (written here, no TOML-writer
dependency; reading it back gives the same config) followed by the γ-std table of its model: per weight,
its role, shape, d_in and the std γ-init gives it (d_in^-γ), from :func:`anchorlab.init.init_table`."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from anchorlab import kinds
from anchorlab.config_tools import read_toml


def toml_value(v: Any) -> str:
    """One TOML value: booleans, integers, floats (inf / nan included), strings, and arrays of those."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return ("inf" if v > 0 else "-inf") if math.isinf(v) else "nan" if v != v else repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML value for {v!r}")


def to_toml(data: dict[str, Any], prefix: str = "", notes: dict[str, str] | None = None) -> str:
    """Plain nested data as TOML: scalars and arrays of a table first, then one ``[table]`` per nested dict.
    ``None`` values are left out (TOML has no null; reading the file back gives the field's default).
    ``notes`` {dotted key: text} ends those keys' lines with ``# text`` (the value stays, so it reads back)."""
    notes = notes or {}
    lines = [f"{k} = {toml_value(v)}" + (f"  # {notes[prefix + k]}" if prefix + k in notes else "")
             for k, v in data.items() if not isinstance(v, dict) and v is not None]
    out = "\n".join(lines)
    for k, v in data.items():
        if isinstance(v, dict):
            name = f"{prefix}{k}"
            body = to_toml(v, f"{name}.", notes)
            out += ("\n\n" if out else "") + f"[{name}]" + ("\n" + body if body else "")
    return out


def plain(cfg: Any) -> dict[str, Any]:
    """A config object as the plain data of its TOML (tuples as lists)."""
    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return {str(k): walk(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [walk(v) for v in x]
        return x
    return walk(dataclasses.asdict(cfg))


def std_table(cfg: Any) -> list[dict[str, Any]]:
    """Per parameter of an anchor-task model: name, role, shape, d_in and std (γ-scaled weights), or the
    fixed rule of the others (LayerNorm, output bias)."""
    from anchorlab.init import GAMMA_ROLES, fan_in, init_std, init_table
    from anchorlab.models import build_model

    model = build_model(cfg.model, cfg.task.vocab_size)
    rows = []
    for name, role, shape, rule in init_table(model, cfg.init):
        if role in GAMMA_ROLES:
            rows.append({"weight": name, "role": role, "shape": "x".join(map(str, shape)),
                         "d_in": fan_in(role, shape, cfg.init.convention),
                         "gamma": cfg.init.role_gamma.get(role, cfg.init.gamma),
                         "std": init_std(role, shape, cfg.init)})
        else:
            rows.append({"weight": name, "role": role, "shape": "x".join(map(str, shape)), "d_in": "",
                         "gamma": "", "std": rule})
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    cols = list(rows[0])
    cells = [[f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c]) for c in cols] for r in rows]
    w = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    return "\n".join(["  ".join(c.ljust(w[i]) for i, c in enumerate(cols)),
                      *("  ".join(v.ljust(w[i]) for i, v in enumerate(row)) for row in cells)])


def config_text(path: str | Path | None = None, overrides: Sequence[str] = ()) -> str:
    """The resolved config of ``path`` (default: the anchor-task defaults) with ``overrides`` as TOML, then
    its model's γ-std table as TOML comments (so the whole text still reads as the same config)."""
    kind = kinds.kind_of_data(read_toml(path)) if path is not None else kinds.KINDS["anchor"]
    cfg = kind.get("load_config")(path, list(overrides))
    data = plain(cfg)
    notes = {}
    if kind.name == "anchor" and cfg.model.name == "emb_mlp":
        from anchorlab.config import EMB_MLP_FIELDS

        notes = {f"model.{k}": "Transformer only: the Emb-MLP does not use it"
                 for k in data["model"] if k not in EMB_MLP_FIELDS}
    text = f"# resolved {kind.name} config" + (f" of {path}" if path else " (defaults)") + \
        (f" with {', '.join(overrides)}" if overrides else "") + "\n" + to_toml(data, notes=notes) + "\n"
    if kind.name == "anchor":
        table = format_table(std_table(cfg))
        note = f"γ-std table of the model (std = d_in^-γ; init.convention = {cfg.init.convention!r}):"
    else:
        table = ""
        note = (f"γ-std table: not available for {kind.name} runs without building the model (HF GPT-2); "
                "anchorlab.gamma_init.gamma_init_ returns it per weight when the model is initialised")
    return text + "\n# " + note + "".join(f"\n# {line}" for line in table.splitlines()) + "\n"
