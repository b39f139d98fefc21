"""Apply a check to an observed run: ``equals``, ``contains``, ``regex``, ``json``, ``python``.

A check either passes or fails (``passed``), or scores (``score``, for a ``python`` check
with a ``scale``; judges live in :mod:`wopdsl.evals.judge`). A run that did not complete
fails every pass/fail check and gives no score. Something that is not a verdict — a Python
check that raised, a score off its scale — is an ``error``: counted apart, never as a pass,
a fail or a score.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from wopdsl.evals.load import Check
from wopdsl.evals.observe import Observation, as_text

__all__ = ["CheckResult", "apply_check", "not_run"]

_STEP = re.compile(r"\.?([^.\[\]]+)|\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check on one run."""

    passed: bool | None = None
    """Pass/fail checks: the verdict (``None`` on an error)."""
    score: float | None = None
    """Scored checks: the score (``None`` on an error)."""
    explanation: str | None = None
    """Why (a judge's reason, what a failed check saw)."""
    error: str | None = None
    """Why there is no verdict."""
    judge_run: str | None = None
    """The judge's run, for ``judge`` checks."""

    @property
    def label(self) -> str:
        """``pass``, ``fail``, ``error`` or the score."""
        if self.error is not None:
            return "error"
        if self.score is not None:
            return f"{self.score:g}"
        return "pass" if self.passed else "fail"

    def to_json(self) -> dict[str, Any]:
        """The result as JSON data (only the keys that are set)."""
        out: dict[str, Any] = {}
        for key, value in (("passed", self.passed), ("score", self.score),
                           ("explanation", self.explanation), ("error", self.error),
                           ("judgeRunId", self.judge_run)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        """Read :meth:`to_json` back."""
        return cls(data.get("passed"), data.get("score"), data.get("explanation"),
                   data.get("error"), data.get("judgeRunId"))


def not_run(check: Check, observation: Observation) -> CheckResult | None:
    """The result when the run cannot be checked (it did not complete), else ``None``."""
    if observation.status == "completed":
        return None
    error = observation.error or {}
    why = f"the run {observation.status}" + (
        f" ({error.get('code')}: {error.get('message')})" if error else "")
    if check.spec.scored:
        return CheckResult(error=f"{why}: nothing to score")
    return CheckResult(passed=False, explanation=why)


def apply_check(check: Check, observation: Observation, case_id: str, case: dict[str, Any],
                run: Any) -> CheckResult:
    """Apply a non-judge check (see the module docs)."""
    early = not_run(check, observation)
    if early is not None:
        return early
    value = observation.target(*check.target)
    kind = check.spec.kind
    if kind == "python":
        return _python(check, value, case, run)
    if value is None:
        return CheckResult(passed=False, explanation=f"the run has no {check.spec.target}")
    if kind == "json":
        return _json(check, value, case_id)
    text = as_text(value)
    expected = check.values.get(case_id)
    if kind == "regex":
        found = check.patterns[case_id].search(text)
        return CheckResult(passed=found is not None,
                           explanation=None if found else f"no match for {expected!r}")
    wanted, seen = as_text(expected).strip(), text.strip()
    if check.spec.ignore_case:
        wanted, seen = wanted.casefold(), seen.casefold()
    ok = seen == wanted if kind == "equals" else wanted in seen
    return CheckResult(passed=ok, explanation=None if ok else
                       f"expected {'exactly' if kind == 'equals' else 'to contain'} "
                       f"{_short(as_text(expected))}, got {_short(text)}")


def _short(text: str, limit: int = 120) -> str:
    shown = json.dumps(text, ensure_ascii=False)
    return shown if len(shown) <= limit else shown[:limit - 2] + '…"'


def _json(check: Check, value: Any, case_id: str) -> CheckResult:
    data = value
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except ValueError:
            return CheckResult(passed=False, explanation=f"{check.spec.target} is not JSON")
    found, ok = _walk(data, check.spec.path or "")
    if not ok:
        return CheckResult(passed=False, explanation=f"nothing at {check.spec.path}")
    if check.spec.value is None:
        passed = found is not None and found is not False
        return CheckResult(passed=passed,
                           explanation=None if passed else f"{check.spec.path} is {found!r}")
    expected = check.values.get(case_id)
    passed = found == expected or (isinstance(expected, str) and not isinstance(found, str)
                                   and as_text(found) == expected)
    return CheckResult(passed=passed, explanation=None if passed else
                       f"{check.spec.path} is {_short(as_text(found))}, expected "
                       f"{_short(as_text(expected))}")


def _walk(data: Any, path: str) -> tuple[Any, bool]:
    node = data
    for match in _STEP.finditer(path):
        key, index = match.group(1), match.group(2)
        if index is not None:
            if not isinstance(node, list) or int(index) >= len(node):
                return None, False
            node = node[int(index)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None, False
    return node, True


def _python(check: Check, value: Any, case: dict[str, Any], run: Any) -> CheckResult:
    assert check.function is not None
    try:
        answer = check.function(value, case, run)
    except Exception as exc:  # the user's function: its failure is an error, not a verdict
        return CheckResult(error=f"{check.spec.function} raised {type(exc).__name__}: {exc}")
    explanation = None
    if isinstance(answer, dict):
        explanation = answer.get("explanation")
        answer = answer.get("score", answer.get("passed"))
        explanation = str(explanation) if explanation is not None else None
    scale = check.spec.scale
    if scale is None:
        if not isinstance(answer, bool):
            return CheckResult(error=f"{check.spec.function} returned {answer!r}; a check "
                                     "without a scale returns True or False")
        return CheckResult(passed=answer, explanation=explanation)
    if isinstance(answer, bool) or not isinstance(answer, int | float) or \
            not math.isfinite(answer) or not scale[0] <= answer <= scale[1]:
        return CheckResult(error=f"{check.spec.function} returned {answer!r}, not a score on "
                                 f"[{scale[0]}, {scale[1]}]")
    return CheckResult(score=float(answer), explanation=explanation)
