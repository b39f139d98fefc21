"""Judges: a model scores a run on a rubric — as a council run of its own.

A ``judge`` check's judgement is an ordinary run of a one-member council: an ``llm`` member
(the check's ``[models.NAME]`` profile) reads the rubric, the case and what is judged, and
votes on one decision, ``score``, whose ``scale`` is the check's. So a judge's call has
everything a member's call has: the profile's client (retries, timeouts, key redaction),
the turn's structured answer (the vote's choice can only be a score on the scale; an answer
off it is re-asked ``repair_attempts`` times, then the judgement is an error — never a
score), a budget (``max_tokens``, ``max_cost_usd``), ``provider.usage`` events, cassettes,
OpenTelemetry spans, and a stored run (tagged ``judge=CHECK``) that ``wop runs``, ``wop
trace`` and the TUI show. The vote's reason is the check's explanation.
"""

from __future__ import annotations

from typing import Any, Final

from jinja2 import Template

from wopdsl import Council
from wopdsl.evals.checks import CheckResult, not_run
from wopdsl.evals.load import Check
from wopdsl.evals.observe import Observation, as_text
from wopdsl.evals.templates import compile_template, render
from wopdsl.model.llm import ModelProfile

__all__ = ["DEFAULT_PROMPT", "judge_council", "judge_task", "judgement"]

DEFAULT_PROMPT: Final = """\
Judge {{ target }} of a council's run against the rubric, on the scale from {{ low }} \
(worst) to {{ high }} (best).

Rubric: {{ rubric }}

The case the council was given:
{{ case.task }}
{% if case.expected is defined and case.expected is not none %}
A reference answer: {{ case.expected }}
{% endif %}
{{ target | capitalize }} to judge:
{{ text }}

Vote on the decision "score": a whole score from {{ low }} to {{ high }}, and the reason for \
it in one sentence."""
"""The judge's task unless the check gives a ``prompt`` (same names: ``target``, ``text``,
``rubric``, ``low``, ``high``, ``case``)."""

_BRIEF: Final = ("You are an impartial judge. Score only what the rubric asks, from the text "
                 "given; keep your summary to one sentence.")
_NAMES: Final = {"answer": "the answer", "result": "the result", "transcript": "the transcript",
                 "decision": "the outcome of decision", "member": "the last summary of member"}


def _default() -> Template:
    return compile_template(DEFAULT_PROMPT)


def judge_task(check: Check, observation: Observation, case: dict[str, Any]) -> str:
    """The judge's task for this run and case.

    Raises:
        TemplateError: the check's own prompt does not render.
    """
    kind, ident = check.target
    target = _NAMES[kind] + (f" '{ident}'" if ident else "")
    low, high = check.spec.scale or (0, 0)
    value = observation.target(kind, ident)
    return render(check.prompt or _default(), target=target, rubric=check.spec.rubric,
                  low=low, high=high, case=case,
                  text=as_text(value) if value is not None else "(nothing)")


def judge_council(check: Check, profile: ModelProfile, task: str) -> Council:
    """The one-member council that judges (see the module docs)."""
    spec = check.spec
    low, high = spec.scale or (0, 0)
    budget = {key: value for key, value in (("max_tokens", spec.max_tokens),
                                            ("max_cost_usd", spec.max_cost_usd))
              if value is not None}
    council = Council(f"judge.{spec.id}"[:64], task=task, max_turns_per_member=1,
                      tail_messages=1, **budget)
    options = profile.model_dump(exclude_none=True, exclude_defaults=True)
    options.pop("model", None)
    council.model("judge", model=profile.model, **options)
    council.room("verdict", members=["judge"])
    council.decision("score", room="verdict", question=str(spec.rubric), scale=(low, high),
                     voters=["judge"])
    council.add_member("judge", role="judge", brief=_BRIEF, engine="llm", model="judge",
                       repair_attempts=spec.repair_attempts, retries=spec.retries)
    return council


def judgement(check: Check, judge: Observation | None, observation: Observation,
              judge_run: str | None) -> CheckResult:
    """The check's result from the judge's run (``None``: the run was not judged)."""
    early = not_run(check, observation)
    if early is not None:
        return early
    if judge is None or judge_run is None:
        return CheckResult(error="not judged")
    if judge.status != "completed":
        error = judge.error or {}
        return CheckResult(error=f"the judge's run {judge.status}: {error.get('code', '?')}: "
                                 f"{error.get('message', '')}", judge_run=judge_run)
    decision = judge.state.decisions.get("score")
    score = decision.outcome if decision is not None and decision.closed else None
    low, high = check.spec.scale or (0, 0)
    if isinstance(score, bool) or not isinstance(score, int | float) or \
            not low <= score <= high:
        return CheckResult(error=f"the judge gave no score on [{low}, {high}] "
                                 f"(got {score!r})", judge_run=judge_run)
    reason = None
    if decision is not None and decision.votes:
        reason = next(iter(decision.votes.values())).reason or None
    return CheckResult(score=float(score), explanation=reason, judge_run=judge_run)
