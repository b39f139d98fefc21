"""The TUI imports as ``wopdsl_tui`` (never a bare ``tui``); tests/core/test_packaging.py builds
the wheel."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.tui.conftest import REPO


def test_the_tui_imports_as_wopdsl_tui_only(tmp_path: Path) -> None:
    pytest.importorskip("textual")
    # Outside the repository (no source tree on sys.path), as an installed package is used.
    code = ("import importlib.util, wopdsl_tui\n"
            "print(wopdsl_tui.__file__, importlib.util.find_spec('tui'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=True)
    where, bare = done.stdout.split()
    assert Path(where).name == "__init__.py"
    assert bare == "None"


def test_the_stylesheet_ships_with_the_package() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "*.tcss" in config["package-data"]["*"]
    assert (REPO / "tui" / "app.tcss").is_file()
