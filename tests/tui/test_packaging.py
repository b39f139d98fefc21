"""The TUI ships as ``wopdsl_tui`` (never a bare ``tui``), and the wheel lists every package."""

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


def test_every_package_folder_is_listed_for_the_wheel() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    folders = {"wopdsl": REPO / "wopdsl", "wopdsl_tui": REPO / "tui"}
    found = set()
    for name, root in folders.items():
        for init in root.rglob("__init__.py"):
            parts = init.parent.relative_to(root).parts
            found.add(".".join((name, *parts)))
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    assert config["package-dir"] == {"wopdsl_tui": "tui"}


def test_the_stylesheet_ships_with_the_package() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "*.tcss" in config["package-data"]["*"]
    assert (REPO / "tui" / "app.tcss").is_file()
