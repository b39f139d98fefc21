"""Jinja2 templates for members and compile(): each compiles once, renders in a bounded sandbox."""

from __future__ import annotations

import functools
import time
from typing import Any, Final, Protocol

from wopdsl.agents._sandbox import (
    TEMPLATE_MAX_CHARS,
    Budget,
    TemplateLimit,
    bounded_environment,
    check_time,
    set_budget,
)

MAX_TEMPLATE_CHARS: Final = 262_144
"""Longest template text (a string with ``{{``, ``{%`` or ``{#``) a council may hold."""


class Renderer(Protocol):
    """A compiled template: renders a context to text within the given bounds."""

    def __call__(self, context: dict[str, Any], /, *, max_chars: int = TEMPLATE_MAX_CHARS,
                 timeout_s: float | None = None) -> str:
        """Render ``context``.

        Raises:
            TemplateLimit: over ``max_chars`` characters, over the CPU-time bound, or
                still rendering after ``timeout_s`` seconds.
        """


class TemplateProblem(Exception):
    """A template failed to compile; carries jinja2's message and line."""

    def __init__(self, message: str, line: int | None, where: str = "") -> None:
        super().__init__(message)
        self.line = line
        self.where = where
        """Where in the member the template is (e.g. ``[2].posts[0].text``), if known."""


def _is_template(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


def compile_template(text: str) -> Renderer:
    """Compile ``text`` once; plain strings render to themselves without Jinja2.

    Raises:
        TemplateProblem: the template has a syntax error.
    """
    return compile_with_names(text)[0]


def _plain(text: str) -> Renderer:
    def render(_context: dict[str, Any], /, *, max_chars: int = TEMPLATE_MAX_CHARS,
               timeout_s: float | None = None) -> str:
        return text

    return render


_NO_NAMES: frozenset[str] = frozenset()


def compile_with_names(text: str) -> tuple[Renderer, frozenset[str]]:
    """Compile ``text`` once; return its renderer and the top-level variables it reads.

    A caller may build only these keys of a render context: any other name the template
    uses is a Jinja2 global or undefined (and then fails to render, as with a full context).
    A plain string reads none.

    Raises:
        TemplateProblem: the template has a syntax error.
    """
    if len(text) > MAX_TEMPLATE_CHARS:  # Plain text too: the bound is on every template.
        raise TemplateProblem(f"the template is {len(text)} characters long; the limit is "
                              f"{MAX_TEMPLATE_CHARS}", None)
    if not _is_template(text):
        return _plain(text), _NO_NAMES
    return _compile_jinja(text)


@functools.lru_cache(maxsize=1024)
def _compile_jinja(text: str) -> tuple[Renderer, frozenset[str]]:
    # Cached by text: a compiled template is immutable and renders into a fresh context each
    # call, so one can serve every step, member and compile() that uses the same text (a
    # long script repeats a few templates; Jinja2 compiles one in about a millisecond).
    # Syntax errors raise and are therefore never cached.
    from jinja2 import TemplateSyntaxError, meta

    env = bounded_environment()
    try:
        tree = env.parse(text)
        names = frozenset(meta.find_undeclared_variables(tree))
        template = env.from_string(tree)
    except TemplateSyntaxError as exc:
        raise TemplateProblem(exc.message or str(exc), exc.lineno) from None
    except (RecursionError, MemoryError, SyntaxError, ValueError, OverflowError) as exc:
        # Parsing and compiling recurse per nesting level (parentheses, blocks); Python's
        # compiler refuses more than 100 nested blocks (IndentationError / SyntaxError).
        raise TemplateProblem(f"the template is too deeply nested or too large to compile "
                              f"({type(exc).__name__})", None) from None
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

    def render(context: dict[str, Any], /, *, max_chars: int = TEMPLATE_MAX_CHARS,
               timeout_s: float | None = None) -> str:
        budget = Budget(max_chars, 0.0,
                        None if timeout_s is None else time.monotonic() + timeout_s, timeout_s)
        previous = set_budget(budget)
        try:
            ctx = context_class(env, {**template_globals, **context}, name, blocks,
                                globals=template_globals)
            size = 0
            parts = []
            for part in root(ctx):
                size += len(part)
                if size > max_chars:
                    raise TemplateLimit("TEMPLATE_LIMIT", f"a template's output went over "
                                        f"{max_chars} characters (its member's byte limit)")
                parts.append(part)
                check_time(budget)
            return concat(parts)  # type: ignore[no-any-return]
        except TemplateLimit:
            raise
        except RecursionError:
            raise TemplateLimit("TEMPLATE_LIMIT", "a template recursed too deeply") from None
        except Exception:
            handle_exception()  # Re-raises the exception, with the template's traceback.
            raise  # pragma: no cover - handle_exception always raises.
        finally:
            set_budget(previous)

    return render, names
