"""Shared tiny configs: CPU only, d_model 16, one or two layers."""

from __future__ import annotations

import pytest
import torch

from anchorlab.config import RunConfig

torch.set_num_threads(1)


def tiny_config(**dotted) -> RunConfig:
    base = {
        "task.data_size": 3200, "model.d_model": 16, "model.d_head": 8, "model.d_mlp": 32,
        "train.batch_size": 64, "train.epochs": 3, "train.lr": 1e-3, "train.lr_multiplier": 2.0,
        "train.warmup_epochs": 1.0, "train.cosine_epochs": 2.0, "train.eval_every": 1,
        "train.checkpoint_every": 1, "train.threads": 1,
    }
    base.update(dotted)
    return RunConfig().replace(**base)


@pytest.fixture
def tiny() -> RunConfig:
    return tiny_config()


def sweep_sets(path, tmp_path) -> list[str]:
    """The ``--set`` a shipped sweep file needs on its command line: a grid over ``task.reference_parts`` names
    a reference file (here an empty stand-in: only its existence is checked before anything runs)."""
    if "task.reference_parts" not in path.read_text():
        return []
    (tmp_path / "ref.npz").write_bytes(b"")
    return [f"task.reference='{tmp_path / 'ref.npz'}'"]


def train_batched_killed(monkeypatch, cfgs, run_dirs, after_saves: int) -> None:
    """``anchorlab.batched.train_batched(cfgs, run_dirs)`` killed (KeyboardInterrupt) right after its
    ``after_saves``-th resume state is written, as a session stopped mid-run; the real writer is back after."""
    import pytest

    import anchorlab.batched as Bt

    real, calls = Bt.rundir.save_resume, {"n": 0}

    def die(*a, **k):
        real(*a, **k)
        calls["n"] += 1
        if calls["n"] == after_saves:
            raise KeyboardInterrupt
    monkeypatch.setattr(Bt.rundir, "save_resume", die)
    with pytest.raises(KeyboardInterrupt):
        Bt.train_batched(cfgs, run_dirs, show_progress=False)
    monkeypatch.setattr(Bt.rundir, "save_resume", real)
