"""The wheel: setuptools finds every package (the TUI as ``wopdsl_tui``, never a bare ``tui``)
and builds without a warning."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Build the wheel as `pip install .` would; return it and the build's output."""
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                           "--wheel-dir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("wopdsl-*.whl")
    return built, done.stdout + done.stderr


def _package_folders() -> set[str]:
    """Every folder of the source tree that holds Python files, by its import name."""
    found = set()
    for name, root in {"wopdsl": ROOT / "wopdsl", "wopdsl_tui": ROOT / "tui"}.items():
        for source in root.rglob("*.py"):
            found.add(".".join((name, *source.parent.relative_to(root).parts)))
    return found


@pytest.mark.slow
def test_the_wheel_holds_every_package_and_no_bare_tui(wheel: tuple[Path, str]) -> None:
    built, _ = wheel
    names = zipfile.ZipFile(built).namelist()
    top = {name.split("/", 1)[0] for name in names}
    assert top == {"wopdsl", "wopdsl_tui", "wopdsl-0.1.0.dist-info"}
    packages = {name.rsplit("/", 1)[0].replace("/", ".") for name in names
                if name.endswith(".py")}
    assert packages == _package_folders()
    # Data shipped beside the code: the OpenWOP schemas, the chat page, the TUI's stylesheet.
    assert "wopdsl/protocol/schemas/v2/conversation-event.schema.json" in names
    assert "wopdsl/server/static/index.html" in names
    assert "wopdsl_tui/app.tcss" in names
    assert "wopdsl/py.typed" in names
    metadata = zipfile.ZipFile(built).read("wopdsl-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata


@pytest.mark.slow
def test_the_build_prints_no_warning(wheel: tuple[Path, str]) -> None:
    # What `make install` used to show: license and "Package would be ignored" warnings.
    _, output = wheel
    for alarm in ("BuildBackendWarning", "deprecated", "would be ignored", "Traceback"):
        assert alarm not in output, output
