"""analysis/explore_stalls.ipynb: stored without outputs, and runs top to bottom on the
shipped reports with no cell error (started from analysis/, as `make notebook` does)."""
from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "flashprof" / "analysis" / "explore_stalls.ipynb"


def test_notebook_is_stored_stripped():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    for c in code:
        assert c.outputs == [] and c.execution_count is None


def test_notebook_imports_the_installed_package():
    """No sys.path edits, no search for a checkout: it imports flashprof as installed and
    finds the reports through flashprof.paths."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "sys.path" not in code and "import sys" not in code and "FLASHPROF_ROOT" not in code
    assert "from flashprof import paths" in code and "paths.ROOT" in code


def _kernel_name() -> str:
    # The kernel spec installed by ipykernel into this interpreter's prefix (the venv).
    from jupyter_client.kernelspec import KernelSpecManager
    specs = KernelSpecManager().find_kernel_specs()
    if "python3" not in specs:
        pytest.skip("no python3 kernel spec: python -m ipykernel install --sys-prefix")
    return "python3"


@pytest.mark.slow
@pytest.mark.parametrize("cwd", ["flashprof/analysis", "tests"])
def test_notebook_runs_clean(cwd):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name=_kernel_name(),
                                     resources={"metadata": {"path": str(ROOT / cwd)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)  # figures rendered inline


def test_notebook_as_root_allows_root():
    """CI and the GPU machine run as root, where Jupyter refuses to start without --allow-root."""
    pytest.importorskip("notebook")
    from flashprof.verbs import jupyter_command
    cmd = jupyter_command(NOTEBOOK, ["--no-browser"], euid=0)
    assert "--allow-root" in cmd and "--no-browser" in cmd and cmd[-1] == str(NOTEBOOK)
    assert "--allow-root" not in jupyter_command(NOTEBOOK, [], euid=1000)
