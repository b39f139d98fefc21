"""Private Jinja2 helpers: templates compile once, render in a sandbox."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

Renderer = Callable[[dict[str, Any]], str]


class TemplateProblem(Exception):
    """A template failed to compile; carries jinja2's message and line."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


def _is_template(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


@functools.cache
def _environment() -> Any:
    # Imported here: Jinja2 costs import time that plain `import wopdsl` should not pay.
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True
    )


def compile_template(text: str) -> Renderer:
    """Compile ``text`` once; plain strings render to themselves without Jinja2.

    Raises:
        TemplateProblem: the template has a syntax error.
    """
    if not _is_template(text):
        return lambda _context: text
    return _compile_jinja(text)


@functools.lru_cache(maxsize=1024)
def _compile_jinja(text: str) -> Renderer:
    # Cached by text: a compiled template is immutable and renders into a fresh context each
    # call, so one can serve every step, member and compile() that uses the same text (a
    # long script repeats a few templates; Jinja2 compiles one in about a millisecond).
    # Syntax errors raise and are therefore never cached.
    from jinja2 import TemplateSyntaxError

    try:
        template = _environment().from_string(text)
    except TemplateSyntaxError as exc:
        raise TemplateProblem(exc.message or str(exc), exc.lineno) from None
    render: Renderer = template.render
    return render
