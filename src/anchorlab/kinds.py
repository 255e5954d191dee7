"""Run kinds, one registry: whether a run is an anchor-task run or a real-language one is decided here.

A kind names, as ``"module:attribute"`` strings, everything that differs between the two: the config class,
how plain data (a TOML file, a ``config.json``) becomes a config, the training function, the metrics logged
from the weights during training, the report's run section and sweep page, and the figure recipes that
read its runs. Nothing is imported until it is used, so an anchor-task sweep never loads the text stack,
and this module can sit at the bottom of the package (it imports nothing of anchorlab at load time).

Sweeps, the executor, :func:`anchorlab.rundir.read_config`, training, the report and the figures ask this module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def load(ref: str) -> Any:
    """The object named by ``"package.module:attribute"``, importing the module now."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class RunKind:
    name: str
    config_class: str  # the frozen config dataclass; its ``kind`` class constant is ``name``
    from_dict: str  # (plain data) -> validated config; field names from older run directories included
    with_defaults: str  # (plain data) -> the full tree, defaults filled in (a sweep's base)
    load_config: str  # (TOML path or None, ["key=value", ...]) -> validated config
    train: str  # (cfg, run_dir, *, progress, show_progress) -> summary
    summary_line: str  # (cfg, summary) -> the one line `anchorlab train` / `anchorlab lm` prints
    report_run: str  # (run_dir, anchor) -> the HTML of a report whose source is one run
    report_sweep: str  # (sweep_dir, max_run_figures, anchor) -> (title, HTML) of a sweep's page
    figure_modules: tuple[str, ...]  # modules whose recipes (:mod:`anchorlab.figures`) read this kind's runs
    upgrade: str = ""  # (stored config.json) -> the same config under today's field names ("": none renamed)
    training_metrics: str = ""  # (cfg) -> None or (model -> {name: scalar}), logged at every evaluation
    preflight: str = ""  # ([cfg, ...]) -> None; raises (one line) when the run's input files are not there ("": none)

    def get(self, field: str) -> Callable[..., Any]:
        """The function named by ``field``, imported now."""
        return load(getattr(self, field))

    def upgraded(self, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored config (``config.json``) under today's field names."""
        return self.get("upgrade")(stored) if self.upgrade else stored


KINDS: dict[str, RunKind] = {
    "anchor": RunKind(
        name="anchor",
        config_class="anchorlab.config:RunConfig",
        from_dict="anchorlab.config:from_dict",
        with_defaults="anchorlab.config:with_defaults",
        load_config="anchorlab.config:load_config",
        train="anchorlab.train:train",
        summary_line="anchorlab.metrics:summary_line",
        report_run="anchorlab.report.anchor:run_page",
        report_sweep="anchorlab.report.anchor:sweep_page",
        figure_modules=("anchorlab.figures.phase", "anchorlab.figures.gamma", "anchorlab.figures.curves",
                        "anchorlab.figures.frontier", "anchorlab.figures.p1", "anchorlab.figures.p2"),
        training_metrics="anchorlab.analysis.summary:training_metrics",
        preflight="anchorlab.reference:preflight",
    ),
    "lm": RunKind(
        name="lm",
        config_class="anchorlab.text.config:LMRunConfig",
        from_dict="anchorlab.text.config:lm_from_dict",
        with_defaults="anchorlab.text.config:lm_with_defaults",
        load_config="anchorlab.text.config:load_lm_config",
        train="anchorlab.text.train:train_lm",
        summary_line="anchorlab.text.train:summary_line",
        report_run="anchorlab.report.lm:run_page",
        report_sweep="anchorlab.report.lm:sweep_page",
        figure_modules=("anchorlab.figures.text",),
        upgrade="anchorlab.text.config:upgrade",
        preflight="anchorlab.text.data:preflight",
    ),
    "seq2seq": RunKind(  # P1's real tasks (SCAN, COGS: Fig. 6; addition: Fig. 17a): output-only loss, greedy decoding
        name="seq2seq",
        config_class="anchorlab.text.seq2seq_config:Seq2SeqRunConfig",
        from_dict="anchorlab.text.seq2seq_config:s2s_from_dict",
        with_defaults="anchorlab.text.seq2seq_config:s2s_with_defaults",
        load_config="anchorlab.text.seq2seq_config:load_s2s_config",
        train="anchorlab.text.seq2seq_train:train_seq2seq",
        summary_line="anchorlab.text.seq2seq_train:summary_line",
        report_run="anchorlab.report.seq2seq:run_page",
        report_sweep="anchorlab.report.seq2seq:sweep_page",
        figure_modules=("anchorlab.figures.real_tasks",),
        preflight="anchorlab.text.seq2seq_data:preflight",
    ),
}


def kind_of_data(config: dict[str, Any]) -> RunKind:
    """The kind of a config given as plain data (a TOML file, a sweep's base, a ``config.json``): a real-task
    config has a ``[seq2seq]`` table, a real-language config a ``[data]`` table; any other is an anchor-task config."""
    if "seq2seq" in config:
        return KINDS["seq2seq"]
    return KINDS["lm" if "data" in config else "anchor"]


def kind_of(cfg: Any) -> RunKind:
    """The kind of a config object (its class constant ``kind``)."""
    return KINDS[type(cfg).kind]


def with_overrides(cfg: Any, overrides: list[str] | tuple[str, ...]) -> Any:
    """``cfg`` with dotted ``KEY=VALUE`` overrides (``--set``) applied, validated as a config of its kind."""
    from anchorlab.config_tools import parse_override, set_dotted

    d = cfg.to_dict()
    for item in overrides:
        set_dotted(d, *parse_override(item))
    return kind_of(cfg).get("from_dict")(d)


def config_from_data(config: dict[str, Any]) -> Any:
    """A validated config of the right kind from plain data (old field names included)."""
    return kind_of_data(config).get("from_dict")(config)


def preflight(cfgs: list[Any]) -> None:
    """Check, before anything runs, that the input files of every config are there (each kind's ``preflight``):
    a missing data set stops the command with one line instead of failing every run of a sweep."""
    for name, kind in KINDS.items():
        mine = [c for c in cfgs if kind_of(c).name == name]
        if kind.preflight and mine:
            kind.get("preflight")(mine)


def figure_modules() -> list[str]:
    """Every figure-recipe module, kind by kind."""
    return [m for k in KINDS.values() for m in k.figure_modules]
