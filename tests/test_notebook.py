"""examples/explore_a_run.ipynb runs top to bottom (nbclient), so it cannot rot. ~15 s: two tiny runs."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook test needs the [notebook] extra")
nbclient = pytest.importorskip("nbclient", reason="the notebook test needs the [notebook] extra")
pytest.importorskip("ipykernel", reason="the notebook test needs the [notebook] extra")
pytest.importorskip("pandas", reason="the notebook test needs the [notebook] extra")

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "explore_a_run.ipynb"


@pytest.mark.slow
def test_explore_a_run_notebook_executes(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, with the cell's traceback, if any cell fails
    assert (tmp_path / "runs" / "explore_a_run" / "gamma_0.5" / "DONE").is_file()
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) >= 3  # the loss curve, the attention patterns, the γ comparison
