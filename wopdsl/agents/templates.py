"""Jinja2 templates for members and compile(): each compiles once, renders in a sandbox."""

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
    return _compile_jinja(text)[0]


_NO_NAMES: frozenset[str] = frozenset()


def compile_with_names(text: str) -> tuple[Renderer, frozenset[str]]:
    """Compile ``text`` once; return its renderer and the top-level variables it reads.

    A caller may build only these keys of a render context: any other name the template
    uses is a Jinja2 global or undefined (and then fails to render, as with a full context).
    A plain string reads none.

    Raises:
        TemplateProblem: the template has a syntax error.
    """
    if not _is_template(text):
        return (lambda _context: text), _NO_NAMES
    return _compile_jinja(text)


@functools.lru_cache(maxsize=1024)
def _compile_jinja(text: str) -> tuple[Renderer, frozenset[str]]:
    # Cached by text: a compiled template is immutable and renders into a fresh context each
    # call, so one can serve every step, member and compile() that uses the same text (a
    # long script repeats a few templates; Jinja2 compiles one in about a millisecond).
    # Syntax errors raise and are therefore never cached.
    from jinja2 import TemplateSyntaxError, meta

    env = _environment()
    try:
        template = env.from_string(text)
        names = frozenset(meta.find_undeclared_variables(env.parse(text)))
    except TemplateSyntaxError as exc:
        raise TemplateProblem(exc.message or str(exc), exc.lineno) from None
    # What Template.render does, minus its per-call copies: the context's parent is a fresh
    # dict of the template's globals plus the caller's variables, exactly as render() builds
    # it (new_context(..., shared=False) merges the same two), and the Context gets the same
    # globals as a plain dict (it only copies their keys; a ChainMap is slower to iterate).
    root = template.root_render_func
    context_class = env.context_class
    name, blocks = template.name, template.blocks
    template_globals = dict(template.globals)
    concat = env.concat
    handle_exception = env.handle_exception

    def render(context: dict[str, Any]) -> str:
        try:
            ctx = context_class(env, {**template_globals, **context}, name, blocks,
                                globals=template_globals)
            text: str = concat(root(ctx))
            return text
        except Exception:
            handle_exception()  # Re-raises the exception, with the template's traceback.
            raise  # pragma: no cover - handle_exception always raises.

    return render, names
