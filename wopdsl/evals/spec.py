"""The ``wop eval`` file format (DESIGN.md §23): inert pydantic models, one per table.

``[eval]`` (id, repeats, jobs, where the cases are), ``[[cases]]`` (or a JSONL file),
``[models.NAME]`` (model profiles for arms and judges), ``[[arms]]`` (a council each),
``[[checks]]`` (what makes a run good) and ``[gate]`` (what must hold). Unknown keys are
errors; :func:`check_eval` finds what a single field cannot see (duplicate ids, a key that
does not fit a check's kind, a gate on an unknown check). docs/guides/eval.md documents every
key.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
)

from wopdsl._described import Described
from wopdsl._ids import IDENT_PATTERN
from wopdsl.errors import Problem
from wopdsl.model.llm import ModelProfile

__all__ = ["GUIDE", "ArmSpec", "CaseSpec", "CheckKind", "CheckSpec", "EvalSettings", "EvalSpec",
           "check_eval", "parse_target"]

GUIDE: Final = "docs/guides/eval.md"
"""Where hints about the eval file point."""

Ident = Annotated[StrictStr, Field(pattern=IDENT_PATTERN, min_length=1, max_length=64)]


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = f'"{value}"' if isinstance(value, str) else type(value).__name__
        raise ValueError(f"must be a number, got {shown} | hint: write a number without "
                         "quotes, e.g. 0.8")
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {value!r}")
    return float(value)


Number = Annotated[float, BeforeValidator(_number)]
"""An integer or a float (never a string or a boolean), finite."""

CheckKind = Literal["equals", "contains", "regex", "json", "python", "judge"]
"""What a check compares: text, a pattern, a JSON value, a Python function, a model's score."""

_STRICT = ConfigDict(frozen=True, extra="forbid")


class EvalSettings(Described):
    """The ``[eval]`` table."""

    model_config = _STRICT

    id: Ident
    """The evaluation's id: tags its runs (``eval=ID``) and names its run ids."""
    description: StrictStr = ""
    """What the evaluation measures (shown in reports)."""
    repeats: Annotated[StrictInt, Field(ge=1, le=10_000)] = 1
    """Runs per case and arm."""
    jobs: Annotated[StrictInt, Field(ge=1, le=256)] = 1
    """Runs at once, on the embedded engine (one process)."""
    cases: StrictStr | None = None
    """A JSON Lines file of cases (relative to this file), or give ``[[cases]]`` tables."""
    seed: StrictInt = 0
    """Seed of the bootstrap intervals (same seed, same report)."""
    bootstrap: Annotated[StrictInt, Field(ge=100, le=100_000)] = 2000
    """Bootstrap resamples for score intervals and paired score comparisons."""
    cassettes: StrictStr | None = None
    """Folder of recorded answers for ``--record`` / ``--offline`` (relative to this file;
    default ``__cassettes__/<id>`` beside it)."""


class CaseSpec(Described):
    """One case: a ``[[cases]]`` table or a line of the cases file.

    Keys besides ``id``, ``task`` and ``expected`` are kept: templates see them as
    ``case.<key>``.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    id: Ident
    """The case's id (tags its runs: ``case=ID``)."""
    task: StrictStr = Field(min_length=1)
    """The task the arms' councils get (through each arm's ``task`` template)."""
    expected: Any = None
    """What a correct answer holds, for checks (``{{ case.expected }}``)."""

    def data(self) -> dict[str, Any]:
        """The case as templates and Python checks see it (every key it has)."""
        return self.model_dump(mode="json", exclude_unset=True)


class ArmSpec(Described):
    """An ``[[arms]]`` table: a council the cases are run on."""

    model_config = _STRICT

    id: Ident
    """The arm's id (tags its runs: ``arm=ID``)."""
    council: StrictStr = Field(min_length=1)
    """The council file (relative to this file)."""
    models: dict[Ident, Ident] = Field(default_factory=dict)
    """The council's model profiles to replace: ``{council profile = eval profile}``."""
    task: StrictStr = Field(default="{{ case.task }}", min_length=1)
    """The council's task for a case (a Jinja2 template over ``case``)."""
    description: StrictStr = ""
    """What the arm is (shown in reports)."""


class CheckSpec(Described):
    """A ``[[checks]]`` table: what makes a run good.

    ``equals``, ``contains``, ``regex`` and ``json`` pass or fail; ``python`` passes or fails,
    or scores when it has a ``scale``; ``judge`` (a model) scores on its ``scale``.
    """

    model_config = _STRICT

    id: Ident
    """The check's id (a report column, a ``[gate]`` key)."""
    kind: CheckKind
    """``equals`` | ``contains`` | ``regex`` | ``json`` | ``python`` | ``judge``."""
    target: StrictStr = "answer"
    """What is checked: ``answer`` | ``result`` | ``transcript`` | ``decision:ID`` |
    ``member:ID``."""
    value: Any = None
    """``equals``/``contains``: the text (a template); ``regex``: the pattern (a template);
    ``json``: the value expected at ``path`` (strings are templates)."""
    path: StrictStr | None = None
    """``json``: where in the target (``agents[0].result.data.total``)."""
    ignore_case: StrictBool = False
    """``equals``, ``contains``, ``regex``: compare without regard to case."""
    function: StrictStr | None = Field(default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
    """``python``: ``module:function`` (the module beside this file, or installed)."""
    model: Ident | None = None
    """``judge``: the ``[models.NAME]`` profile that judges."""
    rubric: StrictStr | None = Field(default=None, min_length=1)
    """``judge``: what the judge scores."""
    scale: tuple[StrictInt, StrictInt] | None = None
    """``judge`` (required), ``python`` (optional): ``[lowest, highest]`` scores."""
    prompt: StrictStr | None = Field(default=None, min_length=1)
    """``judge``: the judge's task (a Jinja2 template; default: rubric, case and target)."""
    repair_attempts: Annotated[StrictInt, Field(ge=0, le=10)] = 2
    """``judge``: how often an answer off the scale is re-asked before it counts as an error."""
    retries: Annotated[StrictInt, Field(ge=0, le=10)] = 1
    """``judge``: how often a failed judge turn (a model error) runs again."""
    max_tokens: Annotated[StrictInt, Field(ge=1)] | None = None
    """``judge``: token budget of one judgement (its run fails ``BUDGET_EXHAUSTED`` past it)."""
    max_cost_usd: Annotated[Number, Field(ge=0)] | None = None
    """``judge``: cost budget of one judgement."""

    @property
    def scored(self) -> bool:
        """Whether the check gives a score (a mean) rather than pass or fail (a rate)."""
        return self.scale is not None


class EvalSpec(Described):
    """A whole ``wop eval`` file."""

    model_config = _STRICT

    eval: EvalSettings
    """The ``[eval]`` table."""
    cases: list[CaseSpec] = Field(default_factory=list)
    """``[[cases]]`` tables (or ``[eval] cases`` names a JSONL file)."""
    models: dict[Ident, ModelProfile] = Field(default_factory=dict)
    """``[models.NAME]`` profiles for arm overrides and judges."""
    arms: list[ArmSpec] = Field(min_length=1)
    """The councils compared."""
    checks: list[CheckSpec] = Field(min_length=1)
    """What is measured on every run."""
    gate: dict[Ident, Any] = Field(default_factory=dict)
    """``check = threshold`` for every arm, or ``check = {arm = threshold}`` (numbers)."""


_WHAT: Final[dict[str, tuple[str, ...]]] = {
    "equals": ("value",), "contains": ("value",), "regex": ("value",), "json": ("path",),
    "python": ("function",), "judge": ("model", "rubric", "scale"),
}
"""Keys each kind needs."""
_ALLOWED: Final[dict[str, frozenset[str]]] = {
    "equals": frozenset({"value", "ignore_case"}),
    "contains": frozenset({"value", "ignore_case"}),
    "regex": frozenset({"value", "ignore_case"}),
    "json": frozenset({"path", "value"}),
    "python": frozenset({"function", "scale"}),
    "judge": frozenset({"model", "rubric", "scale", "prompt", "repair_attempts", "retries",
                        "max_tokens", "max_cost_usd"}),
}
"""Kind-specific keys each kind takes (``id``, ``kind`` and ``target`` fit every kind)."""
_COMMON: Final = frozenset({"id", "kind", "target"})
_TARGETS: Final = "answer | result | transcript | decision:ID | member:ID"


def parse_target(target: str) -> tuple[str, str | None] | None:
    """``("answer", None)``, ``("decision", "ship")`` …; ``None`` when not a target."""
    if target in ("answer", "result", "transcript"):
        return target, None
    kind, sep, ident = target.partition(":")
    if sep and kind in ("decision", "member") and re.fullmatch(IDENT_PATTERN, ident):
        return kind, ident
    return None


def check_eval(spec: EvalSpec) -> list[Problem]:
    """What the fields alone cannot check, as problems with field paths (unlocated)."""
    problems: list[Problem] = []
    tables: tuple[tuple[str, list[str]], ...] = (
        ("arms", [a.id for a in spec.arms]), ("checks", [c.id for c in spec.checks]),
        ("cases", [c.id for c in spec.cases]))
    for table, ids in tables:
        seen: set[str] = set()
        for index, ident in enumerate(ids):
            if ident in seen:
                problems.append(Problem(f"duplicate id '{ident}'", f"{table}[{index}].id",
                                        f"give each of the {table} an id of its own"))
            seen.add(ident)
    if spec.eval.cases is not None and spec.cases:
        problems.append(Problem("cases come from both [eval] cases and [[cases]] tables",
                                "eval.cases", "keep one: the JSONL file or the tables"))
    if spec.eval.cases is None and not spec.cases:
        problems.append(Problem("no cases", "eval", 'add cases = "cases.jsonl" to [eval], or '
                                "[[cases]] tables with id and task"))
    for index, arm in enumerate(spec.arms):
        for name, profile in arm.models.items():
            if profile not in spec.models:
                problems.append(Problem(
                    f"model profile '{profile}' is not declared in this file",
                    f"arms[{index}].models.{name}",
                    f"add a [models.{profile}] table, or name one of: "
                    f"{', '.join(spec.models) or '(none declared)'}"))
    for index, check in enumerate(spec.checks):
        problems += _check_problems(spec, index, check)
    problems += _gate_problems(spec)
    return problems


def _check_problems(spec: EvalSpec, index: int, check: CheckSpec) -> list[Problem]:
    where = f"checks[{index}]"
    problems: list[Problem] = []
    if parse_target(check.target) is None:
        problems.append(Problem(f"unknown target {check.target!r}", f"{where}.target",
                                f"use one of: {_TARGETS}"))
    for key in _WHAT[check.kind]:
        if getattr(check, key) is None:
            problems.append(Problem(f"a {check.kind} check needs '{key}'", where,
                                    f"add {key} = … to this check (see {GUIDE})"))
    for key in sorted(check.model_fields_set - _COMMON - _ALLOWED[check.kind]):
        problems.append(Problem(f"'{key}' does not apply to a {check.kind} check",
                                f"{where}.{key}", "remove it, or change the kind"))
    if check.kind == "judge" and check.model is not None and check.model not in spec.models:
        problems.append(Problem(f"model profile '{check.model}' is not declared in this file",
                                f"{where}.model", f"add a [models.{check.model}] table"))
    if check.scale is not None and check.scale[0] >= check.scale[1]:
        problems.append(Problem(f"scale = [{check.scale[0]}, {check.scale[1]}]: the lowest "
                                "score must be below the highest", f"{where}.scale",
                                "e.g. scale = [1, 5]"))
    if check.kind in ("equals", "contains", "regex") and check.value is not None and \
            not isinstance(check.value, str | int | float):
        problems.append(Problem(f"a {check.kind} check's value must be text (or a number)",
                                f"{where}.value", 'e.g. value = "{{ case.expected }}"'))
    return problems


def _gate_problems(spec: EvalSpec) -> list[Problem]:
    problems: list[Problem] = []
    checks = {c.id: c for c in spec.checks}
    arms = [a.id for a in spec.arms]
    for key, value in spec.gate.items():
        check = checks.get(key)
        if check is None:
            problems.append(Problem(f"a gate on '{key}', which is not a check", f"gate.{key}",
                                    f"gate one of the checks: {', '.join(checks)}"))
            continue
        thresholds = value if isinstance(value, dict) else {"": value}
        for arm, threshold in thresholds.items():
            path = f"gate.{key}.{arm}" if arm else f"gate.{key}"
            if isinstance(threshold, bool) or not isinstance(threshold, int | float) or \
                    not math.isfinite(threshold):
                problems.append(Problem(
                    f"a threshold must be a number, got {threshold!r}", path,
                    f"e.g. {key} = 0.8 (every arm) or {key} = {{ {arms[0]} = 0.8 }}"))
                continue
            if arm and arm not in arms:
                problems.append(Problem(f"a gate for arm '{arm}', which is not an arm", path,
                                        f"name one of the arms: {', '.join(arms)}"))
            low, high = check.scale if check.scale is not None else (0, 1)
            if not low <= threshold <= high:
                what = f"a mean score on [{low}, {high}]" if check.scale else \
                    "a pass rate from 0 to 1"
                problems.append(Problem(f"threshold {threshold} is not {what}", path,
                                        "e.g. 0.8 for 80 % of the runs passing" if not
                                        check.scale else f"a score from {low} to {high}"))
    return problems
