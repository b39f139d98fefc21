"""Python function tools: the JSON Schema from the typed signature and docstring (pydantic).

A tool is a module-level function with annotated parameters, sync or async::

    def restart_service(name: str, force: bool = False) -> str:
        \"\"\"Restart a service on the host.

Args:
            name: The systemd unit, e.g. ``nginx``.
            force: Kill it if it does not stop.
        \"\"\"

The first paragraph of the docstring describes the tool, its ``Args:`` section each
parameter. Arguments are validated (pydantic, no extra keys) before the function is called.
Sync functions run on a daemon worker thread (a call over its timeout is abandoned, never
holding the process); async ones on the event loop.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, ClassVar, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic import ValidationError as PydanticValidationError

from wopdsl.agents._workers import HandlerRaised, run_in_worker
from wopdsl.agents.tools.base import Tool, ToolFault, ToolOutput, Transport, as_text
from wopdsl.model.tools import tool_name

__all__ = ["PythonTool", "describe_function"]

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Raises|Yields|Example|"
                      r"Examples|Note|Notes)\s*:\s*$")
_ARG = re.compile(r"^\s*(\*{0,2}[A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def describe_function(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The description of ``fn`` (its docstring's first part) and each argument's (``Args:``)."""
    doc = inspect.getdoc(fn) or ""
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    margin: int | None = None  # the indent of the argument lines of the section
    for line in doc.splitlines():
        found = _SECTION.match(line)
        if found:
            section, current, margin = found.group(1), None, None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in ("Args", "Arguments", "Parameters") or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        arg = _ARG.match(line)
        if arg and (margin is None or indent <= margin):
            margin = indent
            current = arg.group(1).lstrip("*")
            args[current] = arg.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    text = "\n".join(summary).strip()
    return re.sub(r"\s*\n\s*\n\s*", "\n\n", text), args


class PythonTool(Tool):
    """A typed Python function the model may call.

    Args:
        fn: The function (sync or async), with an annotation on every parameter.
        name: The name the model calls it by (default: the function's name).
        reference: How the council file names it.

    Raises:
        TypeError: a parameter is unannotated, positional-only or variadic.
    """

    transport: ClassVar[Transport] = "native"

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None,
                 reference: str | None = None) -> None:
        self.fn = fn
        self.name = tool_name(name or str(getattr(fn, "__name__", "tool")))
        self.reference = reference or self.name
        self.description, docs = describe_function(fn)
        self._model = _arguments_model(fn, docs)
        self.parameters = _clean_schema(self._model.model_json_schema())
        self.is_async = inspect.iscoroutinefunction(fn)

    def check(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate the arguments against the signature (types, required, no extras)."""
        try:
            checked = self._model.model_validate(arguments)
        except PydanticValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'arguments'}: {error['msg']}"
                for error in exc.errors()[:5])
            raise ToolFault("INVALID_ARGUMENTS", f"invalid arguments: {problems}") from None
        return {key: getattr(checked, key) for key in type(checked).model_fields}

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        """Call the function (on a worker thread when it is sync)."""
        try:
            if self.is_async:
                value = await self.fn(**arguments)
            else:
                value = await run_in_worker(lambda kwargs: self.fn(**kwargs), arguments)
        except ToolFault:
            raise
        except HandlerRaised as wrapped:
            raise _fault(wrapped.error) from None
        except Exception as exc:
            raise _fault(exc) from None
        return ToolOutput(as_text(value))


def _fault(exc: BaseException) -> ToolFault:
    try:
        text = str(exc)
    except Exception:  # a hostile __str__
        text = ""
    return ToolFault("TOOL_ERROR", f"{type(exc).__name__}: {text}"[:2000] if text
                     else type(exc).__name__)


def _arguments_model(fn: Callable[..., Any], docs: dict[str, str]) -> type[BaseModel]:
    signature = inspect.signature(fn)
    try:
        hints = get_type_hints(fn)
    except Exception as exc:
        raise TypeError(f"its annotations cannot be resolved ({exc})") from None
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"*{param.name} cannot be described to a model; name every "
                            "parameter")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"parameter {param.name} is positional-only; models pass "
                            "arguments by name")
        if param.name not in hints:
            raise TypeError(f"parameter {param.name} has no type annotation; annotate "
                            "every parameter (the model's JSON Schema is built from them)")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name],
                              Field(default, description=docs.get(param.name) or None))
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)
    model: type[BaseModel] = create_model(f"{getattr(fn, '__name__', 'tool')}_arguments",
                                          __config__=config, **fields)
    return model


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The arguments' schema without pydantic's titles (noise in every prompt)."""
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items()
                    if not (k == "title" and isinstance(v, str))}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    cleaned: dict[str, Any] = strip(schema)
    cleaned.setdefault("properties", {})
    cleaned["type"] = "object"
    return cleaned
