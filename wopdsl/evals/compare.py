"""``wop eval --compare OLD.json``: what changed since an earlier report, and what regressed.

Per arm × check found in both reports: the old and new pass rate (or mean score) and the
change; a drop is a regression, and a *significant* one when the new interval lies wholly
below the old. Per run (same arm, case and repeat): each check that passed before and fails
now, or whose score fell, with both run ids — ready for ``wop diff OLD_RUN NEW_RUN``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wopdsl.errors import DeclarationError, Problem
from wopdsl.evals.report import FORMAT
from wopdsl.evals.table import check_cell, render_table

__all__ = ["compare_reports", "read_report", "render_comparison"]


def read_report(path: str) -> dict[str, Any]:
    """Read a JSON report written by ``wop eval --json``.

    Raises:
        DeclarationError: not readable, not JSON or not an eval report (exit 2).
    """
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DeclarationError(Problem(f"cannot read the report: {exc.strerror or exc}",
                                       source=path, hint="pass a file written by --json"),
                               subject="report") from None
    except ValueError as exc:
        raise DeclarationError(Problem(f"not JSON: {exc}", source=path,
                                       hint="pass a file written by wop eval --json"),
                               subject="report") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise DeclarationError(Problem(f"not a {FORMAT} report", source=path,
                                       hint="pass a file written by wop eval --json"),
                               subject="report")
    return doc


def _value(figures: dict[str, Any]) -> float | None:
    value = figures.get("mean" if figures["kind"] == "score" else "rate")
    return float(value) if value is not None else None


def compare_reports(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``{changes: [...], flipped: [...], regressed: bool}`` (see the module docs)."""
    old_arms = {a["id"]: a for a in old["arms"]}
    changes = []
    for arm in new["arms"]:
        before = old_arms.get(arm["id"])
        if before is None:
            continue
        for check, figures in arm["checks"].items():
            was = before["checks"].get(check)
            if was is None or was["kind"] != figures["kind"]:
                continue
            a, b = _value(was), _value(figures)
            delta = None if a is None or b is None else round(b - a, 6)
            significant = bool(delta is not None and delta < 0 and figures["high"] is not None
                               and was["low"] is not None and figures["high"] < was["low"])
            changes.append({"arm": arm["id"], "check": check, "old": was, "new": figures,
                            "delta": delta, "regressed": delta is not None and delta < 0,
                            "significant": significant})
    before_runs = {(r["arm"], r["case"], r["repeat"]): r for r in old.get("runs", [])}
    flipped = []
    for run in new.get("runs", []):
        was = before_runs.get((run["arm"], run["case"], run["repeat"]))
        if was is None:
            continue
        for check, result in run["checks"].items():
            prior = was["checks"].get(check)
            if prior is None:
                continue
            worse = (prior.get("passed") is True and result.get("passed") is False) or (
                prior.get("score") is not None and result.get("score") is not None
                and result["score"] < prior["score"])
            if worse:
                flipped.append({"arm": run["arm"], "case": run["case"],
                                "repeat": run["repeat"], "check": check,
                                "old": prior, "new": result, "oldRunId": was["runId"],
                                "newRunId": run["runId"]})
    return {"changes": changes, "flipped": flipped,
            "regressed": any(c["regressed"] for c in changes)}


def _verdict(result: dict[str, Any]) -> str:
    if result.get("error"):
        return "error"
    if result.get("score") is not None:
        return f"{result['score']:g}"
    return "pass" if result.get("passed") else "fail"


def render_comparison(comparison: dict[str, Any], old_path: str) -> str:
    """The comparison as text."""
    lines = [f"compared with {old_path}"]
    rows: list[tuple[str, ...]] = [("ARM", "CHECK", "BEFORE", "NOW", "CHANGE", "")]
    for c in comparison["changes"]:
        delta = c["delta"]
        scored = c["new"]["kind"] == "score"
        shown = "-" if delta is None else (f"{delta:+.2f}" if scored else f"{100 * delta:+.1f} pt")
        flag = ("REGRESSED (significant)" if c["significant"] else "regressed") \
            if c["regressed"] else ""
        rows.append((c["arm"], c["check"], check_cell(c["old"])[0], check_cell(c["new"])[0],
                     shown, flag))
    lines += render_table(rows) if len(rows) > 1 else ["  nothing in common to compare"]
    if comparison["flipped"]:
        lines += ["", "runs that got worse (wop diff OLD NEW shows how):"]
        lines += [f"  {f['arm']} {f['case']} #{f['repeat']} {f['check']}: "
                  f"{_verdict(f['old'])} -> {_verdict(f['new'])}  {f['oldRunId']} "
                  f"{f['newRunId']}" for f in comparison["flipped"]]
    return "\n".join(lines) + "\n"
