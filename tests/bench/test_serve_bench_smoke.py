"""Smoke test of bench/serve.py: host and in-process runs end to end, nothing lost.

No timing is asserted (the benchmark reports it; docs/performance.md has the numbers).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "serve.py"


@pytest.mark.slow
def test_quick_serve_bench(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn", reason="needs the server extra")
    out = tmp_path / "serve.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "p99 ms" in proc.stdout
    results = json.loads(out.read_text())["results"]
    assert [r["mode"] for r in results] == ["host (HTTP + SSE)", "in-process (no HTTP)"]
    for result in results:
        assert result["subscribers"] == 10 and result["delivered"] > 100
        assert result["missing"] == result["duplicated"] == result["incomplete"] == 0
