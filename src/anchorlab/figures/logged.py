"""What P1 figures read from composite-task runs' logs (configs, summaries, metrics), no checkpoints: which
inputs of the held-out pair a figure reads (option ``keys``), a run's config and probe pair, its W_Q init std, the
best value it logged, and the config fields in which runs differ. Shared by :mod:`.phase`, :mod:`.gamma` and
:mod:`.curves`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anchorlab import rundir
from anchorlab.config import CompositeTaskConfig, ConfigError, RunConfig
from anchorlab.config_tools import varied_fields

# Which inputs of the held-out pair a figure reads (option ``keys``): both key types pooled (our headline, the
# default), or one type. The authors' logs and figure code read the train-type keys (group 43_xel); P1 App. C
# names both ("pairs of unseen anchors with test data or training data"). Every evaluation logs all three.
PROBE_KEYS = {"both": "", "train": "_xel", "test": "_xm0"}


KEYS_NAMES = {"both": "pooled over key types", "train": "train-type keys", "test": "test-type keys"}


def probe_suffix(figure_name: str, keys: str) -> str:
    """The metric-name suffix of option ``keys`` (:data:`PROBE_KEYS`); a bad value is one line naming it."""
    if keys not in PROBE_KEYS:
        raise ConfigError(f"figure {figure_name}: option keys: one of both (pooled, the default), train (the "
                          f"authors' 43_xel) or test (43_xm0), got {keys!r}")
    return PROBE_KEYS[keys]


def best_logged(run_dir: Path, metrics: tuple[str, ...]) -> dict[str, float]:
    """The highest value of each of ``metrics`` over the run's ``metrics.jsonl`` (those it never logged left out)."""
    history = rundir.read_metrics(run_dir)
    return {m: max(values) for m in metrics if (values := [h[m] for h in history if h.get(m) is not None])}


def composite_config(run_dir: Path) -> RunConfig | None:
    """The config of a composite-task (P1) run directory; None for another kind of run or no run at all."""
    if not (run_dir / rundir.CONFIG).is_file() or "data" in (raw := rundir.read_json(run_dir / rundir.CONFIG)) \
            or "seq2seq" in raw or raw.get("task", {}).get("name", "composite") != "composite":
        return None
    return rundir.read_config(run_dir)


def probe_pair(cfg: RunConfig) -> str:
    """The held-out pair a composite-task run is probed on, as "(4,3)"."""
    task = cfg.task
    assert isinstance(task, CompositeTaskConfig)  # composite_config lets only composite-task runs through
    return "({},{})".format(*task.probe_pair)


def probe_answers(cfg: RunConfig) -> tuple[str, str]:
    """The held-out pair's two readings as answers, (inferential, symmetric): ("x−10", "x−6") for P1's (4,3).
    The inferential one composes the two anchors' shifts; the symmetric one is the reversed pair's answer."""
    from anchorlab.analysis.answers import shift_name
    from anchorlab.tasks.composite import inferential_shift, symmetric_shift

    task = cfg.task
    assert isinstance(task, CompositeTaskConfig)
    return shift_name(inferential_shift(task, *task.probe_pair)), shift_name(symmetric_shift(task, *task.probe_pair))


def probe_columns(cfg: RunConfig) -> dict[str, str]:
    """A figure row's columns naming what its accuracies read: the pair and the answer of each reading."""
    inferential, symmetric = probe_answers(cfg)
    return {"pair": probe_pair(cfg), "inferential_answer": inferential, "symmetric_answer": symmetric}


def common_answers(rows: list[dict[str, Any]]) -> tuple[str, str] | None:
    """The (inferential, symmetric) answers all ``rows`` share (:func:`probe_columns`), for a legend's
    "inferential (4,3) → x−10"; None where runs of other tasks are drawn together."""
    found = {(r.get("inferential_answer"), r.get("symmetric_answer")) for r in rows}
    if len(found) != 1:
        return None
    inferential, symmetric = found.pop()
    return (str(inferential), str(symmetric)) if inferential and symmetric else None


def sweep_probe(sweep_dir: Path, rows: list[dict[str, Any]]) -> tuple[str, tuple[str, str] | None]:
    """The held-out pair(s) the composite-task runs of ``rows`` (of a sweep's ``collect``) are read on, as a
    title names them ("(4,3)"), and the answers they share (:func:`common_answers`)."""
    found = [probe_columns(cfg) for r in rows if (cfg := composite_config(sweep_dir / r["run_id"])) is not None]
    return " / ".join(sorted({c["pair"] for c in found})) or "(held-out pair)", common_answers(found)


def std_W_Q(cfg: RunConfig) -> float | None:
    """The init std of a Transformer's W_Q (None for the Emb-MLP), as a finished run's summary records it."""
    from anchorlab.init import init_std

    m = cfg.model
    return init_std("attn_in", (m.n_heads, m.d_model, m.d_head), cfg.init) if m.name == "gpt" else None


def varied_of(cfgs: list[RunConfig], named: tuple[str, ...] = ("init.gamma", "seeds.")) -> list[dict[str, Any]]:
    """Per config, the dotted fields in which ``cfgs`` differ beyond those the figure ``named`` already
    (:func:`~anchorlab.config_tools.varied_fields`): what tells two runs of one γ and seed apart."""
    return varied_fields([c.to_dict() for c in cfgs], named)


def varied_parts(varied: dict[str, Any]) -> list[str]:
    """["weight_decay 0.3"] for {"train.weight_decay": 0.3}: the last part of each name, a number as %g."""
    return [f"{k.rsplit('.', 1)[-1]} {v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool)
            else f"{k.rsplit('.', 1)[-1]} {v}" for k, v in varied.items()]
