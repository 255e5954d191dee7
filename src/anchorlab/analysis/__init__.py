"""P1 mechanism analyses (P1 Fig. 3-5, 10-13, 15-16): pure functions on weights and activations, plus a run loader.

Modules: :mod:`.attention` (E3 information flow), :mod:`.embeddings` (E4/E5/E6/E8 vectors, PCA, cosines),
:mod:`.condensation` (E7 W_Q neuron grouping), :mod:`.spectra` (E9 covariance eigenvalues, E10 singular
values), :mod:`.attribution` (direct logit attribution and the logit lens, post-LN included), :mod:`.patching`
(activation patching of the residual stream), :mod:`.answers`
(the held-out pair key by key), :mod:`.summary` (scalars for run metrics). 2-D maps are PCA, or t-SNE with the
optional scikit-learn.
"""

from __future__ import annotations

from pathlib import Path

from torch import nn

from anchorlab import rundir
from anchorlab.config import RunConfig
from anchorlab.models import build_model


def load_model(run_dir: str | Path, step: int | None = None) -> tuple[nn.Module, RunConfig]:
    """Rebuild the model of ``run_dir`` from its ``config.json`` and load the weights kept at ``step``
    (default: the last kept step). Returns (model in eval mode on the CPU, config)."""
    cfg = rundir.read_config(Path(run_dir))
    model = build_model(cfg.model, cfg.task.vocab_size)
    model.load_state_dict(rundir.load_checkpoint(Path(run_dir), step), strict=True)
    return model.eval(), cfg
