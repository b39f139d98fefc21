"""Private: compile a room's ``turn_schema`` into a checker that runs in bounded time.

JSON Schema ``pattern`` and ``patternProperties`` run on RE2 (google-re2), whose matching
time is linear in the input: a pattern such as ``^(a+)+$`` cannot be driven into
catastrophic backtracking by a post. Patterns RE2 cannot run (lookaround, backreferences)
and ``$ref`` values that do not point inside the schema are refused at compile time, so
``wop validate`` catches them instead of a run failing later; so are references that loop
without descending into the content (``{"$ref": "#"}``), which no validator can ever finish.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from wopdsl.errors import Problem

__all__ = ["schema_checker"]

Checker = Callable[[dict[str, Any]], str | None]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_HINT = "fix the schema (JSON Schema draft 2020-12)"


def schema_checker(schema: dict[str, Any], path: str,
                   problems: list[Problem]) -> Checker | None:
    """Return a checker for post content, or ``None`` (with problems added) if it cannot."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - the conformance extra brings it.
        problems.append(Problem("turn_schema needs the jsonschema package", path=path,
                                hint="pip install 'wopdsl[conformance]'"))
        return None
    found: list[Problem] = []
    try:
        _check_parts(schema, schema, path, found)
        if not found:
            found.extend(_ref_cycle(schema, path))
    except RecursionError:
        found.append(Problem("turn_schema is nested too deeply", path=path, hint=_HINT))
    if found:
        problems.extend(found)
        return None
    validator_cls = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator)
    try:
        validator_cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        problems.append(Problem(f"turn_schema is not a valid JSON Schema: {exc.message}",
                                path=path, hint=_HINT))
        return None
    except Exception as exc:  # RecursionError, OverflowError ... from a hostile schema.
        problems.append(Problem(f"turn_schema cannot be checked ({type(exc).__name__})",
                                path=path, hint=_HINT))
        return None
    bounded = jsonschema.validators.extend(
        validator_cls, {"pattern": _pattern, "patternProperties": _pattern_properties})
    validator = bounded(schema)

    def check(content: dict[str, Any]) -> str | None:
        try:
            error = jsonschema.exceptions.best_match(validator.iter_errors(content))
        except RecursionError:
            return "content is nested too deeply to be checked against turn_schema"
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "content"
        return f"{where}: {error.message}"

    return check


def _walk(node: Any, where: str) -> Iterator[tuple[str, str, Any]]:
    """Yield ``(path, key, value)`` for every key of every object in ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield where, key, value
            yield from _walk(value, f"{where}.{_key(key)}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _walk(item, f"{where}[{index}]")


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _check_parts(schema: dict[str, Any], root: dict[str, Any], path: str,
                 problems: list[Problem]) -> None:
    anchors = {value for _w, key, value in _walk(root, path)
               if key in {"$anchor", "$dynamicAnchor"} and isinstance(value, str)}
    for where, key, value in _walk(schema, path):
        if key == "pattern" and isinstance(value, str):
            _check_pattern(value, f"{where}.pattern", problems)
        elif key == "patternProperties" and isinstance(value, dict):
            for pattern in value:
                _check_pattern(pattern, f"{where}.patternProperties", problems)
        elif key in {"$ref", "$dynamicRef"} and isinstance(value, str):
            problem = _ref_problem(value, root, anchors)
            if problem:
                problems.append(Problem(problem, path=f"{where}.{_key(key)}",
                                        hint="keep turn_schema self-contained: refer to "
                                             "$defs inside it, e.g. \"#/$defs/post\""))


def _check_pattern(pattern: str, where: str, problems: list[Problem]) -> None:
    try:
        re.compile(pattern)  # What check_schema's "format": "regex" check does.
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        problems.append(Problem(f"pattern {pattern!r} is not a valid regular expression: "
                                f"{exc}", path=where, hint="fix the regular expression"))
        return
    try:
        _regex(pattern)
    except ImportError:  # pragma: no cover - the conformance extra brings google-re2.
        problems.append(Problem("turn_schema patterns need the google-re2 package", path=where,
                                hint="pip install 'wopdsl[conformance]'"))
    except Exception as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        problems.append(Problem(
            f"pattern {pattern!r} cannot be used: {reason}", path=where,
            hint="patterns run on RE2 (linear time): no lookaround, no backreferences, "
                 "repetition counts up to 1000"))


def _ref_problem(ref: str, root: dict[str, Any], anchors: set[str]) -> str | None:
    if not ref.startswith("#"):
        return (f"$ref {ref!r} points outside the schema; remote references are not "
                "fetched")
    fragment = ref[1:]
    if not fragment.startswith("/") and fragment:
        return None if fragment in anchors else f"$ref {ref!r}: no $anchor named {fragment!r}"
    node: Any = root
    for raw in fragment.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return f"$ref {ref!r} does not point at anything in turn_schema"
    return None


_IN_PLACE: frozenset[str] = frozenset({"not", "if", "then", "else"})
"""Keywords whose subschema applies to the same value (no descent into the content)."""
_IN_PLACE_LISTS: frozenset[str] = frozenset({"allOf", "anyOf", "oneOf"})
_IN_PLACE_MAPS: frozenset[str] = frozenset({"dependentSchemas"})


def _ref_cycle(root: dict[str, Any], path: str) -> list[Problem]:
    """A problem for a reference loop that applies to one value forever (none if there is none).

    The subschemas that apply to the same value as their parent (``$ref``, ``allOf`` …
    ``not``, ``if``/``then``/``else``, ``dependentSchemas``) form a graph; a cycle in it is
    a schema that validates by recursing without end. Recursion through ``properties``,
    ``items`` and the like descends into the content and ends with it: that is allowed.
    """
    anchors = {value: pointer for pointer, node in _subschemas(root)
               for key in ("$anchor", "$dynamicAnchor")
               if isinstance(value := node.get(key), str)}
    nodes = dict(_subschemas(root))
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in nodes:
        if start in state:
            continue
        stack = [(start, iter(_in_place(nodes[start], start, anchors)))]
        state[start] = 1
        while stack:
            pointer, successors = stack[-1]
            step = next(successors, None)
            if step is None:
                state[pointer] = 2
                stack.pop()
                continue
            target, via = step
            if target not in nodes:
                continue
            if state.get(target) == 1:
                loop = " → ".join(["#" + p for p, _ in stack[[p for p, _ in stack]
                                                             .index(target):]] + ["#" + target])
                return [Problem(f"turn_schema refers to itself without descending into the "
                                f"content ({loop}): no value could ever be checked", path=path
                                + _pointer_path(via),
                                hint="make the reference reach a part of the content (e.g. "
                                     "under properties or items), or remove it")]
            if target not in state:
                state[target] = 1
                stack.append((target, iter(_in_place(nodes[target], target, anchors))))
    return []


def _subschemas(node: Any, pointer: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(JSON pointer, object)`` for every object in the schema (iteratively)."""
    stack = [(node, pointer)]
    while stack:
        current, where = stack.pop()
        if isinstance(current, dict):
            yield where, current
            stack.extend((value, f"{where}/{_escape(str(key))}") for key, value in current.items())
        elif isinstance(current, list):
            stack.extend((value, f"{where}/{index}") for index, value in enumerate(current))


def _in_place(node: dict[str, Any], pointer: str, anchors: dict[str, str]
              ) -> Iterator[tuple[str, str]]:
    """Yield ``(target pointer, pointer of the keyword)`` for the in-place subschemas."""
    for key, value in node.items():
        here = f"{pointer}/{_escape(key)}"
        if key in ("$ref", "$dynamicRef") and isinstance(value, str) and value.startswith("#"):
            fragment = value[1:]
            if fragment.startswith("/") or not fragment:
                yield fragment, here
            elif fragment in anchors:
                yield anchors[fragment], here
        elif key in _IN_PLACE and isinstance(value, dict):
            yield here, here
        elif key in _IN_PLACE_LISTS and isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, dict):
                    yield f"{here}/{index}", here
        elif key in _IN_PLACE_MAPS and isinstance(value, dict):
            for name, item in value.items():
                if isinstance(item, dict):
                    yield f"{here}/{_escape(name)}", here


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _pointer_path(pointer: str) -> str:
    """A JSON pointer as a field path suffix: ``/$defs/a/$ref`` → ``."$defs".a."$ref"``."""
    out = ""
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        out += f"[{part}]" if part.isdigit() else f".{_key(part)}"
    return out


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False  # RE2 would print its parse errors to stderr.
    return re2.compile(pattern, options)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if validator.is_type(instance, "string") and not _regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any,
                        schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex = _regex(pattern)
        for key, value in instance.items():
            if regex.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)
