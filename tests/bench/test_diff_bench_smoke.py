"""Smoke test of ``bench/diff.py``: it runs end to end and prints its table (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "diff.py"


def test_diff_bench_prints_the_table(tmp_path: Path) -> None:
    out = tmp_path / "diff.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--messages", "300", "--repeat", "1",
                           "--json", str(out)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "plain vs changed" in proc.stdout and "plain vs repetitive" in proc.stdout
    rows = json.loads(out.read_text())["rows"]
    assert [r["pair"] for r in rows] == ["plain vs changed", "plain vs repetitive"]
    assert all(r["diff_s"] > 0 and r["floor_s"] > 0 and r["peak_mib"] > 0 for r in rows)
