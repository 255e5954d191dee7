"""Runs and sweeps as Python objects, for notebooks: ``anchorlab.load_run(dir)`` and ``anchorlab.load_sweep(dir)``.

::

    import anchorlab
    run = anchorlab.load_run("runs/demo/0c84d52a6693")
    run.config.init.gamma               # the resolved config dataclass (RunConfig; LMRunConfig, Seq2SeqRunConfig)
    run.metrics.plot(x="step", y="train_loss")   # metrics.jsonl as a pandas DataFrame, one row per evaluation
    run.summary["unseen_symmetric_acc"] # summary.json ({} while the run is unfinished)
    run.checkpoints                     # steps with kept weights, ascending
    model = run.model()                 # weights of the last checkpoint (or .model(step=N)), eval mode, CPU
    from anchorlab.models import run_with_cache
    logits, cache = run_with_cache(model, tokens)   # cache["blocks.0.attn.hook_pattern"], ...
    table = anchorlab.load_sweep("runs/demo")       # what `anchorlab collect` writes, as a DataFrame

pandas is the ``notebook`` extra (``pip install 'anchorlab[notebook]'``) and is imported only by ``.metrics``,
``.epochs`` and :func:`load_sweep`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from anchorlab import kinds, rundir


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("anchorlab.load_run(...).metrics and load_sweep need pandas: "
                          "pip install 'anchorlab[notebook]'") from None
    return pandas


def _text(name: str) -> Any:
    """A function of the real-language training module (``anchorlab.text.lm``, or where it has moved)."""
    for module in ("anchorlab.text.lm", "anchorlab.text.train", "anchorlab.text.model"):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(mod, name):
            return getattr(mod, name)
    raise ImportError(f"anchorlab.text has no {name}; real-language runs need the [hf] and [text] extras")


@dataclass(frozen=True)
class Run:
    """One run directory (written by ``anchorlab train``, ``lm``, ``seq2seq`` or a sweep), read on demand:
    ``metrics``, ``summary`` and ``checkpoints`` are re-read at every access, so a run still training shows
    its latest evaluations."""

    path: Path
    config: Any  # RunConfig, LMRunConfig (real language) or Seq2SeqRunConfig (P1's real tasks)
    kind: str  # its entry in anchorlab.kinds.KINDS: "anchor", "lm" (GPT-2 on PrOntoQA + stories) or "seq2seq"

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def done(self) -> bool:
        return rundir.is_done(self.path)

    @property
    def metrics(self) -> Any:
        """``metrics.jsonl`` as a DataFrame, one row per evaluation (``step``, ``epoch``, ``lr``, losses,
        accuracies, ...). Nested records (``group_acc``, ``unseen_deviation``) stay dicts in their column:
        ``pd.json_normalize(run.metrics["group_acc"])`` spreads them out."""
        return _pandas().DataFrame(rundir.read_metrics(self.path))

    @property
    def epochs(self) -> Any:
        """``epochs.jsonl`` (the mean training loss of every epoch) as a DataFrame; empty where not written."""
        return _pandas().DataFrame(rundir.read_metrics(self.path, "epochs.jsonl"))

    @property
    def summary(self) -> dict[str, Any]:
        """``summary.json``: final and best metrics, parameter count, timing ({} while unfinished)."""
        path = self.path / rundir.SUMMARY
        return rundir.read_json(path) if path.is_file() else {}

    @property
    def checkpoints(self) -> list[int]:
        """Steps with kept weights, ascending (step 0 is always kept)."""
        return rundir.checkpoint_steps(self.path)

    def model(self, step: int | None = None) -> nn.Module:
        """The model with the weights kept at ``step`` (default: the last checkpoint), in eval mode on the CPU.

        Anchor-task runs give our GPT (or Emb-MLP), whose hook points :func:`anchorlab.models.run_with_cache`
        reads; real-language runs give the γ-initialized HF GPT-2 wrapper (``model(ids)`` -> logits; ``model.hf``
        with eager attention, so that ``output_attentions=True`` returns the patterns); seq2seq
        runs their decoder (our GPT or the HF GPT-2 wrapper, by ``model.arch``) over the ids of ``data.json``'s
        ``tokens``."""
        if self.kind == "anchor":
            from anchorlab.analysis import load_model

            return load_model(self.path, step)[0]
        if self.kind == "seq2seq":
            return self._seq2seq_model(step)
        return self._lm_model(step)

    def _seq2seq_model(self, step: int | None) -> nn.Module:
        from anchorlab.text.seq2seq import EOS
        from anchorlab.text.seq2seq_model import build_model

        weights = rundir.load_checkpoint(self.path, step)
        info = rundir.read_json(self.path / "data.json")  # written before the first checkpoint
        tokens = list(info["tokens"])
        model = build_model(self.config, len(tokens), int(info["n_ctx"]), tokens.index(EOS) if EOS in tokens else None)
        model.load_state_dict(weights)
        return model.eval()

    def _lm_model(self, step: int | None) -> nn.Module:
        weights = rundir.load_checkpoint(self.path, step)
        tokenizer = self.tokenizer()
        model = _text("build_lm")(self.config, weights["hf.transformer.wte.weight"].shape[0], tokenizer.eos_id)
        model.load_state_dict(weights)
        # for looking inside: HF's default SDPA attention returns no attention weights (output_attentions=True);
        # the eager one computes the same outputs and returns them
        model.hf.set_attn_implementation("eager")
        return model.eval()

    def tokenizer(self) -> Any:
        """A real-language run's tokenizer (``encode``, ``decode``, ``vocab_size``, ``eos_id``)."""
        if self.kind != "lm":
            raise ValueError(f"{self.path} is an anchor-task run: its tokens are the integers themselves"
                             if self.kind == "anchor" else
                             f"{self.path} is a seq2seq run: its vocabulary is the tokens list of its data.json")
        from anchorlab.text.tokenizers import gpt2_tokenizer, load_tokenizer

        if self.config.data.tokenizer == "gpt2":
            return gpt2_tokenizer()
        return load_tokenizer(self.path / "data" / "tokenizer.json")

    def data(self) -> Any:
        """An anchor-task run's dataset (:class:`anchorlab.tasks.TaskData`: inputs, targets, groups, split), or a
        seq2seq run's rows (:class:`anchorlab.text.seq2seq_data.TaskRows`), regenerated from its config and seeds."""
        if self.kind == "seq2seq":
            from anchorlab.text.seq2seq_data import task_rows

            return task_rows(self.config)
        if self.kind != "anchor":
            raise ValueError(f"{self.path} is a real-language run: its rows are under {self.path / 'data'}")
        from anchorlab.tasks import make_task_data

        return make_task_data(self.config.task, self.config.seeds.data_seed)

    def __repr__(self) -> str:
        status = "done" if self.done else "unfinished"
        return f"Run({str(self.path)!r}, kind={self.kind!r}, gamma={self.config.init.gamma:g}, {status})"


def _read_config(run_dir: Path) -> tuple[Any, str]:
    """The run's config and its kind, as the run-kind registry (:mod:`anchorlab.kinds`) decides them."""
    cfg = rundir.read_config(run_dir)
    return cfg, kinds.kind_of(cfg).name


def load_run(run_dir: str | Path) -> Run:
    """The run in ``run_dir`` (a directory holding ``config.json``, or that file itself), finished or not."""
    run_dir = Path(run_dir)
    if run_dir.name == rundir.CONFIG and run_dir.is_file():  # the config file given: its run directory
        run_dir = run_dir.parent
    if not (run_dir / rundir.CONFIG).is_file():
        hint = " (a sweep directory: use anchorlab.load_sweep)" if (run_dir / "sweep.json").is_file() else ""
        raise FileNotFoundError(f"{run_dir} holds no {rundir.CONFIG}: not a run directory{hint}")
    config, kind = _read_config(run_dir)
    return Run(run_dir, config, kind)


def load_sweep(sweep_dir: str | Path, *more: str | Path) -> Any:
    """The tidy table that ``anchorlab collect SOURCE...`` writes, as a DataFrame: one row per run with its
    grid coordinates, status and every scalar of its summary (``best_<metric>`` for the best evaluation).
    Besides a sweep directory, a folder of ``anchorlab train`` runs (or several sources) is read too: its runs'
    coordinates are the config fields in which they differ (:func:`anchorlab.sweep.collect_sources`)."""
    from anchorlab.sweep import collect_sources

    return _pandas().DataFrame(collect_sources([sweep_dir, *more]))
