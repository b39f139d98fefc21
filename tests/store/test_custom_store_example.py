"""examples/custom_store.py passes the store conformance suite when run with pytest."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_custom_store_example_passes_the_conformance_suite() -> None:
    # The example needs only the conformance suite, so its run does not load the wopdsl
    # pytest plugin; that keeps this test about the example alone.
    command = [sys.executable, "-m", "pytest", "examples/custom_store.py", "-q"]
    command += ["-p", "no:cacheprovider", "-p", "no:wopdsl"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed is not None and int(passed.group(1)) >= 15, done.stdout
    assert "failed" not in done.stdout
