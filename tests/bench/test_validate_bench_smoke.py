"""Smoke test of ``bench/validate.py``: it times each shape next to the parser's floor.

No time is asserted here (the machine is shared; that is what the benchmark reports).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "validate.py"


def test_validate_bench_reports_each_shape_next_to_the_floor() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--mb", "0.3", "--repeat", "1",
                           "--json"], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: OVER on this run.
    data = json.loads(done.stdout)
    rows = {row["shape"]: row for row in data["results"]}
    assert list(rows) == ["flat keys (tomllib floor)", "one long header", "nested headers"]
    for row in rows.values():
        assert row["bytes"] >= 300_000 and row["median_s"] > 0
    for label in ("one long header", "nested headers"):
        assert rows[label]["status"] == ("PASS" if rows[label]["x_floor"] <= data["limit"]
                                         else "OVER")
    table = subprocess.run([sys.executable, str(BENCH), "--mb", "0.3", "--repeat", "1"],
                           capture_output=True, text=True, timeout=300, check=False)
    assert "x floor" in table.stdout and "one long header" in table.stdout
