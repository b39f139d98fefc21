"""Private: the bounded Jinja2 sandbox every council template compiles and renders in.

Jinja2's ``SandboxedEnvironment`` stops templates from reaching Python internals; it does not
bound what they cost. This one also:

- never evaluates template arithmetic while compiling (``optimized=False``: Jinja2's
  optimizer folds constants such as ``3 ** 100000000`` at compile time);
- bounds the operators and filters that multiply sizes (``*``, ``**``, ``+``, ``%``, ``~``,
  ``center``, ``indent``, ``join``, ``replace``, ``format`` ...) before they allocate: an
  intermediate string or list may hold at most the render's character budget, an integer
  at most :data:`MAX_INT_BITS` bits;
- checks the render's CPU-time and wall-clock deadlines on every loop iteration and call.

A render that goes over a bound raises :class:`TemplateLimit` (a :class:`TurnError`, code
``TEMPLATE_LIMIT``, or ``TIMEOUT`` when the turn's ``turn_timeout_ms`` ran out).
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from string import Formatter
from typing import Any, Final

from wopdsl.errors import TurnError

__all__ = [
    "MAX_INT_BITS",
    "TEMPLATE_CPU_SECONDS",
    "TEMPLATE_MAX_CHARS",
    "Budget",
    "TemplateLimit",
    "bounded_environment",
    "budget",
    "check_time",
]

TEMPLATE_CPU_SECONDS: Final = 1.0
"""CPU seconds one render of one template may use."""
TEMPLATE_MAX_CHARS: Final = 1_048_576
"""Default character budget of one render (output and every intermediate string or list)."""
MAX_INT_BITS: Final = 65_536
"""Largest integer (in bits) template arithmetic may produce (about 19,700 digits)."""
_CHECK_EVERY: Final = 256
"""Loop iterations and calls between two clock reads."""


class TemplateLimit(TurnError):
    """A template went over a bound while rendering (the turn fails with this code)."""


@dataclass(slots=True)
class Budget:
    """The bounds of the render running in this thread."""

    max_chars: int
    cpu_deadline: float
    """``time.thread_time()`` past which the render stops (0: read the clock at the first
    check, so a render that loops or calls little never pays for the clock)."""
    wall_deadline: float | None
    """``time.monotonic()`` past which the render stops (the turn's timeout), if any."""
    timeout_s: float | None
    ticks: int = 0


_local = threading.local()


def budget() -> Budget | None:
    """Return the budget of the render running in this thread, if any."""
    found: Budget | None = getattr(_local, "budget", None)
    return found


def set_budget(value: Budget | None) -> Budget | None:
    """Install ``value`` as this thread's budget; return the previous one."""
    previous = budget()
    _local.budget = value
    return previous


def check_time(current: Budget | None = None, *, force: bool = False) -> None:
    """Raise :class:`TemplateLimit` once the render's CPU time or the turn's time is spent."""
    current = current or budget()
    if current is None:
        return
    current.ticks += 1
    if not force and current.ticks % _CHECK_EVERY:
        return
    if current.wall_deadline is not None and time.monotonic() > current.wall_deadline:
        raise TemplateLimit("TIMEOUT", f"a template was still rendering after "
                            f"{current.timeout_s:g} s (turn_timeout_ms)")
    if not current.cpu_deadline:
        current.cpu_deadline = time.thread_time() + TEMPLATE_CPU_SECONDS
    elif time.thread_time() > current.cpu_deadline:
        raise TemplateLimit("TEMPLATE_LIMIT", f"a template used more than "
                            f"{TEMPLATE_CPU_SECONDS:g} s of CPU time while rendering")


def _max_chars() -> int:
    current = budget()
    return TEMPLATE_MAX_CHARS if current is None else current.max_chars


def _too_big(size: int, what: str) -> TemplateLimit:
    return TemplateLimit("TEMPLATE_LIMIT", f"{what} would hold {size} characters; a template "
                         f"may build at most {_max_chars()} (its member's byte limit)")


def _check_size(size: int, what: str) -> None:
    if size > _max_chars():
        raise _too_big(size, what)


def _sized(value: Any) -> int | None:
    if isinstance(value, str | bytes | list | tuple):
        return len(value)
    return None


def _check_result(value: Any, what: str) -> Any:
    size = _sized(value)
    if size is not None and size > _max_chars():
        raise _too_big(size, what)
    return value


def _int_bits(value: Any) -> int | None:
    return value.bit_length() if isinstance(value, int) else None


def _check_bits(bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise TemplateLimit("TEMPLATE_LIMIT", f"template arithmetic would build a {bits}-bit "
                            f"integer; the limit is {MAX_INT_BITS} bits")


def _check_binop(operator: str, left: Any, right: Any) -> None:
    if operator == "**":
        base, exponent = _int_bits(left), right
        if base is not None and isinstance(exponent, int) and exponent > 0 and abs(left) > 1:
            _check_bits(base * exponent)
        return
    if operator == "*":
        lbits, rbits = _int_bits(left), _int_bits(right)
        if lbits is not None and rbits is not None:
            _check_bits(lbits + rbits)
            return
        for seq, count in ((left, right), (right, left)):
            size = _sized(seq)
            if size is not None and isinstance(count, int):
                _check_size(size * count, "a repeated string or list")
        return
    if operator == "+":
        lsize, rsize = _sized(left), _sized(right)
        if lsize is not None and rsize is not None:
            _check_size(lsize + rsize, "a joined string or list")
        return
    if operator == "%" and isinstance(left, str):
        _check_printf(left)


_PRINTF: Final = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _check_printf(spec: str) -> None:
    for width, precision in _PRINTF.findall(spec):
        for number in (width, precision):
            if number == "*":
                raise TemplateLimit("TEMPLATE_LIMIT",
                                    "a '*' width in %-formatting is not allowed in templates")
            if number and int(number) > _max_chars():
                raise _too_big(int(number), "a %-formatted field")


_WIDTH: Final = re.compile(r"(\d+)")


def _check_format_spec(spec: str) -> None:
    for number in _WIDTH.findall(spec):
        if len(number) > 9 or int(number) > _max_chars():
            raise _too_big(int(number[:12]), "a formatted field")


def _bounded_iter(iterable: Iterable[Any]) -> Iterator[Any]:
    current = budget()
    if current is None:
        yield from iterable
        return
    for item in iterable:
        check_time(current)
        yield item


def _bounded_concat(items: Iterable[Any]) -> str:
    parts = [item if isinstance(item, str) else str(item) for item in items]
    _check_size(sum(map(len, parts)), "a concatenated string")
    return "".join(parts)


def _join(items: Iterable[str]) -> str:
    parts = list(items)
    _check_size(sum(map(len, parts)), "a template's output")
    return "".join(parts)


def _width(value: Any) -> int:
    return value if isinstance(value, int) else len(value) if isinstance(value, str) else 0


_PRECHECKS: Final[dict[str, Callable[..., int]]] = {
    # An upper bound of each amplifying filter's result, from its arguments.
    "center": lambda value, width=80, *a, **k: max(len(str(value)), _width(width)),
    "indent": lambda value, width=4, *a, **k: len(str(value)) * (1 + _width(width)),
    "wordwrap": lambda value, width=79, break_long_words=True, wrapstring=None, *a, **k:
        len(str(value)) * (1 + len(wrapstring or "\n")),
    "replace": lambda value, old, new, *a, **k:
        (len(str(value)) + 1) * max(1, len(str(new))) + len(str(value)),
    "truncate": lambda value, length=255, killwords=False, end="...", *a, **k:
        len(str(value)) + len(str(end)),
}
_SIZE_OF_ITEMS: Final = frozenset({"join", "sum"})


def _wrap_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    precheck = _PRECHECKS.get(name)
    by_items = name in _SIZE_OF_ITEMS
    skip = 1 if getattr(function, "jinja_pass_arg", None) is not None else 0
    what = f"the result of the '{name}' filter"

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        check_time()
        values = args[skip:]
        if precheck is not None and values:
            _check_size(precheck(*values, **kwargs), what)
        elif by_items and values:
            items = list(values[0])
            separator = len(str(values[1])) if len(values) > 1 and name == "join" else 0
            _check_size(sum(_sized(i) or 8 for i in items) + separator * len(items), what)
            args = (*args[:skip], items, *values[1:])
        elif name == "format" and values:
            _check_printf(str(values[0]))
        return _check_result(function(*args, **kwargs), what)

    return bounded


_STR_AMPLIFIERS: Final = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs",
                                    "replace", "join", "format_map", "translate"})


def _check_method(obj: Any, args: tuple[Any, ...]) -> None:
    owner = getattr(obj, "__self__", None)
    name = getattr(obj, "__name__", "")
    if not isinstance(owner, str) or name not in _STR_AMPLIFIERS:
        return
    if name in {"center", "ljust", "rjust", "zfill"} and args:
        _check_size(max(len(owner), _width(args[0])), f"str.{name}")
    elif name == "expandtabs":
        tab = _width(args[0]) if args else 8
        _check_size(len(owner) * max(1, tab), "str.expandtabs")
    elif name == "replace" and len(args) >= 2:
        new = len(str(args[1]))
        _check_size(len(owner) * max(1, new) + new, "str.replace")
    elif name == "join" and args:
        _check_size(sum(_sized(i) or 8 for i in args[0]) if isinstance(args[0], list | tuple)
                    else 0, "str.join")
    elif name in {"format_map", "translate"}:
        raise TemplateLimit("TEMPLATE_LIMIT", f"str.{name} is not available in templates")


@functools.cache
def bounded_environment() -> Any:
    """Return the one bounded sandbox (built on first use: Jinja2 loads lazily)."""
    from jinja2 import StrictUndefined, nodes
    from jinja2.sandbox import SandboxedEnvironment

    class _Bounded(SandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "+", "%"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right)
            return _check_result(super().call_binop(context, operator, left, right),
                                 f"the result of '{operator}'")

        def call(__self, __context: Any, __obj: Any, *args: Any,
                 **kwargs: Any) -> Any:
            check_time()
            _check_method(__obj, args)
            return _check_result(
                SandboxedEnvironment.call(__self, __context, __obj, *args, **kwargs),
                "a call's result")

        def wrap_str_format(self, value: Any) -> Any:
            wrapper = super().wrap_str_format(value)
            if wrapper is None:
                return None
            pattern = value.__self__

            def bounded(*args: Any, **kwargs: Any) -> Any:
                for _literal, _field, spec, _conversion in Formatter().parse(pattern):
                    _check_format_spec(spec or "")
                return _check_result(wrapper(*args, **kwargs), "a formatted string")

            return bounded

        def _parse(self, source: str, name: str | None, filename: str | None) -> Any:
            tree = super()._parse(source, name, filename)
            # Every loop checks the clock; every ``~`` checks its size.
            for loop in tree.find_all(nodes.For):
                loop.iter = nodes.Filter(loop.iter, "_wop_iter", [], [], None, None,
                                         lineno=loop.lineno)
            _replace_concats(tree, nodes)
            return tree

    env = _Bounded(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                   optimized=False)
    env.filters = {name: _wrap_filter(name, f) for name, f in env.filters.items()}
    env.filters["_wop_iter"] = _bounded_iter
    env.filters["_wop_concat"] = _bounded_concat
    env.concat = _join  # type: ignore[method-assign]
    return env


def _replace_concats(tree: Any, nodes: Any) -> None:
    # One pass: every Concat (``a ~ b``) becomes ``[a, b]|_wop_concat``, which checks its size.
    for parent in [tree, *tree.find_all(nodes.Node)]:
        for field in parent.fields:
            value = getattr(parent, field, None)
            if isinstance(value, nodes.Concat):
                setattr(parent, field, _concat_filter(value, nodes))
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    if isinstance(item, nodes.Concat):
                        value[index] = _concat_filter(item, nodes)


def _concat_filter(concat: Any, nodes: Any) -> Any:
    return nodes.Filter(nodes.List(concat.nodes, lineno=concat.lineno), "_wop_concat", [], [],
                        None, None, lineno=concat.lineno)
