"""The package's import graph (docs/architecture.md): no cycle, and no import from a lower layer up to a higher one.

Every ``import`` / ``from ... import`` of an anchorlab module anywhere in a file counts, those inside functions
too. The run-kind registry (:mod:`anchorlab.kinds`) and the figure registry name modules by string and
import them on use; those are the only edges this test does not see, on purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "anchorlab"

# Layer of each module, by longest dotted prefix (a package's entry covers its modules). A module may import
# modules of its own layer or below, never above. Keep in step with docs/architecture.md.
LAYERS: dict[str, int] = {
    # 0 plain data: the anchor-task config, the run-kind registry, CPU setup, plots from arrays
    "anchorlab": 0, "config_tools": 0, "config": 0, "kinds": 0, "cpu": 0, "provenance": 0, "plotting": 0,
    # 1 data, models, init, metrics, schedules, the run directory; the text package (its config included)
    "tasks": 1, "text": 1, "models": 1, "init": 1, "gamma_init": 1, "reference": 1, "metrics": 1, "theory": 1,
    "phase": 1, "schedule": 1, "rundir": 1, "tracking": 1,
    # 2 training: one run (or K stacked runs) into a run directory
    "train": 2, "text.train": 2, "text.seq2seq_train": 2, "batched": 2, "cuda_graph": 2, "extend": 2,
    # 3 reading runs and running many: analysis, sweeps, back-ends, the executor
    "analysis": 3, "sweep": 3, "export": 3, "status": 3, "backends": 3, "execute": 3,
    # 4 figure recipes
    "figures": 4,
    # 5 applications: the report, the paper registry, the demo, the notebook API
    "report": 5, "reproduce": 5, "demo": 5, "api": 5,
    # 6 the command line
    "cli": 6,
}


# Imports allowed against the layering: the package root exports ``load_run`` / ``load_sweep`` from the
# notebook API lazily (a module ``__getattr__``, so ``import anchorlab`` stays light).
FACADES = {("anchorlab", "anchorlab.api")}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("anchorlab", *parts))


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The anchorlab modules that ``path`` imports (``from pkg import mod`` counts as importing ``pkg.mod``)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1], *filter(None, [base])])
            for a in node.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: imports(m, p, set(mods)) for m, p in mods.items()}


def layer(module: str) -> int:
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in LAYERS:
            return LAYERS[key]
    if not parts:
        return LAYERS["anchorlab"]
    raise KeyError(module)


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(g[m]):
            if state.get(n) == 1:
                return [*stack[stack.index(n):], n]
            if n not in state and (c := visit(n)):
                return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(g):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_the_import_graph_sees_the_package():
    g = graph()
    assert "anchorlab.train" in g and "anchorlab.backends.ray" in g
    assert "anchorlab.rundir" in g["anchorlab.train"] and "anchorlab.kinds" in g["anchorlab.rundir"]


def test_no_import_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_every_module_has_a_layer():
    unknown = [m for m in modules() if _layer_or_none(m) is None]
    assert not unknown, f"add these modules to LAYERS here and in docs/architecture.md: {unknown}"


def test_no_upward_import():
    upward = [f"{m} (layer {layer(m)}) imports {n} (layer {layer(n)})" for m, ns in graph().items()
              for n in sorted(ns) if _layer_or_none(m) is not None and _layer_or_none(n) is not None
              and layer(n) > layer(m) and (m, n) not in FACADES]
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_training_does_not_import_analysis():
    g = graph()
    for m in ("anchorlab.train", "anchorlab.text.train", "anchorlab.batched"):
        assert not {n for n in g[m] if n.startswith("anchorlab.analysis")}, m


@pytest.mark.parametrize("edges, cycle", [({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
                                          ({"a": {"b"}, "b": {"c"}, "c": set()}, False)])
def test_find_cycle(edges, cycle):
    assert (find_cycle(edges) is not None) == cycle


def _layer_or_none(module: str) -> int | None:
    try:
        return layer(module)
    except KeyError:
        return None
