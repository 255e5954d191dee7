"""The on-disk run contract that connects training to everything downstream.

::

    <run_dir>/
      config.json                      fully resolved config (written first): a RunConfig or an LMRunConfig
      metrics.jsonl                    one JSON object per evaluation: {"step", "epoch", "lr", ...}
      epochs.jsonl                     one per epoch: {"epoch", "step", "train_loss"} (the epoch's mean batch loss)
      checkpoints/step_0000000.safetensors   model weights at kept steps (step 0 always)
      checkpoints/resume.safetensors   model + AdamW state at the last epoch boundary (for resuming)
      summary.json                     final and best metrics, parameter count, timing
      DONE                             written last: the run is complete

Every file is written to a temporary name and renamed, so a killed run never leaves a half file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from anchorlab import kinds
from anchorlab.config import ConfigError

CONFIG, METRICS, SUMMARY, DONE, CKPT_DIR = "config.json", "metrics.jsonl", "summary.json", "DONE", "checkpoints"
EPOCHS = "epochs.jsonl"
RESUME = "resume.safetensors"


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


def read_config(run_dir: str | Path) -> Any:
    """The run's config, of whichever kind its ``config.json`` holds (:mod:`anchorlab.kinds`); a file
    written under older field names reads as today's."""
    return kinds.config_from_data(read_json(Path(run_dir) / CONFIG))


def is_done(run_dir: Path) -> bool:
    return (Path(run_dir) / DONE).exists()


def open_run(run_dir: Path, cfg: Any) -> str:
    """Prepare ``run_dir`` for ``cfg``: returns "new", "resume" or "done".

    An existing directory must hold the same resolved config; otherwise the first differing field is named.
    """
    run_dir = Path(run_dir)
    cfg_path = run_dir / CONFIG
    if cfg_path.exists():
        old = as_today(read_json(cfg_path), cfg)
        new = cfg.to_dict()
        if old != new:
            diff = _first_difference(old, new)
            raise ConfigError(f"{diff}: {run_dir} holds a run with a different config; use another --out")
        return "done" if is_done(run_dir) else "resume"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / CKPT_DIR).mkdir(exist_ok=True)
    write_json(cfg_path, cfg.to_dict())
    return "new"


def as_today(stored: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """A stored ``config.json`` as ``cfg``'s kind writes it today: renamed fields under their new names
    (:attr:`anchorlab.kinds.RunKind.upgrade`), fields added since set to their defaults. A run directory
    written before a rename or an added field compares equal to the config that would write it today."""
    return with_added_defaults(kinds.kind_of(cfg).upgraded(stored), cfg)


def with_added_defaults(stored: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """``stored`` (a config.json) with the fields added to ``cfg``'s dataclasses since it was written set to
    their defaults: a run made before a field existed behaved as its default, so it still matches."""
    out = dict(stored)
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if f.name not in out:
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                continue
            plain = dataclasses.asdict(default) if dataclasses.is_dataclass(default) else default  # type: ignore[arg-type]
            out[f.name] = json.loads(json.dumps(plain))
        elif dataclasses.is_dataclass(value) and isinstance(out[f.name], dict):
            out[f.name] = with_added_defaults(out[f.name], value)
    return out


def _first_difference(a: Any, b: Any, prefix: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return _first_difference(a.get(k), b.get(k), f"{prefix}{k}.")
    return prefix.rstrip(".") or "config"


def append_metrics(run_dir: Path, record: dict[str, Any], name: str = METRICS) -> None:
    with open(Path(run_dir) / name, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_metrics(run_dir: Path, name: str = METRICS) -> list[dict[str, Any]]:
    path = Path(run_dir) / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def truncate_metrics(run_dir: Path, max_step: int) -> None:
    """Keep only the evaluations at or before ``max_step`` (used when resuming)."""
    for name in (METRICS, EPOCHS):
        if not (Path(run_dir) / name).exists():
            continue
        kept = [r for r in read_metrics(run_dir, name) if r["step"] <= max_step]
        write_atomic(Path(run_dir) / name, "".join(json.dumps(r) + "\n" for r in kept))


def checkpoint_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CKPT_DIR / f"step_{step:07d}.safetensors"


def checkpoint_steps(run_dir: Path) -> list[int]:
    """Steps with a kept weight checkpoint, ascending."""
    d = Path(run_dir) / CKPT_DIR
    return sorted(int(m.group(1)) for p in d.glob("step_*.safetensors")
                  if (m := re.fullmatch(r"step_(\d+)\.safetensors", p.name)))


def _save(tensors: dict[str, torch.Tensor], path: Path, meta: dict[str, str]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp), metadata=meta)
    os.replace(tmp, path)


def save_checkpoint(run_dir: Path, model: nn.Module, step: int, epoch: int) -> Path:
    path = checkpoint_path(run_dir, step)
    _save(dict(model.state_dict()), path, {"step": str(step), "epoch": str(epoch)})
    return path


def load_checkpoint(run_dir: Path, step: int | None = None) -> dict[str, torch.Tensor]:
    """Model weights at ``step`` (default: the last kept step)."""
    steps = checkpoint_steps(run_dir)
    if not steps:
        raise FileNotFoundError(f"{run_dir} has no checkpoints")
    if step is None:
        step = steps[-1]
    if step not in steps:
        raise FileNotFoundError(f"{run_dir} has no checkpoint at step {step}; kept steps: {steps}")
    return load_file(str(checkpoint_path(run_dir, step)))


def save_resume(run_dir: Path, model: nn.Module, optimizer: torch.optim.Optimizer, step: int, epoch: int) -> None:
    """Model and optimizer state at an epoch boundary. Batch order is derived from (train_seed, epoch),
    so no RNG state is needed to continue exactly."""
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    names = {id(p): n for n, p in model.named_parameters()}
    for p, state in optimizer.state.items():
        for k, v in state.items():
            tensors[f"optim.{names[id(p)]}.{k}"] = v if torch.is_tensor(v) else torch.tensor(v)
    _save(tensors, Path(run_dir) / CKPT_DIR / RESUME, {"step": str(step), "epoch": str(epoch)})


def load_resume(run_dir: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[int, int] | None:
    """Restore model and optimizer from the resume state; returns (step, epoch) or None if there is none."""
    from safetensors import safe_open

    path = Path(run_dir) / CKPT_DIR / RESUME
    if not path.exists():
        return None
    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
    tensors = load_file(str(path))
    device = next(model.parameters()).device
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    by_name = dict(model.named_parameters())
    for key, v in tensors.items():
        if key.startswith("optim."):
            pname, field = key[6:].rsplit(".", 1)
            p = by_name[pname]
            optimizer.state[p][field] = v if field == "step" else v.to(device)
    return int(meta["step"]), int(meta["epoch"])


def start_or_resume(run_dir: Path, model: nn.Module, optimizer: torch.optim.Optimizer, status: str,
                    first_eval: Callable[[], dict[str, Any]]) -> tuple[int, int, dict[str, Any], bool]:
    """Begin a run opened with ``status`` (:func:`open_run`): resume from the last epoch boundary (metrics
    after it dropped), or start fresh (step-0 checkpoint, then ``first_eval()`` logs the step-0 record).
    Returns (step, start epoch, last metrics record, resumed)."""
    resumed = load_resume(run_dir, model, optimizer) if status == "resume" else None
    if resumed is None:
        (Path(run_dir) / METRICS).unlink(missing_ok=True)
        (Path(run_dir) / EPOCHS).unlink(missing_ok=True)
        save_checkpoint(run_dir, model, 0, 0)
        return 0, 0, first_eval(), False
    step, epoch = resumed
    truncate_metrics(run_dir, step)
    return step, epoch, read_metrics(run_dir)[-1], True
