"""Smoke test of ``bench/startup.py``: it runs each command and prints its figures.

No time is asserted (the machine is shared; that is what the benchmark reports).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "startup.py"


def test_startup_bench_reports_every_command_next_to_the_floor() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--repeat", "1", "--warmup", "0",
                           "--json"], capture_output=True, text=True, timeout=300, check=False)
    # Exit 1 means a command was over the target on this run: still a complete report.
    assert done.returncode in (0, 1), done.stdout + done.stderr
    data = json.loads(done.stdout)
    rows = {row["command"]: row for row in data["results"]}
    assert list(rows) == ["python -c 'import sys'", "wop --help", "wop runs", "wop events RUN",
                          "wop transcript RUN"]
    assert data["target_ms"] == 150 and data["floor_ms"] > 0
    for label, row in rows.items():
        assert row["median_ms"] > 0 and row["cpu_ms"] > 0
        if label != "python -c 'import sys'":
            assert row["status"] == ("PASS" if row["median_ms"] < 150 else "OVER")
    assert done.returncode == (1 if any(r.get("status") == "OVER" for r in rows.values())
                               else 0)
    table = subprocess.run([sys.executable, str(BENCH), "--repeat", "1", "--warmup", "0"],
                           capture_output=True, text=True, timeout=300, check=False)
    assert "target 150 ms" in table.stdout and "wop transcript RUN" in table.stdout
