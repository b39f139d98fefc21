"""bench/tools.py runs and reports its figures (keys and verdict; no time is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "tools.py"


@pytest.mark.slow
def test_tools_bench_runs_and_writes_json(tmp_path: Path) -> None:
    pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
    pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")
    out = tmp_path / "tools.json"
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--json", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text())
    assert figures["calls"] == 20
    assert {"engine_ms", "engine_mean_ms", "tool_ms", "floor_ms", "round_ms"} <= set(figures)
    assert figures["verdict"] in ("PASS", "OVER")
    assert "engine per call" in done.stdout and "floor (bare SDK)" in done.stdout
