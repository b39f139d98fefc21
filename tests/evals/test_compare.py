"""`--compare`: regressions, significant ones, and runs that got worse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wopdsl import DeclarationError
from wopdsl.evals.compare import compare_reports, read_report, render_comparison


def _doc(rate: float, low: float, high: float, passed: bool, run: str) -> dict[str, Any]:
    figures = {"kind": "pass", "n": 10, "passed": int(rate * 10), "rate": rate, "low": low,
               "high": high, "errors": 0}
    return {"format": "wopdsl-eval/1", "arms": [{"id": "board", "checks": {"ok": figures}}],
            "runs": [{"arm": "board", "case": "c1", "repeat": 1, "runId": run,
                      "checks": {"ok": {"passed": passed}}}]}


def test_a_drop_outside_the_old_interval_is_significant() -> None:
    old, new = _doc(0.9, 0.6, 0.98, True, "r-old"), _doc(0.2, 0.05, 0.5, False, "r-new")
    comparison = compare_reports(old, new)
    (change,) = comparison["changes"]
    assert (change["delta"], change["regressed"], change["significant"]) == (-0.7, True, True)
    assert comparison["flipped"] == [{"arm": "board", "case": "c1", "repeat": 1, "check": "ok",
                                      "old": {"passed": True}, "new": {"passed": False},
                                      "oldRunId": "r-old", "newRunId": "r-new"}]
    text = render_comparison(comparison, "old.json")
    assert "board  ok     90.0 % (9/10)  20.0 % (2/10)  -70.0 pt  REGRESSED (significant)" in text
    assert "  board c1 #1 ok: pass -> fail  r-old r-new" in text
    better = compare_reports(new, old)
    assert better["regressed"] is False and better["flipped"] == []


def test_a_report_that_is_not_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{not json")
    for name, message in (("x.json", "x.json: not JSON"), ("gone.json", "cannot read")):
        with pytest.raises(DeclarationError) as caught:
            read_report(str(tmp_path / name))
        assert message in str(caught.value)
