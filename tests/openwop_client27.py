"""The official ``openwop-client`` 2.x, installed from PyPI into a scratch folder.

The dev extra pins 1.8 (the v1 client) under the same distribution name, so the 2.x client
cannot live in the same environment: ``install_client27`` installs it into a folder of its
own, which a subprocess puts on ``PYTHONPATH`` (the ``client27`` fixture of
``tests/conftest.py`` does it once per session).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLIENT27 = "2.7.0"
"""The 2.x client release the tests drive the host with."""


def install_client27(target: Path, release: str = CLIENT27) -> Path:
    """Install openwop-client ``release`` into ``target``; skip (fail in CI) without PyPI."""
    wanted = f"openwop-client=={release}"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
         str(target), wanted], capture_output=True, text=True, timeout=300, check=False)
    if install.returncode != 0 and os.environ.get("CI") != "true":
        pytest.skip(f"{wanted} could not be installed: {install.stderr[-300:]}")
    assert install.returncode == 0, install.stderr
    return target


def client27_env(target: Path) -> dict[str, str]:
    """The environment of a subprocess that imports the 2.x client from ``target``."""
    return {**os.environ, "PYTHONPATH": str(target)}
