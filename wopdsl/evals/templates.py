"""Jinja2 templates of an eval file (arm tasks, check values, judge prompts), sandboxed.

Templates see ``case`` (every key of the case) and, in a judge's prompt, what is judged. An
undefined name is an error (``StrictUndefined``), never an empty string that quietly makes a
check pass or fail.
"""

from __future__ import annotations

import functools
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["TemplateError", "compile_template", "render"]


@functools.cache
def _environment() -> ImmutableSandboxedEnvironment:
    return ImmutableSandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True,
                                         autoescape=False)


def compile_template(text: str) -> Template:
    """Compile ``text`` once.

    Raises:
        TemplateError: a syntax error (``lineno`` set).
    """
    return _environment().from_string(text)


def render(template: Template, **context: Any) -> str:
    """Render ``template``; an undefined name or a sandbox refusal raises ``TemplateError``."""
    return template.render(**context)
