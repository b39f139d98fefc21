"""Load an eval file: the TOML, its cases, its arms' councils, its checks — all checked first.

Everything that can be wrong is found before any run starts, and reported together, each
problem at its place (``file:line:col``): the eval file's keys, each line of the cases file,
each arm's council file (its own errors keep their own places), model profile overrides,
targets a council does not have, templates that do not render for a case, Python check
functions that do not import. Relative paths resolve against the eval file's folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Template

from wopdsl import Council, DeclarationError, load
from wopdsl.compile.handlers import import_handler
from wopdsl.declare.document import TomlDocument, in_file_order, parse_toml, read_text
from wopdsl.errors import Problem
from wopdsl.evals.cases import Case, read_cases
from wopdsl.evals.spec import GUIDE, ArmSpec, CheckSpec, EvalSpec, check_eval, parse_target
from wopdsl.evals.templates import TemplateError, compile_template, render

__all__ = ["Arm", "Check", "Evaluation", "load_eval"]

_SUBJECT = "eval file"


@dataclass(frozen=True, slots=True)
class Arm:
    """An arm, its council loaded (model profiles replaced as the arm says)."""

    spec: ArmSpec
    council: Council
    """The council as the file declares it, with the arm's profile overrides."""
    tasks: dict[str, str]
    """The council's task for each case (the arm's ``task`` template rendered)."""

    @property
    def id(self) -> str:
        """The arm's id."""
        return self.spec.id


@dataclass(frozen=True, slots=True)
class Check:
    """A check, ready to apply: its target parsed, its templates rendered per case."""

    spec: CheckSpec
    target: tuple[str, str | None]
    values: dict[str, Any] = field(default_factory=dict)
    """Per case id: the expected value (templates rendered)."""
    patterns: dict[str, re.Pattern[str]] = field(default_factory=dict)
    """``regex``: per case id, the compiled pattern."""
    function: Callable[..., Any] | None = None
    """``python``: the function."""
    prompt: Template | None = None
    """``judge``: the prompt template (``None``: the default prompt)."""

    @property
    def id(self) -> str:
        """The check's id."""
        return self.spec.id


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A loaded, checked eval file (see :func:`load_eval`)."""

    spec: EvalSpec
    path: Path
    """The eval file (absolute)."""
    shown: str
    """The eval file as given (for messages and hints)."""
    cases: list[Case]
    arms: list[Arm]
    checks: list[Check]
    document: TomlDocument

    @property
    def id(self) -> str:
        """The eval id."""
        return self.spec.eval.id

    @property
    def folder(self) -> Path:
        """The eval file's folder (relative paths resolve against it)."""
        return self.path.parent

    @property
    def cassettes(self) -> Path:
        """Where ``--record`` writes and ``--offline`` reads recorded answers."""
        named = self.spec.eval.cassettes
        return self.folder / named if named else self.folder / "__cassettes__" / self.id


def load_eval(path: str | os.PathLike[str]) -> Evaluation:
    """Read and check an eval file, its cases, councils and checks.

    Raises:
        DeclarationError: every problem found, each with ``file:line:col`` and a hint.
    """
    try:
        return _load(os.fspath(path))
    except DeclarationError as exc:  # the head says what kind of file is wrong
        raise DeclarationError(exc.problems, subject=_SUBJECT) from None


def _load(shown: str) -> Evaluation:
    document = parse_toml(read_text(shown, what=_SUBJECT), shown)
    spec = document.validate(EvalSpec, guide=GUIDE)
    problems = check_eval(spec)
    if problems:
        raise DeclarationError(document.locate(problems))
    folder = Path(shown).resolve().parent
    cases = _cases(spec, document, folder)
    problems = []
    arms = [_arm(spec, document, index, folder, cases, problems)
            for index in range(len(spec.arms))]
    checks = [_check(spec, document, index, folder, cases, arms, problems)
              for index in range(len(spec.checks))]
    if problems:
        raise DeclarationError(in_file_order(problems))
    return Evaluation(spec, Path(shown).resolve(), shown, cases,
                      [a for a in arms if a is not None], checks, document)


def _relative(folder: Path, name: str) -> Path:
    """``name`` resolved against the eval file's folder, as messages show it.

    Relative to the working directory when inside it, else absolute.
    """
    target = (folder / name).resolve()
    try:
        return target.relative_to(Path.cwd())
    except ValueError:
        return target


def _cases(spec: EvalSpec, document: TomlDocument, folder: Path) -> list[Case]:
    if spec.eval.cases is None:
        return [Case(case, document.problem("", ("cases", index)))
                for index, case in enumerate(spec.cases)]
    target = _relative(folder, spec.eval.cases)
    if not target.is_file():
        raise DeclarationError(document.problem(
            f"cases file not found: {target}", ("eval", "cases"),
            "name a JSON Lines file relative to the eval file's folder"))
    return read_cases(target, str(target))


def _arm(spec: EvalSpec, document: TomlDocument, index: int, folder: Path, cases: list[Case],
         problems: list[Problem]) -> Arm:
    arm = spec.arms[index]
    target = _relative(folder, arm.council)
    if not target.is_file():
        problems.append(document.problem(f"council file not found: {target}",
                                         ("arms", index, "council"),
                                         "name a council file relative to the eval file"))
        return Arm(arm, Council(arm.id, task="-"), {})
    try:
        council = load(target)
        council = _with_profiles(council, arm, spec, document, index, problems)
        council.check_runnable()
    except DeclarationError as exc:
        problems.extend(exc.problems)
        return Arm(arm, Council(arm.id, task="-"), {})
    tasks: dict[str, str] = {}
    try:
        template = compile_template(arm.task)
    except TemplateError as exc:
        problems.append(document.problem(f"the task template does not compile: {exc}",
                                         ("arms", index, "task"), "fix the Jinja2 syntax"))
        return Arm(arm, council, tasks)
    for case in cases:
        try:
            tasks[case.id] = render(template, case=case.data)
        except TemplateError as exc:
            problems.append(case.problem(
                f"arm '{arm.id}': its task template fails for case '{case.id}': {exc}",
                "give the case that key, or change the arm's task"))
    return Arm(arm, council, tasks)


def _with_profiles(council: Council, arm: ArmSpec, spec: EvalSpec, document: TomlDocument,
                   index: int, problems: list[Problem]) -> Council:
    if not arm.models:
        return council
    models = dict(council.spec.models)
    for name, profile in arm.models.items():
        if name not in models:
            problems.append(document.problem(
                f"council {council.id} has no model profile '{name}' to replace",
                ("arms", index, "models", name),
                f"its profiles: {', '.join(models) or '(none)'}"))
            continue
        models[name] = spec.models[profile]
    derived = Council.from_spec(council.spec.model_copy(update={"models": models}),
                                source=council.source)
    derived.base_dir = council.base_dir
    return derived


def _check(spec: EvalSpec, document: TomlDocument, index: int, folder: Path, cases: list[Case],
           arms: list[Arm], problems: list[Problem]) -> Check:
    check = spec.checks[index]
    where: tuple[str | int, ...] = ("checks", index)
    target = parse_target(check.target)
    assert target is not None  # check_eval refused the others
    kind, ident = target
    for arm in arms:
        if ident is None or not arm.tasks:
            continue
        council_spec = arm.council.spec
        names = [d.id for d in council_spec.decisions] if kind == "decision" else \
            [m.id for m in council_spec.members]
        if ident not in names:
            problems.append(document.problem(
                f"arm '{arm.id}' ({arm.spec.council}) has no {kind} '{ident}'",
                (*where, "target"), f"its {kind}s: {', '.join(names) or '(none)'}"))
    result = Check(check, target)
    if check.kind == "python" and check.function is not None:
        try:
            function = import_handler(check.function, folder)
        except Exception as exc:  # whatever importing the user's module raises
            problems.append(document.problem(
                f"cannot import {check.function}: {type(exc).__name__}: {exc}",
                (*where, "function"),
                "name a module:function beside the eval file (or installed)"))
            return result
        return Check(check, target, function=function)
    if check.kind == "judge":
        if check.prompt is None:
            return result
        try:
            return Check(check, target, prompt=compile_template(check.prompt))
        except TemplateError as exc:
            problems.append(document.problem(f"the prompt template does not compile: {exc}",
                                             (*where, "prompt"), "fix the Jinja2 syntax"))
            return result
    if check.value is None:
        return result
    return _with_values(result, document, where, cases, problems)


def _with_values(check: Check, document: TomlDocument, where: tuple[str | int, ...],
                 cases: list[Case], problems: list[Problem]) -> Check:
    value = check.spec.value
    if not isinstance(value, str):
        return Check(check.spec, check.target, dict.fromkeys((c.id for c in cases), value))
    try:
        template = compile_template(value)
    except TemplateError as exc:
        problems.append(document.problem(f"the value template does not compile: {exc}",
                                         (*where, "value"), "fix the Jinja2 syntax"))
        return check
    values: dict[str, Any] = {}
    patterns: dict[str, re.Pattern[str]] = {}
    flags = re.IGNORECASE if check.spec.ignore_case else 0
    for case in cases:
        try:
            values[case.id] = rendered = render(template, case=case.data)
        except TemplateError as exc:
            problems.append(case.problem(
                f"check '{check.id}': its value template fails for case '{case.id}': {exc}",
                "give the case that key (e.g. expected), or change the check's value"))
            continue
        if check.spec.kind == "regex":
            try:
                patterns[case.id] = re.compile(rendered, flags)
            except re.error as exc:
                problems.append(document.problem(
                    f"not a regular expression for case '{case.id}': {exc}",
                    (*where, "value"), "fix the pattern (Python re syntax)"))
    return Check(check.spec, check.target, values, patterns)
