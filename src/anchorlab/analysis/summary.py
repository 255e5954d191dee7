"""Scalar mechanism indicators of one model, for adding to run metrics (P1 Fig. 5, 12, 13)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from anchorlab.analysis.condensation import greedy_groups, neuron_cosine, wq_neurons
from anchorlab.analysis.embeddings import embedding_rows, item_tokens
from anchorlab.analysis.spectra import embedding_covariance_eigs, linear_layer_spectra, stable_rank, top_eig_share
from anchorlab.config import CompositeTaskConfig, RunConfig


def mechanism_scalars(model: nn.Module, threshold: float = 0.7,
                      embed_tokens: Sequence[int] | None = None) -> dict[str, float]:
    """Flat dict of scalars:

    * ``wq0_n_groups`` (Transformer only): greedy groups of W_Q layer-0 neurons at ``threshold``;
      ``wq0_largest_group_frac``: size of the largest group / number of neurons.
    * ``stable_rank/<param>``: Σ(s_i/s_max)² of every 2-D/3-D weight (see ``linear_layer_spectra``).
    * ``embed_cov_top_share``: top eigenvalue / trace of the covariance of the W_E rows of
      ``embed_tokens`` (default: every row; pass the item tokens, e.g. ``range(20, 100)``, to follow E8/E9).
    """
    out: dict[str, float] = {}
    if hasattr(model, "blocks"):  # the W_Q scalars exist only for the Transformer
        C = neuron_cosine(wq_neurons(model, 0))
        groups = greedy_groups(C, threshold)
        out.update({"wq0_n_groups": float(len(groups)), "wq0_largest_group_frac": max(len(g) for g in groups) / len(C)})
    for name, s in linear_layer_spectra(model).items():
        out[f"stable_rank/{name}"] = stable_rank(s)
    W_E = model.embed.W_E if hasattr(model, "embed") else model.W_E
    tokens = range(W_E.shape[0]) if embed_tokens is None else embed_tokens
    out["embed_cov_top_share"] = top_eig_share(embedding_covariance_eigs(embedding_rows(model, tokens)))
    return {k: float(np.float64(v)) for k, v in out.items()}


def readouts(model: nn.Module, task_cfg: CompositeTaskConfig) -> dict[str, float]:
    """P1's routing and pair-order readouts of one model (what ``p1-readouts`` draws along training):
    ``routing_symmetric`` / ``routing_inferential``, the information-flow mechanism scores of the held-out pair
    averaged over every key (P1 Fig. 3), ``keys_inferential_ahead`` of ``keys``; ``order_separation``, how far
    apart (a,b) and (b,a) lie after the first block in its 2-D PCA map (E4, Fig. 3b; 0 = order lost). And where
    the answer is held (not in P1; :func:`~anchorlab.analysis.patching.order_patching`): ``answer_margin``, the
    mean margin logit(inferential) − logit(symmetric) of the held-out pair's probe inputs, and
    ``order_first_anchor`` / ``order_second_anchor``, the share of the margin's change from the pair to its
    reversed order that patching the first block's output at that anchor's position moves (NaN where the two
    orders' margins are within ``patching.MIN_GAP``: the order does not reach the answer). Runs the model once
    per key plus one batch of E4 inputs and the patching's passes (two of 9 copies of the keys' batch). (The
    W_Q stable rank ``p1-readouts`` draws beside them is :func:`mechanism_scalars`'
    ``stable_rank/blocks.0.attn.W_Q``.)"""
    from anchorlab.analysis.attention import DEFAULT_KEY_POS, mean_mechanism_scores
    from anchorlab.analysis.embeddings import attention_output_vectors, embed_2d, order_separation
    from anchorlab.analysis.patching import order_patching

    with torch.no_grad():
        mean, ahead, n = mean_mechanism_scores(model, task_cfg, task_cfg.probe_pair)
        X, pairs = attention_output_vectors(model, task_cfg)
        patched = order_patching(model, task_cfg, components=False)
    after_block_1 = patched["effect"][patched["sites"].index("blocks.1.hook_resid_pre")]  # block 1's output
    return {"routing_symmetric": mean["symmetric"], "routing_inferential": mean["inferential"],
            "keys_inferential_ahead": float(ahead), "keys": float(n),
            "order_separation": order_separation(embed_2d(X, "pca")[0], pairs),
            "answer_margin": float(patched["clean"]),
            "order_first_anchor": float(after_block_1[DEFAULT_KEY_POS + 1]),
            "order_second_anchor": float(after_block_1[DEFAULT_KEY_POS + 2])}


# The readouts (:func:`readouts`) every evaluation of a composite-task GPT of 2 layers or more logs, under these
# names: P1 Fig. 3's routing scores averaged over the held-out pair's keys, and Fig. 3b's pair-order separation
# (since 2026-11-28); where the answer is held: its margin and where the first block leaves the pair's order
# (:data:`ANSWER_READOUTS`, since 2026-11-29; an order share is left out of an evaluation where it is NaN).
ROUTING_READOUTS = {"flow_symmetric": "routing_symmetric", "flow_inferential": "routing_inferential",
                    "flow_inferential_ahead": "keys_inferential_ahead", "order_separation": "order_separation"}
ANSWER_READOUTS = {"answer_margin": "answer_margin", "order_first_anchor": "order_first_anchor",
                   "order_second_anchor": "order_second_anchor"}
LOGGED_READOUTS = {**ROUTING_READOUTS, **ANSWER_READOUTS}


def logs_readouts(cfg: RunConfig) -> bool:
    """Whether training logs :data:`LOGGED_READOUTS` for ``cfg``: a GPT of 2 or more layers that the probe
    template fits (:func:`~anchorlab.analysis.attention.probe_why_not`)."""
    from anchorlab.analysis.attention import probe_why_not

    return cfg.model.name == "gpt" and probe_why_not(cfg, 2) is None


def training_metrics(cfg: RunConfig) -> Callable[[nn.Module], dict[str, float]] | None:
    """What training logs from the model at every evaluation (:attr:`anchorlab.kinds.RunKind.training_metrics`),
    for a GPT on the composite task: :func:`mechanism_scalars` over the item tokens (weight-only SVDs), and
    where :func:`logs_readouts`, :data:`LOGGED_READOUTS` (a batch of the held-out pair's probe inputs, one of E4
    inputs and the order patching's, in fp32 without gradients; no random draw, so training is unchanged).
    Nothing for any other run."""
    if cfg.model.name != "gpt" or not isinstance(cfg.task, CompositeTaskConfig):
        return None
    tokens, task, probes = item_tokens(cfg.task), cfg.task, logs_readouts(cfg)

    def metrics(model: nn.Module) -> dict[str, float]:
        out = mechanism_scalars(model, embed_tokens=tokens)
        if probes:
            r = readouts(model, task)
            out.update({name: r[key] for name, key in LOGGED_READOUTS.items() if math.isfinite(r[key])})
        return out
    return metrics
