"""Load council files: TOML text -> validated :class:`~wopdsl.model.spec.CouncilSpec`.

Every problem names the file, line and column of the offending key, the field path and a fix,
and all problems of a file are raised together in one :class:`~wopdsl.errors.DeclarationError`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from wopdsl.declare._bounds import data_problem
from wopdsl.declare._messages import describe_error
from wopdsl.declare._python_file import python_file_problem
from wopdsl.declare._source_map import SourceMap, format_path, parse_path
from wopdsl.declare.document import in_file_order, parse_toml, read_text
from wopdsl.errors import DeclarationError, Problem
from wopdsl.model.checks import check_spec
from wopdsl.model.spec import CouncilSpec

__all__ = [
    "Declaration",
    "declaration_from_data",
    "load_declaration",
    "load_spec",
    "loads_declaration",
    "loads_spec",
    "spec_from_data",
]


@dataclass(frozen=True, slots=True)
class Declaration:
    """A validated, fully checked council declaration and where it came from.

    ``locate`` places problems found later (by ``compile()``: templates, handlers, turn
    schemas), which carry only a field path, in the declaration's file: the source map is kept
    from the load, so the file is never read a second time.
    """

    spec: CouncilSpec
    """The declaration (its references checked: ``compile()`` need not check them again)."""
    source: str | None
    """The file (or name) the declaration came from."""
    locator: Callable[[Iterable[Problem]], list[Problem]]
    """Adds ``source``, line and column to problems that carry only a field path."""

    def locate(self, problems: Iterable[Problem]) -> list[Problem]:
        """Return ``problems`` with their locations in the declaration, in file order."""
        return self.locator(problems)


def load_spec(path: str | os.PathLike[str]) -> CouncilSpec:
    """Read and validate a council file (see :func:`load_declaration`).

    Example:
        >>> spec = load_spec("councils/release-team.toml")
        >>> [member.id for member in spec.members]
        ['writer', 'reviewer']
    """
    return load_declaration(path).spec


def loads_spec(text: str, source: str = "<string>") -> CouncilSpec:
    r"""Validate a council declared in TOML text (see :func:`loads_declaration`).

    Example:
        >>> loads_spec('[council]\nid = "solo"\ntask = "Say hello."\n').id
        'solo'
    """
    return loads_declaration(text, source).spec


def load_declaration(path: str | os.PathLike[str]) -> Declaration:
    """Read and validate a council file.

    Args:
        path: The ``.toml`` file to read (UTF-8).

    Returns:
        The validated declaration, with a locator for later problems.

    Raises:
        DeclarationError: When the file is missing, unreadable, not UTF-8, not TOML, or not
            a valid council; it lists every problem with ``file:line:col``, path and hint.

    Example:
        >>> declaration = load_declaration("councils/release-team.toml")
        >>> [member.id for member in declaration.spec.members]
        ['writer', 'reviewer']
    """
    source = os.fspath(path)
    text = read_text(source)
    if Path(source).suffix == ".py":
        raise DeclarationError(python_file_problem(source, text))
    return loads_declaration(text, source)


def loads_declaration(text: str, source: str = "<string>") -> Declaration:
    """Validate a council declared in TOML text.

    Args:
        text: The TOML document.
        source: The name used in error locations (a file path, or ``<string>``).

    Returns:
        The validated declaration, with a locator for later problems.

    Raises:
        DeclarationError: Listing every problem (syntax, fields, cross-references), each with
            ``source:line:col``, field path and hint.

    Example:
        >>> declaration = loads_declaration('''
        ... [council]
        ... id = "solo"
        ... task = "Say hello."
        ... [[members]]
        ... id = "greeter"
        ... role = "greeter"
        ... engine = "script"
        ... script = [{ summary = "Hello." }]
        ... ''')
        >>> declaration.spec.members[0].script[0].summary
        'Hello.'
    """
    document = parse_toml(text, source)
    data, source_map = document.data, document.source_map
    spec = _validate(data, source_map, source)

    def locate(problems: Iterable[Problem]) -> list[Problem]:
        return in_file_order(_locate(problems, source_map, data, source))

    return Declaration(spec, source, locate)


def spec_from_data(data: Mapping[str, Any], *, source: str | None = None) -> CouncilSpec:
    """Validate council data shaped like the parsed file, with the loader's messages.

    For declarations that do not come from a TOML text (decorators, JSON): problems carry
    field paths and hints but no line and column.

    Args:
        data: ``{"council": {...}, "rooms": [...], "members": [...]}``.
        source: A name to show as the problems' location (e.g. the defining module).

    Returns:
        The validated declaration.

    Raises:
        DeclarationError: Listing every problem, each with its field path and a hint.

    Example:
        >>> spec_from_data({"council": {"id": "solo", "task": "Say hello."}}).id
        'solo'
    """
    return _validate(dict(data), None, source)


def declaration_from_data(data: Mapping[str, Any], *, source: str | None = None) -> Declaration:
    """Like :func:`spec_from_data`; later problems get ``source`` but no line and column."""
    spec = spec_from_data(data, source=source)

    def locate(problems: Iterable[Problem]) -> list[Problem]:
        return [_with_source(p, source) for p in problems]

    return Declaration(spec, source, locate)


def _with_source(problem: Problem, source: str | None) -> Problem:
    if problem.source is not None or source is None:
        return problem
    return Problem(problem.message, problem.path, problem.hint, source, problem.line,
                   problem.column)


def _validate(data: Any, source_map: SourceMap | None, source: str | None) -> CouncilSpec:
    deep = data_problem(data)
    if deep is not None:
        loc, message, hint = deep
        line, column = (source_map and source_map.locate(loc)) or (None, None)
        raise DeclarationError(Problem(message, format_path(loc, data), hint, source, line,
                                       column))
    try:
        spec = CouncilSpec.model_validate(data)
    except PydanticValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            loc = tuple(error["loc"])
            message, hint = describe_error(error, data)
            line, column = (source_map and source_map.locate(loc)) or (None, None)
            problems.append(Problem(message, format_path(loc, data), hint, source, line, column))
        raise DeclarationError(in_file_order(problems)) from None
    problems = check_spec(spec)
    if source_map is not None:
        problems = _locate(problems, source_map, data, source)
    else:
        problems = [_with_source(p, source) for p in problems]
    if problems:
        raise DeclarationError(in_file_order(problems))
    return spec


def _locate(
    problems: Iterable[Problem], source_map: SourceMap, data: Any, source: str | None
) -> list[Problem]:
    located = []
    for problem in problems:
        line, column = problem.line, problem.column
        if line is None and problem.path:
            line, column = source_map.locate(parse_path(problem.path, data)) or (None, None)
        located.append(
            Problem(
                problem.message, problem.path, problem.hint, problem.source or source, line, column
            )
        )
    return located
