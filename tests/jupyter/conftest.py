"""Run notebooks on a real Jupyter kernel, in a temp copy of the working dir."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

RunNotebook = Callable[..., Any]


@pytest.fixture(scope="session")
def kernel_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``python3`` kernelspec that starts this interpreter (whatever is installed system-wide)."""
    from ipykernel.kernelspec import install

    prefix = tmp_path_factory.mktemp("jupyter")
    install(kernel_name="python3", prefix=str(prefix))
    return prefix / "share" / "jupyter"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A copy of ``examples/`` and ``councils/``, so runs write ``.wop/`` there, not in the repo."""
    for name in ("examples", "councils"):
        shutil.copytree(REPO / name, tmp_path / name,
                        ignore=shutil.ignore_patterns(".wop", "__pycache__", ".ipynb_checkpoints"))
    return tmp_path


@pytest.fixture
def run_notebook(kernel_prefix: Path, monkeypatch: pytest.MonkeyPatch) -> RunNotebook:
    """Execute a notebook (a path or a ``NotebookNode``) on a real ``python3`` kernel.

    The kernel's working directory is ``cwd``; the executed notebook is returned, with its
    outputs and saved widget state, for the test to assert on.
    """
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join(
        p for p in (str(kernel_prefix), os.environ.get("JUPYTER_PATH", "")) if p))
    # The kernel imports the wopdsl of this checkout, installed or not.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))

    def run(notebook: Path | Any, cwd: Path, *, timeout: int = 120) -> Any:
        nb = nbformat.read(notebook, as_version=4) if isinstance(notebook, Path) else notebook
        client = NotebookClient(nb, kernel_name="python3", timeout=timeout,
                                resources={"metadata": {"path": str(cwd)}})
        client.execute()
        return nb

    return run
