"""An eval's cases: ``[[cases]]`` tables, or a JSON Lines file of one case a line.

Each line of the file is a JSON object ``{"id": …, "task": …, "expected"?: …, …}``; blank
lines are skipped. A line that is not JSON, not an object or not a valid case is an error
naming ``file:line:col``; every such problem is reported together.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from wopdsl.declare.document import read_text
from wopdsl.errors import DeclarationError, Problem
from wopdsl.evals.spec import GUIDE, CaseSpec

__all__ = ["Case", "read_cases"]


class Case:
    """A case and where it was declared (for messages)."""

    __slots__ = ("data", "spec", "where")

    def __init__(self, spec: CaseSpec, where: Problem) -> None:
        self.spec = spec
        self.where = where
        """An empty problem carrying the case's place (``source``, ``line``, ``path``)."""
        self.data: dict[str, Any] = spec.data()
        """Every key of the case, as templates and Python checks see it."""

    @property
    def id(self) -> str:
        """The case id."""
        return self.spec.id

    def problem(self, message: str, hint: str = "") -> Problem:
        """A problem located where this case is declared."""
        where = self.where
        return Problem(message, where.path, hint, where.source, where.line, where.column)


def read_cases(path: Path, shown: str) -> list[Case]:
    """Read a JSON Lines file of cases.

    Args:
        path: The file.
        shown: The file as messages name it.

    Raises:
        DeclarationError: every bad line, with ``file:line:col``.
    """
    text = read_text(path, what="cases file")
    cases: list[Case] = []
    problems: list[Problem] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"not JSON: {exc.msg}", source=shown, line=number,
                                    column=exc.colno,
                                    hint='each line is one JSON object, e.g. {"id": "c1", '
                                         '"task": "2+2?", "expected": "4"}'))
            continue
        if not isinstance(data, dict):
            problems.append(Problem(f"a case must be a JSON object, got {type(data).__name__}",
                                    source=shown, line=number, column=1,
                                    hint='e.g. {"id": "c1", "task": "2+2?"}'))
            continue
        try:
            spec = CaseSpec.model_validate(data)
        except PydanticValidationError as exc:
            for error in exc.errors(include_url=False):
                field = ".".join(str(p) for p in error["loc"])
                message = "missing required key" if error["type"] == "missing" else \
                    str(error["msg"]).removeprefix("Value error, ")
                problems.append(Problem(message, field, f"each case needs an id (1-64 of "
                                        f"A-Z a-z 0-9 . _ -) and a task; see {GUIDE}",
                                        shown, number, 1))
            continue
        cases.append(Case(spec, Problem("", "", "", shown, number, 1)))
    seen: dict[str, int] = {}
    for case in cases:
        if case.id in seen:
            problems.append(case.problem(f"duplicate case id '{case.id}' (line "
                                         f"{seen[case.id]} has it too)",
                                         "give each case an id of its own"))
        seen.setdefault(case.id, case.where.line or 0)
    if problems:
        raise DeclarationError(problems)
    if not cases:
        raise DeclarationError(Problem("the cases file holds no case", source=shown,
                                       hint='add one JSON object a line: {"id": …, "task": …}'))
    return cases
