"""Smoke test of ``bench/eval.py``: it runs end to end and prints its table (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "eval.py"


def test_eval_bench_prints_the_table(tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--runs", "40", "--jobs", "4",
                           "--json", str(out)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "floor (back to back)" in proc.stdout and "eval, jobs = 4" in proc.stdout
    assert "harness cost per run: " in proc.stdout and "jobs = 4 / floor: " in proc.stdout
    figures = json.loads(out.read_text())
    assert figures["runs"] == 40 and figures["jobs"] == 4
    assert all(figures[key] > 0 for key in ("floor_s", "jobs1_s", "jobsN_s", "ratio"))
