"""The report of an evaluation, as JSON data (``wop eval --json``): every figure, every run.

Per arm × check: a pass rate with its 95 % Wilson interval, or a mean score with its 95 %
bootstrap interval (seeded: the same runs give the same report), how many runs had a
verdict and how many an error. Per arm: runs, failures, tokens, cost, wall time, turns and
the deliberation metrics of DESIGN.md §22 aggregated over its runs. Per pair of arms and
check: the paired comparison on the same cases and repeats (exact McNemar for pass/fail, a
paired bootstrap for scores) with its effect and p-value. The gates, and every run with its
id, so ``wop diff``, ``wop trace`` and the TUI can open it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from typing import Any, Final

from wopdsl.evals.load import Check, Evaluation
from wopdsl.evals.record import DELIBERATION_KEYS, RunRecord
from wopdsl.evals.runner import EvalOutcome
from wopdsl.evals.stats import bootstrap_mean, mcnemar, paired_bootstrap, wilson

__all__ = ["FORMAT", "build_report", "seed_of"]

FORMAT: Final = "wopdsl-eval/1"
"""The ``format`` of the JSON report."""


def seed_of(seed: int, *parts: str) -> int:
    """A bootstrap seed per figure: the same whatever else the report holds."""
    digest = hashlib.sha256("\0".join((str(seed), *parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def _r(value: float | None, digits: int = 6) -> float | None:
    return None if value is None or math.isnan(value) else round(value, digits)


def check_figures(check: Check, records: Iterable[RunRecord], *, seed: int,
                  resamples: int, arm: str) -> dict[str, Any]:
    """One arm's figures for one check (see the module docs)."""
    results = [r.checks[check.id] for r in records if check.id in r.checks]
    errors = sum(1 for r in results if r.error is not None)
    if check.spec.scored:
        scores = [r.score for r in results if r.score is not None and r.error is None]
        mean = math.fsum(scores) / len(scores) if scores else None
        low, high = bootstrap_mean(scores, resamples=resamples,
                                   seed=seed_of(seed, arm, check.id))
        return {"kind": "score", "n": len(scores), "mean": _r(mean), "low": _r(low),
                "high": _r(high), "errors": errors, "scale": list(check.spec.scale or ())}
    verdicts = [r.passed for r in results if r.passed is not None and r.error is None]
    passed = sum(1 for v in verdicts if v)
    low, high = wilson(passed, len(verdicts))
    return {"kind": "pass", "n": len(verdicts), "passed": passed,
            "rate": _r(passed / len(verdicts)) if verdicts else None,
            "low": _r(low) if verdicts else None, "high": _r(high) if verdicts else None,
            "errors": errors}


def _mean(values: list[float]) -> float | None:
    return _r(math.fsum(values) / len(values), 4) if values else None


def _judges(records: list[RunRecord]) -> dict[str, Any] | None:
    """What the arm's judges used (evaluation cost, apart from the arm's own)."""
    used = [r.judge_usage for r in records if r.judge_usage]
    if not used:
        return None
    costs = [u["costUsd"] for u in used if u.get("costUsd") is not None]
    return {"tokens": sum(int(u["totalTokens"]) for u in used),
            "costUsd": _r(math.fsum(costs)) if costs else None}


def arm_figures(records: list[RunRecord]) -> dict[str, Any]:
    """Runs, failures, tokens, cost, wall time, turns and deliberation of one arm."""
    n = len(records)
    costs = [r.cost for r in records if r.cost is not None]
    sums = {key: math.fsum(r.deliberation.get(key, 0) for r in records)
            for key in DELIBERATION_KEYS}

    def rate(part: str, whole: str) -> float | None:
        return _r(sums[part] / sums[whole], 4) if sums[whole] else None

    return {
        "runs": n,
        "completed": sum(1 for r in records if r.status == "completed"),
        "failed": sum(1 for r in records if r.status != "completed"),
        "tokens": {"total": sum(r.tokens for r in records),
                   "perRun": _mean([float(r.tokens) for r in records])},
        "costUsd": {"total": _r(math.fsum(costs)), "perRun": _mean(costs)} if costs else None,
        "wallS": {"total": _r(math.fsum(r.wall_s for r in records), 3),
                  "perRun": _mean([r.wall_s for r in records])},
        "turns": {"perRun": _mean([float(r.turns) for r in records])},
        "judges": _judges(records),
        "deliberation": {
            "decisions": int(sums["decisions"]),
            "votesPerRun": _r(sums["votes"] / n, 4) if n else None,
            "flipsPerRun": _r(sums["flips"] / n, 4) if n else None,
            "unanimous": rate("unanimous", "decisions"),
            "dissentPerDecision": rate("dissent", "decisions"),
            "meanMargin": rate("margin", "decisions"),
            "agreement": rate("agreed", "decided"),
            "firstAnswerSurvival": rate("firstAnswersKept", "firstAnswers"),
            "changedByDebate": rate("changedByDebate", "firstRoundDecisions"),
            "mentionsAnswered": rate("mentionsAnswered", "mentionsMade"),
        },
    }


def compare_arms(check: Check, a: str, b: str, by_arm: dict[str, list[RunRecord]], *,
                 seed: int, resamples: int) -> dict[str, Any]:
    """Arm ``a`` against arm ``b`` on ``check``, paired by case and repeat."""
    theirs = {(r.case, r.repeat): r.checks.get(check.id) for r in by_arm.get(b, [])}
    pairs = [(r.checks.get(check.id), theirs.get((r.case, r.repeat)))
             for r in by_arm.get(a, [])]
    doc: dict[str, Any] = {"a": a, "b": b, "check": check.id}
    if check.spec.scored:
        scored = [(x.score, y.score) for x, y in pairs
                  if x is not None and y is not None and x.score is not None
                  and y.score is not None]
        diff = paired_bootstrap([float(x) for x, _ in scored], [float(y) for _, y in scored],
                                resamples=resamples, seed=seed_of(seed, a, b, check.id))
        return {**doc, "test": "paired bootstrap", "pairs": len(scored),
                "effect": _r(diff.mean), "low": _r(diff.low), "high": _r(diff.high),
                "p": _r(diff.p_value)}
    judged = [(bool(x.passed), bool(y.passed)) for x, y in pairs
              if x is not None and y is not None and x.passed is not None
              and y.passed is not None and x.error is None and y.error is None]
    a_only = sum(1 for x, y in judged if x and not y)
    b_only = sum(1 for x, y in judged if y and not x)
    return {**doc, "test": "McNemar exact", "pairs": len(judged), "aOnly": a_only,
            "bOnly": b_only, "effect": _r((a_only - b_only) / len(judged)) if judged else None,
            "p": _r(mcnemar(a_only, b_only))}


def gates_of(evaluation: Evaluation, table: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each gate per arm: the threshold, the value and whether it holds."""
    out = []
    arms = [a.id for a in evaluation.arms]
    for check_id, value in evaluation.spec.gate.items():
        thresholds = value if isinstance(value, dict) else dict.fromkeys(arms, value)
        for arm, threshold in thresholds.items():
            figures = table[arm][check_id]
            got = figures.get("mean" if figures["kind"] == "score" else "rate")
            out.append({"check": check_id, "arm": arm, "threshold": threshold, "value": got,
                        "passed": got is not None and got >= threshold})
    return out


def build_report(outcome: EvalOutcome) -> dict[str, Any]:
    """The whole report (see the module docs)."""
    evaluation = outcome.evaluation
    settings = evaluation.spec.eval
    by_arm: dict[str, list[RunRecord]] = {a.id: [] for a in evaluation.arms}
    for record in sorted(outcome.records, key=lambda r: (r.arm, r.case, r.repeat)):
        by_arm[record.arm].append(record)
    options = {"seed": settings.seed, "resamples": settings.bootstrap}
    table = {arm: {c.id: check_figures(c, records, arm=arm, **options)
                   for c in evaluation.checks} for arm, records in by_arm.items()}
    arms = [a.id for a in evaluation.arms]
    comparisons = [compare_arms(c, a, b, by_arm, **options)
                   for i, a in enumerate(arms) for b in arms[i + 1:] for c in evaluation.checks]
    gates = gates_of(evaluation, table)
    return {
        "format": FORMAT,
        "eval": {"id": evaluation.id, "file": evaluation.shown,
                 "description": settings.description, "repeats": settings.repeats,
                 "jobs": settings.jobs, "cases": len({r.case for r in outcome.records}),
                 "seed": settings.seed},
        "status": "complete" if outcome.complete else "partial",
        "planned": outcome.planned, "finished": len(outcome.records),
        "wallS": _r(outcome.wall_s, 3),
        "arms": [{"id": a.id, "council": a.spec.council, "description": a.spec.description,
                  **arm_figures(by_arm[a.id]), "checks": table[a.id]}
                 for a in evaluation.arms],
        "checks": [{"id": c.id, "kind": c.spec.kind, "target": c.spec.target,
                    "scored": c.spec.scored} for c in evaluation.checks],
        "comparisons": comparisons,
        "gates": gates,
        "passed": all(g["passed"] for g in gates) if outcome.complete else None,
        "problems": list(outcome.problems),
        "runs": [r.to_json() for records in by_arm.values() for r in records],
    }
