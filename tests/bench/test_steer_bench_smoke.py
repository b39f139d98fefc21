"""Smoke test of ``bench/steer.py``: steers and presence run end to end, each figure beside its
floor, every stopped stream closed by the client.

No timing is asserted (the machine is shared; the benchmark reports it, docs/performance.md
has the numbers).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "steer.py"


def test_quick_steer_bench(tmp_path: Path) -> None:
    pytest.importorskip("openai", reason="needs the llm extra")
    pytest.importorskip("uvicorn", reason="needs the server extra")
    out = tmp_path / "steer.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("| measure | n | p50 ms | p99 ms | floor p50 ms")
    assert any(line.startswith("| steer: post appended → last stopped stream closed | 3 "
                               "members") for line in lines)
    assert any(line.startswith("| presence: typing signal → every watcher | 10 watchers")
               for line in lines)
    data = json.loads(out.read_text())
    steer, presence = data["steer"], data["presence"]
    # Each steer stopped all 3 streams (the bench exits 1 otherwise) and was recorded.
    assert (steer["members"], steer["steers"], steer["target_ms"]) == (3, 3, 100)
    assert steer["p50_ms"] > 0 and steer["floor_p50_ms"] > 0 and steer["settled_p50_ms"] >= 0
    assert (presence["watchers"], presence["rounds"], presence["target_ms"]) == (10, 3, 100)
    assert presence["p50_ms"] > 0 and presence["floor_p50_ms"] > 0
