"""Smoke test of the benchmark harness: it runs end to end and prints its table.

No timing is asserted (that is what ``bench/run.py`` reports, on a quiet machine).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "run.py"


def test_quick_run_prints_the_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--turns", "20,50", "--members", "3",
         "--repeat", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("workload") and "µs/turn" in line for line in lines)
    for engine in ("script", "python", "python-sync"):
        rows = [line for line in lines if line.startswith(f"{engine} N=3")]
        assert [row.split()[2] for row in rows] == ["20", "50"]
    assert "checks:" in proc.stdout
    assert "where a turn's time goes" in proc.stdout
    assert "O(tail) input" in proc.stdout
    data = json.loads(out.read_text())
    results = {(r["engine"], r["turns"]): r for r in data["results"]}
    assert set(results) == {(engine, turns) for engine in ("script", "python", "python-sync")
                            for turns in (20, 50)}
    for result in results.values():
        # W(N, T) is exactly T member turns: one node.started + node.completed per turn,
        # one message per turn but the last, plus the fixed opening and closing events.
        assert result["events"] == results[(result["engine"], 20)]["events"] + 3 * (
            result["turns"] - 20)
        assert result["log_bytes"] > 0
        assert result["peak_rss_mib"] > 0
        assert result["floor_us_per_turn"] > 0
        assert result["engine_us_per_turn"] > 0
    assert data["checks"]["tail"]["points"][-1]["input_messages"] == 8


def test_profile_prints_the_top_functions() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH.with_name("profile.py")), "--engine", "python",
         "--turns", "30", "--top", "5"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "completed" in proc.stdout
    assert "== top 5 by cumulative ==" in proc.stdout
    assert "== top 5 by tottime ==" in proc.stdout


def test_postgres_bench_prints_both_figures(tmp_path: Path) -> None:
    from tests.postgres import server_url

    url = server_url()  # Skips without a server (fails in CI).
    out = tmp_path / "pg.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH.with_name("postgres.py")), "--url", url, "--turns", "10,20",
         "--repeat", "1", "--seconds", "0.5", "--hosts", "1,2", "--json", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    password = url.split("@")[0].rsplit(":", 1)[1]
    assert password not in proc.stdout + proc.stderr
    assert "x floor1" in proc.stdout and "runs per second" in proc.stdout
    data = json.loads(out.read_text())
    assert [r["turns"] for r in data["w_nt"]] == [10, 20]
    for row in data["w_nt"]:
        assert row["us_per_turn"] > 0 and row["floor1_us_per_turn"] > 0
        assert row["events"] == data["w_nt"][0]["events"] + 3 * (row["turns"] - 10)
    assert [h["hosts"] for h in data["hosts"]] == [1, 2]
    assert all(h["runs"] > 0 for h in data["hosts"])


def test_llm_bench_runs_and_writes_json(tmp_path: Path) -> None:
    import pytest

    pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
    out = tmp_path / "llm.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH.parent / "llm.py"), "--quick", "--json", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "bare openai client floor" in proc.stdout and "overlap:" in proc.stdout
    data = json.loads(out.read_text())
    assert data["cost"]["turns"] == 20 and data["cost"]["floor_ms"] > 0
    assert data["overlap"]["batch"] == 4
    # No timing asserted; only that a batch overlapped at all (serial would be 4 × 200 ms).
    assert data["overlap"]["batch_ms"] < data["overlap"]["serial_ms"]
    assert len(data["overlap"]["per_round"]) == data["overlap"]["rounds"] == 2
    assert data["overlap"]["over_floor"] > 0 and data["overlap"]["bare_batch_ms"] > 0


def test_ab_compares_two_revisions_alternately(tmp_path: Path) -> None:
    """bench/ab.py checks a revision out beside this tree and reports both, with the ratio."""
    out = tmp_path / "ab.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH.with_name("ab.py")), "--base", "HEAD", "--rounds", "2",
         "--repeat", "1", "--turns", "30", "--engines", "script", "--json", str(out)],
        capture_output=True, text=True, timeout=300, check=False, cwd=BENCH.parents[1],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "new/base" in proc.stdout
    data = json.loads(out.read_text())
    script = data["engines"]["script"]
    assert len(script["base"]) == len(script["new"]) == len(script["round_ratios"]) == 2
    assert script["ratio"] == script["new_us"] / script["base_us"] > 0
    worktrees = subprocess.run(["git", "-C", str(BENCH.parents[1]), "worktree", "list"],
                               capture_output=True, text=True, check=True).stdout
    assert "wop-ab-base-" not in worktrees  # the temporary checkout is removed again
