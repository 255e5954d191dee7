"""anchorlab: initialization scale vs reasoning and memorizing in Transformers.

Glossary (one meaning per symbol, used in code, configs and docs):

- ``gamma`` (γ): the initialization rate; every weight ~ N(0, std = d_in ** -gamma). Larger γ = smaller init.
- ``d_in``: the input dimension used for a parameter's std (see :mod:`anchorlab.init` for the table).
- ``d_model`` (D), ``d_head`` (K = d_k = d_v), ``n_heads`` (H), ``d_mlp`` (F = d_ff), ``n_layers``,
  ``n_ctx`` (rows of W_pos), ``d_vocab`` (V).
- ``W_E`` [V, D], ``W_pos`` [n_ctx, D], ``W_Q``/``W_K``/``W_V`` [H, D, K], ``W_O`` [H, K, D], ``W_in`` [D, F],
  ``W_out`` [F, D], ``W_U`` [D, V], ``b_U`` [V]: parameters, stored input-first (x @ W).
- anchor: a token whose function shifts the key (P1: 1:+5, 2:+1, 3:-2, 4:-8); key: the item right before
  the anchors; noise: every other item.
- inferential answer on the held-out pair (4,3): x - 10 (the composition); symmetric answer: x - 6
  (the mapping of the seen reversed pair (3,4)).
- xel / xm0: train-type / test-type keys (key mod 9 != / == its position).
- P2 (``mem_rsn`` task): keys Z = key_min..key_max; ``q`` anchors follow the key; memory anchors A_mem
  (label looked up once per (key, anchors) from U(Z)) and reasoning anchors A_rsn (label key + sum of the
  anchors); D_mem, D_rsn,train, D_rsn,test (the masked reasoning tuples); d_vob = d_vocab.
- Emb-MLP: G(X) = act(sum of W_E rows of X @ W_in) @ W_U, with ``W_U`` [F, V] there (d_in = F).
- P^s: the label distribution of rows containing anchor s (:mod:`anchorlab.theory`).
"""

__version__ = "0.1.0"
__all__ = ["__version__", "load_run", "load_sweep"]


def __getattr__(name: str):
    """``anchorlab.load_run`` / ``anchorlab.load_sweep`` (:mod:`anchorlab.api`), imported on first use so that
    ``import anchorlab`` stays light."""
    if name in ("load_run", "load_sweep"):
        from anchorlab import api

        return getattr(api, name)
    raise AttributeError(f"module 'anchorlab' has no attribute {name!r}")
